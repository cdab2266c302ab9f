"""ST's network.c read apart from the NPU model's decoder: its epochs' LL_ATON init structs and
switch entries, and the register fields ll_aton.c's init functions write for them (facts of
ll_aton.c, written here independently). The judge of tests/test_npu_real.py and the input of the
NPU benches (bench/npu_samples.py); no pytest, no test bed path."""
import re

from npu_model.registers import aton_map

_FUNCTION = re.compile(r"static void LL_ATON_Start_EpochBlock_(\d+)\(const void \*epoch_block\)\s*\{(.*?)\n\}", re.S)
_STRUCT = re.compile(r"static const (LL_\w+TypeDef) (\w+) = \{(.*?)\n\s*\};", re.S)
_FIELD = re.compile(r"\.(\w+) = (\{\(unsigned char \*\)(?:ATON_LIB_PHYSICAL_TO_VIRTUAL_ADDR)?\((0x[0-9a-fA-F]+)UL\)"
                    r"|\(\w+\)\(?-?\w+\)?|-?\w+)")
_SWITCH = re.compile(r"LL_Switch_Init_Dest\(\) = ATONN_DSTPORT\(STRSWITCH, 0, (\w+), (\d+), (\d+)\), (.*?)\}")
_CONTEXT = re.compile(r"LL_Switch_Init_Source\((\d)\) = ATONN_SRCPORT\(STRSWITCH, 0, (\w+), (\d+), (\d+)\), "
                      r"LL_Switch_Init_Context\(\1\) = 1, LL_Switch_Init_Frames\(\1\) = (\d+)")


def _number(text):
    text = re.sub(r"^\(\w+\)", "", text).strip("()")
    return int(text, 0) if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", text) else text


def network_c_epochs(network_c):
    """{epoch: {"streng": {i: {field: value}}, "routes": {(dest, port, context, source, frames)},
    "switch": {(dest, port): (frames of context 0, of context 1)}}} of every start function of a
    network.c: the LL_Streng_TensorInit structs by engine, and the switch entries
    (`ATONN_DSTPORT`/`ATONN_SRCPORT`, contexts 0 and 1, a context's frames even when it is off)."""
    with open(network_c) as f:
        text = f.read()
    out = {}
    for epoch, body in _FUNCTION.findall(text):
        structs = {}
        for kind, name, fields in _STRUCT.findall(body):
            values = {}
            for field, value, address in _FIELD.findall(fields):
                values[field] = int(address, 16) if address else _number(value)
            structs[name] = (kind, values)
        streng = {int(i): structs[name][1] for i, name in
                  re.findall(r"LL_Streng_TensorInit\((\d+), &(\w+), 1\)", body)}
        convacc = {int(i): structs[name][1] for i, name in re.findall(r"LL_Convacc_Init\((\d+), &(\w+)\)", body)}
        arith = {int(i): structs[name][1] for i, name in re.findall(r"LL_Arithacc_Init\((\d+), &(\w+)\)", body)}
        pool = {int(i): structs[name][1] for i, name in re.findall(r"LL_Poolacc_Init\((\d+), &(\w+)\)", body)}
        routes, switch = set(), {}
        for unit, i, port, contexts in _SWITCH.findall(body):
            for ctx, src, si, _, frames in _CONTEXT.findall(contexts):
                routes.add((f"{unit}{i}", int(port), int(ctx), f"{src}{si}", int(frames)))
            counts = dict(re.findall(r"LL_Switch_Init_Frames\((\d)\) = (\d+)", contexts))
            switch[f"{unit}{i}", int(port)] = (int(counts.get("0", 0)), int(counts.get("1", 0)))
        out[int(epoch)] = {"streng": streng, "convacc": convacc, "arith": arith, "pool": pool, "routes": routes,
                           "switch": switch}
    return out


def expected_streng_fields(c):
    """The register fields ll_aton.c's LL_Streng_TensorInit writes for init struct `c` (facts of
    ll_aton.h/ll_aton.c: which struct field becomes which register field)."""
    g = lambda k: c.get(k, 0)
    base = g("addr_base")
    nbits = min(g("nbits_in"), g("nbits_out"))
    gap = abs(g("nbits_in") - g("nbits_out"))
    widens = g("nbits_in") < g("nbits_out") if g("dir") else g("nbits_in") > g("nbits_out")
    out = {("CTRL", "DIR"): g("dir"), ("CTRL", "RAW"): g("raw"), ("CTRL", "NOBLK"): g("noblk"),
           ("CTRL", "NOINC"): int(g("noinc") == 1), ("CTRL", "SINGLE"): int(g("frame_tot_cnt") == 1),
           ("CTRL", "CONT"): int(g("continuous") == 1), ("CTRL", "LSBMODE"): int(g("align_right") == 1),
           ("CTRL", "SIGNEXT"): int(g("align_right") == 1 and g("nbits_unsigned") == 0),
           ("CTRL", "RAW_OUT"): g("raw_out"), ("CTRL", "bits"): nbits,
           ("STRD", "FGAP"): gap if widens and g("mem_lsb") else 0,
           ("STRD", "BGAP"): gap if widens and not g("mem_lsb") else 0,
           ("ADDR", "REG"): base + g("offset_start"), ("FOFFSET", "REG"): g("frame_offset"),
           ("FRPTOFF", "REG"): g("loop_offset"), ("FRAME_RPT", "REG"): g("frame_loop_cnt"),
           ("LIMIT", "CNT"): g("frame_tot_cnt")}
    if g("raw"):
        count = g("frame_count") or (g("offset_end") - g("offset_start")) * 8 // (g("nbits_out") if g("dir")
                                                                                  else g("nbits_in"))
        out[("FSIZE", "WIDTH")], out[("FSIZE", "HEIGHT")] = count & 0xFFFF, count >> 16
        out[("DEPTH", "SIZE")] = out[("DEPTH", "OFFSET")] = out[("STRD", "LOFF")] = 0     # not written: reset
    else:
        out[("FSIZE", "WIDTH")], out[("FSIZE", "HEIGHT")] = g("fwidth"), g("fheight")
        out[("DEPTH", "SIZE")], out[("DEPTH", "OFFSET")] = g("batch_depth"), g("batch_offset") & 0xFFFF
        out[("STRD", "LOFF")] = (g("line_offset") or g("fwidth") * g("batch_offset")) & 0xFFFF
    if g("offset_limit"):
        out[("LIMITADDR", "REG")] = base + g("offset_limit") - 1
    return out


RESETS = {u.name: {r.name: r.split(r.reset) for r in u.registers.values()} for u in aton_map().units.values()}
AFILT_MODES = {"AFILT_MODE_NONE": 0, "AFILT_MODE_FRAMEZERO": 3}       # ll_aton.h's enum values used


def expected_convacc_fields(c):
    """The register fields LL_Convacc_Init writes for init struct `c` (ll_aton.c's facts: padding
    up to 2 in the unit, the rest as a zero frame; crops scaled by the batch depth)."""
    g = lambda k: c.get(k, 0)
    afilt = AFILT_MODES.get(g("afilt_mode"), g("afilt_mode"))
    depth, kw, kh = g("batchDepth"), g("kernelWidth"), g("kernelHeight")
    pads = {}
    for side, kernel in (("top", kh), ("bot", kh), ("left", kw), ("right", kw)):
        p = min(g(f"{side}_padding"), kernel - 1, 2)
        pads[side] = 0 if g("deepmode") or g("dss2mode") or g("zfbias") else p
    zeros = {side: g(f"{side}_padding") - pads[side] for side in pads}
    out = {("CTRL", "NOSUM"): int(g("accumulate") == 0), ("CTRL", "NO1SUM"): int(g("accumulate_first") == 0),
           ("CTRL", "GEN1SUM"): int(g("accumulate_gen_first") != 0), ("CTRL", "AFILTMODE"): afilt,
           ("CTRL", "SIMD"): g("simd"), ("CTRL", "KT1"): int(g("kt1_mode") != 0), ("CTRL", "KSETEN"): g("kseten"),
           ("CTRL", "FUNSIGNED"): g("f_unsigned"), ("CTRL", "KUNSIGNED"): g("k_unsigned"),
           ("CTRL", "DEEPMODE"): int(g("deepmode") != 0), ("CTRL", "DSS2MODE"): int(g("dss2mode") != 0),
           ("KFILT", "TOT"): g("kfilt_tot") if g("kfilt_tot") > 0 else 1,
           ("KFILT", "FIRST"): g("kfilt_first") if g("kfilt_tot") > 0 else 0,
           ("KFILT", "LAST"): g("kfilt_last") if g("kfilt_tot") > 0 else 0,
           ("AFILT", "TOT"): g("afilt_tot") if afilt else 1, ("AFILT", "FIRST"): g("afilt_first") if afilt else 0,
           ("AFILT", "LAST"): g("afilt_last") if afilt else 0,
           ("DFORMAT", "FROUND"): g("rounding_f"), ("DFORMAT", "FSAT"): g("saturation_f"),
           ("DFORMAT", "FRNDMODE"): g("round_mode_f"), ("DFORMAT", "FBYTES"): g("inbytes_f"),
           ("DFORMAT", "FSHIFT"): (g("shift_f") + 16) & 0x3F, ("DFORMAT", "ROUND"): g("rounding_o"),
           ("DFORMAT", "SAT"): g("saturation_o"), ("DFORMAT", "ORNDMODE"): g("relu_mode_o") << 1 | g("round_mode_o"),
           ("DFORMAT", "OBYTES"): g("outbytes_o"), ("DFORMAT", "OUTSHIFT"): g("shift_o"),
           ("DFORMAT", "RAW"): g("raw_o"), ("DFORMAT", "INSHIFT"): g("shift_a"),
           ("FFORMAT", "WIDTH"): g("fWidth") * depth & 0xFFFF, ("FFORMAT", "HEIGHT"): g("fHeight"),
           ("KFORMAT", "WIDTH"): kw, ("KFORMAT", "HEIGHT"): kh, ("KFORMAT", "BTCDEPTH"): depth & 0xFF,
           ("KFORMAT", "NR"): g("nKernels"),
           ("ZFRAME", "TOP"): zeros["top"], ("ZFRAME", "BOTTOM"): zeros["bot"],
           ("ZFRAME", "LEFT"): zeros["left"] * depth & 0xFF, ("ZFRAME", "RIGHT"): zeros["right"] * depth & 0xFF,
           ("SAMPLE", "TPAD"): pads["top"], ("SAMPLE", "BPAD"): pads["bot"], ("SAMPLE", "LPAD"): pads["left"],
           ("SAMPLE", "RPAD"): pads["right"], ("SAMPLE", "HSTRD"): g("hstride"), ("SAMPLE", "VSTRD"): g("vstride"),
           ("FHCROP", "LEFT"): g("left_crop") * depth if g("left_crop") > 0 else 0,
           ("FHCROP", "RIGHT"): g("right_crop") * depth + depth - 1 if g("right_crop") > 0 else 0xFFFF,
           ("FVCROP", "TOP"): g("top_crop") if g("top_crop") > 0 else 0,
           ("FVCROP", "BOTTOM"): g("bot_crop") if g("bot_crop") > 0 else 0xFFFF,
           ("FSUB", "FSUB"): g("fsub") & 0xFFFFFF, ("ZFBIAS", "ZFBIAS"): g("zfbias") & 0xFFFF}
    return out


ARITH_OPS = {"ARITH_AFFINE": 0x0, "ARITH_MIN": 0x1, "ARITH_MAX": 0x2, "ARITH_MUL": 0x7}   # ATON.h's ARITHOP values


def expected_arith_fields(c):
    """The register fields LL_Arithacc_Init writes for init struct `c` (ll_aton.c's facts; the
    coefficient memory is left out: it holds the vectors of the params)."""
    g = lambda k: c.get(k, 0)
    vector = g("scalar") == 0
    chan = vector and g("bcast") == "ARITH_BCAST_CHAN"
    m9 = lambda v: v & 0x1FF
    out = {("CTRL", "CNT1"): int(vector), ("CTRL", "CNT2"): int(chan), ("CTRL", "CNT3"): int(chan),
           ("CTRL", "ROUND"): int(g("rounding_o") != 0),
           ("CTRL", "ORNDMODE"): g("relu_mode_o") << 1 | g("round_mode_o"),
           ("CTRL", "OBYTES"): g("outbytes_o"), ("CTRL", "SAT"): int(g("saturation_o") != 0),
           ("CTRL", "COEFFA"): int(vector), ("CTRL", "COEFFB"): int(vector), ("CTRL", "COEFFC"): int(vector),
           ("CTRL", "DUALIN"): int(g("dualinput") != 0), ("CTRL", "COMBINEBC"): int(g("combinebc") != 0),
           ("CTRL", "CLIPOUT"): int(g("clipout") != 0), ("CTRL", "OP"): ARITH_OPS[g("operation")],
           ("SHIFT", "AX"): g("Ax_shift"), ("SHIFT", "BY"): g("By_shift"), ("SHIFT", "C"): g("C_shift"),
           ("SHIFT", "RES"): g("shift_o"), ("COEFFAC", "A"): g("A_scalar") & 0xFFFF,
           ("COEFFAC", "C"): g("C_scalar") & 0xFFFF, ("COEFFB", "B"): g("B_scalar") & 0xFFFF,
           ("COEFFADDR", "ADDR"): 0}
    for axis in "XY":
        k = axis.lower()
        out.update({("INSHIFTER", f"FBYTES{axis}"): g(f"inbytes_{k}"),
                    ("INSHIFTER", f"FSHIFT{axis}"): (g(f"shift_{k}") + 16) & 0x3F,
                    ("INSHIFTER", f"FROUND{axis}"): int(g(f"rounding_{k}") != 0),
                    ("INSHIFTER", f"FSAT{axis}"): int(g(f"saturation_{k}") != 0),
                    ("INSHIFTER", f"FRNDMODE{axis}"): g(f"round_mode_{k}"),
                    ("INSHIFTER", f"FOBYTES{axis}"): g(f"outbytes_{k}")})
    if g("clipout"):
        out[("CLIPRANGE", "CLIPMAX")], out[("CLIPRANGE", "CLIPMIN")] = g("clipmax") & 0xFFFF, g("clipmin") & 0xFFFF
    w, h, d, ch = g("fWidth"), g("fHeight"), g("batchDepth"), g("fChannels")
    if chan:
        out.update({("INCCNT", "INCVAL"): 0, ("RSTCNT1", "RSTCNT"): d - 1, ("RSTCNT2", "RSTCNT"): w * h * d - 1,
                    ("RSTCNT3", "RSTCNT"): w * h * ch - 1, ("INCOFFSET", "VAL"): 1,
                    ("ADDROFFSET", "OFFSET1"): m9(-(d - 1)), ("ADDROFFSET", "OFFSET2"): 1,
                    ("ADDROFFSET", "OFFSET3"): m9(-(ch - 1))})
    elif vector and g("bcast") == "ARITH_BCAST_HEIGHT":
        out.update({("INCCNT", "INCVAL"): w * d - 1, ("RSTCNT1", "RSTCNT"): w * h * d - 1, ("INCOFFSET", "VAL"): 1,
                    ("ADDROFFSET", "OFFSET1"): m9(-(h - 1))})
    elif vector and g("bcast") == "ARITH_BCAST_SCALAR":
        out.update({("INCCNT", "INCVAL"): 0, ("INCOFFSET", "VAL"): 0})
    return out


POOL_TYPES = {"POOL_MAX": 0x0, "POOL_MIN": 0x1, "POOL_AVG": 0x2, "POOL_GMAX": 0x8, "POOL_GMIN": 0x9,
              "POOL_GAVG": 0xA}                                       # ATON.h's POOLTYPE values


def expected_pool_fields(c):
    """The register fields LL_Poolacc_Init writes for init struct `c` (ll_aton.c's facts)."""
    g = lambda k: c.get(k, 0)
    b = g("batchSize")
    return {("CTRL", "TYPE"): POOL_TYPES[g("operation")], ("CTRL", "ROUND"): int(g("rounding_o") != 0),
            ("CTRL", "SAT"): int(g("saturation_o") != 0), ("CTRL", "OUTSHIFT"): g("shift_o"),
            ("CTRL", "FBYTES"): g("inbytes_f"), ("CTRL", "FSHIFT"): (g("shift_f") + 16) & 0x3F,
            ("CTRL", "FROUND"): int(g("rounding_f") != 0), ("CTRL", "FSAT"): int(g("saturation_f") != 0),
            ("CTRL", "DUALLINE"): g("dualLine"), ("CTRL", "CROPEN"): 1,
            ("RNDCTRL", "FOBYTES"): g("outbytes_f"), ("RNDCTRL", "FRNDMODE"): g("round_mode_f"),
            ("RNDCTRL", "OBYTES"): g("outbytes_o"), ("RNDCTRL", "ORNDMODE"): g("relu_mode_o") << 1 | g("round_mode_o"),
            ("PDIMS", "WINX"): g("poolWinX"), ("PDIMS", "WINY"): g("poolWinY"), ("PDIMS", "STRDX"): g("strideX"),
            ("PDIMS", "STRDY"): g("strideY"), ("PDIMS", "TPAD"): g("topPad"), ("PDIMS", "BPAD"): g("bottomPad"),
            ("PDIMS", "LPAD"): g("leftPad"), ("PDIMS", "RPAD"): g("rightPad"), ("PDIMS", "BSIZE"): b,
            ("FDIMS", "FEATX"): g("inputX") * b, ("FDIMS", "FEATY"): g("inputY"),
            ("OUTDIMS", "FEATX"): g("outputX"), ("OUTDIMS", "FEATY"): g("outputY"), ("MULVAL", "MULVAL"): g("mulval"),
            ("XCROP", "LCROP"): g("leftCrop") * b if g("leftCrop") > 0 else 0,
            ("XCROP", "RCROP"): max(g("rightCrop") * b + b - 1, 0),
            ("YCROP", "TCROP"): g("topCrop") if g("topCrop") > 0 else 0,
            ("YCROP", "BCROP"): g("bottomCrop") if g("bottomCrop") > 0 else 0}


def decoded_fields(unit, keys, resets):
    """{(register, field): value} of a decoded unit; registers left at reset are not listed in a
    program: their fields come from `resets` (register → {field: reset value})."""
    return {(reg, name): unit.registers.get(reg, resets[reg])[name] for reg, name in keys}


def decoded_streng_fields(unit):
    regs = unit.registers
    field = lambda reg, name: regs[reg][name] if reg in regs else 0
    got = {}
    for reg, name in (("CTRL", "DIR"), ("CTRL", "RAW"), ("CTRL", "NOBLK"), ("CTRL", "NOINC"), ("CTRL", "SINGLE"),
                      ("CTRL", "CONT"), ("CTRL", "LSBMODE"), ("CTRL", "SIGNEXT"), ("CTRL", "RAW_OUT"),
                      ("STRD", "FGAP"), ("STRD", "BGAP"), ("ADDR", "REG"), ("FOFFSET", "REG"), ("FRPTOFF", "REG"),
                      ("FRAME_RPT", "REG"), ("LIMIT", "CNT"), ("FSIZE", "WIDTH"), ("FSIZE", "HEIGHT"),
                      ("DEPTH", "SIZE"), ("DEPTH", "OFFSET"), ("STRD", "LOFF"), ("LIMITADDR", "REG")):
        got[(reg, name)] = field(reg, name)
    got[("CTRL", "bits")] = field("CTRL", "SIZE0") + field("CTRL", "SIZE1") + field("CTRL", "SIZE2")
    return got
