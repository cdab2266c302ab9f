"""Real images on the simulated board with the NPU model: ST's own relocatable images of the 2.2
samples (ST's flow, test_real_install.st_flow) run their hardware epochs through the model.
Judged by network.c, read apart from the model: each epoch's `Enable_epoch_<N>_all_units` list
says which units its hardware chains must start; the first hardware epoch network.c declares is
where the run stops without NPU_MODEL=control, naming one of that epoch's processing units.

Needs the test bed named by N6_REAL_STEDGEAI."""
import functools
import os
import re

import pytest

from conftest import scons
from npu_model.registers import aton_map
from test_real_install import REAL, SAMPLES, _install, repo, st_flow  # noqa: F401  (repo: a fixture)

pytestmark = pytest.mark.skipif(not (REAL and os.path.isdir(os.path.join(REAL, "2.2"))),
                                reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")
MUST_RUN = ("blazeface", "nucleo_mnv1")


def enabled_units(sample):
    """{epoch number: {unit instance name}} of every Enable_epoch_<N>_all_units list of network.c."""
    with open(os.path.join(REAL, "samples", sample, "network.c")) as f:
        text = f.read()
    out = {}
    for epoch, body in re.findall(r"Enable_epoch_(\d+)_all_units\[\] = \{(.*?)\};", text, re.S):
        out[int(epoch)] = {f"{kind}{i}" for kind, i in re.findall(r"\{\{(\w+),(\d+)\}\}", body.replace(" ", ""))}
    return out


def installed(sample, mode):
    from n6board.firmware import InstalledModel
    build, _ = st_flow(sample, "secure")
    with open(os.path.join(build, "network_rel.bin"), "rb") as f:
        return InstalledModel(f.read(), npu_model=mode)


@pytest.mark.parametrize("sample", [s for s in MUST_RUN if SAMPLES.get(s) == "2.2"])
def test_a_real_image_runs_to_its_end_in_control_mode_starting_the_units_network_c_enables(sample):
    model = installed(sample, "control")
    result = model.infer([bytes(b.nbytes) for b in model.inputs])
    assert len(result.epochs) == len(model.epochs)
    started = {}
    for program in model.npu.programs:
        started.setdefault(int(program.label.split()[1]), set()).update(u.name for u in program.units)
    assert started == enabled_units(sample)
    assert model.npu.cycles > 0 and model.npu.not_computed
    arithmetic = {f"epoch {n}" for n, units in started.items() if any(not u.startswith("STRENG") for u in units)}
    assert {entry["epoch"] for entry in model.npu.not_computed if entry["engine"]} == arithmetic


@pytest.mark.parametrize("sample", [s for s in MUST_RUN if SAMPLES.get(s) == "2.2"])
def test_without_the_opt_in_a_real_image_stops_at_its_first_hardware_epoch_in_one_line(sample):
    from n6board.emulator import NpuStopped
    model = installed(sample, "stop")
    with pytest.raises(NpuStopped) as e:
        model.infer([bytes(b.nbytes) for b in model.inputs])
    units = enabled_units(sample)
    first = min(units)
    m = re.fullmatch(r"epoch (\d+): (\w+) is not modelled \(NPU_MODEL=control runs on with its outputs zeroed\)",
                     str(e.value))
    assert m and int(m[1]) == first, str(e.value)
    assert m[2] in units[first] and not m[2].startswith("STRENG")


@pytest.mark.skipif(SAMPLES.get("nucleo_mnv1") != "2.2", reason="the test bed has no 2.2 nucleo_mnv1 sample")
def test_npu_trace_prints_and_writes_every_epoch_program_with_c_info_names(tmp_path):
    import json
    import subprocess
    build, _ = st_flow("nucleo_mnv1", "secure")
    out = tmp_path / "trace.json"
    proc = subprocess.run([os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "n6"),
                           "npu-trace", os.path.join(build, "network_rel.bin"), "--c-info",
                           os.path.join(REAL, "samples", "nucleo_mnv1", "network_c_info.json"), "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["simulated"] is True
    assert {p["epoch"] for p in report["programs"]} == {f"epoch {n}" for n in enabled_units("nucleo_mnv1")}
    assert "Input_0_out_0 in npuRAM5" in proc.stdout and "NPU cycles (simulated)" in proc.stdout
    assert proc.stdout.count("route      ") == sum(len(p["routes"]) for p in report["programs"])


@pytest.mark.parametrize("sample", [s for s in MUST_RUN if SAMPLES.get(s) == "2.2"])
def test_scons_profile_of_a_real_image_in_control_mode_reports_every_epoch(repo, sample):  # noqa: F811  (the fixture)
    """Built and flashed with the real install, profiled on the simulated board with
    NPU_MODEL=control: every epoch of c_info.json is reported, the hardware ones with the time
    of their chains (simulated) between start and end."""
    import json
    proc = scons(repo, "flash", "profile", f"MODEL={sample}", "BUILD_DIR=build-npu", "RELOC_ABSOLUTE_FLASH_POOLS=1",
                 env={"STEDGEAI_CORE_DIR": _install(), "NPU_MODEL": "control"}, check=False, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    with open(os.path.join(repo, "build-npu", sample, "profile", "profile.json")) as f:
        profile = json.load(f)
    from test_real_tables import declared_epochs, st_codes
    with open(os.path.join(REAL, "samples", sample, "network.c")) as f:
        declared = declared_epochs(f.read(), st_codes())
    assert [n for e in profile["epochs"] for n in e["epochs"]] == \
        [f"epoch_{k}" for d in declared for k in range(d[3], d[4] + 1)]
    hardware = {f"epoch_{n}" for n in enabled_units(sample)}
    assert all((e["npu_cycles"]["core"] > 0) == bool(set(e["epochs"]) & hardware) for e in profile["epochs"])


# -- network.c's init structs, read apart from the decoder --------------------------------------

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


def network_c_epochs(sample):
    """{epoch: {"streng": {i: {field: value}}, "routes": {(dest, port, context, source, frames)}}}
    of every start function of network.c: the LL_Streng_TensorInit structs by engine, and the
    switch entries (`ATONN_DSTPORT`/`ATONN_SRCPORT`, contexts 0 and 1)."""
    with open(os.path.join(REAL, "samples", sample, "network.c")) as f:
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
        routes = set()
        for unit, i, port, contexts in _SWITCH.findall(body):
            for ctx, src, si, _, frames in _CONTEXT.findall(contexts):
                routes.add((f"{unit}{i}", int(port), int(ctx), f"{src}{si}", int(frames)))
        out[int(epoch)] = {"streng": streng, "convacc": convacc, "arith": arith, "pool": pool, "routes": routes}
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


@functools.lru_cache(maxsize=None)
def control_run(sample):
    model = installed(sample, "control")
    model.infer([bytes(b.nbytes) for b in model.inputs])
    return model


@pytest.mark.parametrize("sample", [s for s, rel in SAMPLES.items() if rel == "2.2" and s in MUST_RUN])
def test_decoded_programs_reproduce_every_unit_init_of_network_c_field_by_field(sample):
    """Every stream-engine, convolution, arithmetic and pooling init and every switch entry of
    every epoch of network.c, field by field, against the epoch programs decoded from the register
    writes of ST's image. Addresses in the flash (relocated in the image) are compared as offsets
    from the image's own base; the arithmetic units' coefficient memory is not compared."""
    model = control_run(sample)
    declared = network_c_epochs(sample)
    programs = {}
    for p in model.npu.programs:
        epoch = programs.setdefault(int(p.label.split()[1]), {"units": {}, "routes": set()})
        epoch["units"].update({u.name: u for u in p.units})
        epoch["routes"].update((r.dest, r.port, r.context, r.source, r.frames) for r in p.routes)
    compared, moved = 0, {}
    for epoch, want in declared.items():
        if not want["streng"]:
            continue
        got = programs[epoch]
        assert got["routes"] == want["routes"], epoch
        for i, init in want["streng"].items():
            expected, decoded = expected_streng_fields(init), decoded_streng_fields(got["units"][f"STRENG{i}"])
            if init.get("addr_base", 0) >= 0x7000_0000:          # the flash: each pool moved whole with the image
                shift = moved.setdefault(init["addr_base"], decoded[("ADDR", "REG")] - expected[("ADDR", "REG")])
                for key in (("ADDR", "REG"), ("LIMITADDR", "REG")):
                    decoded[key] -= shift
            assert decoded == expected, (epoch, i)
            compared += 1
        for i, init in want["convacc"].items():
            expected = expected_convacc_fields(init)
            assert decoded_fields(got["units"][f"CONVACC{i}"], expected, RESETS["CONVACC"]) == expected, (epoch, i)
            compared += 1
        for i, init in want["arith"].items():
            expected = expected_arith_fields(init)
            assert decoded_fields(got["units"][f"ARITH{i}"], expected, RESETS["ARITH"]) == expected, (epoch, i)
            compared += 1
        for i, init in want["pool"].items():
            expected = expected_pool_fields(init)
            assert decoded_fields(got["units"][f"POOL{i}"], expected, RESETS["POOL"]) == expected, (epoch, i)
            compared += 1
    assert compared == sum(len(e[k]) for e in declared.values() for k in ("streng", "convacc", "arith", "pool")) > 0



# -- data movement: DMA-only chains against c_info.json's description of their buffers ----------

def c_info_buffers(sample):
    """[(address, c_info buffer)] of every placed buffer of the sample's c_info.json."""
    import json
    with open(os.path.join(REAL, "samples", sample, "network_c_info.json")) as f:
        data = json.load(f)
    pools = {p["id"]: int(p["address"]) for p in data["memory_pools"]}
    return [(pools[b["mpool_id"]] + int(b["offset_start"]), b) for b in data["buffers"] if b.get("mpool_id") in pools]


def layout_indices(buffer):
    """Memory index of each element (c, h, w) of a 4-D [1, C, H, W] buffer stored in channel
    groups of `batch`: group, then row, column, then the channel within the group (batch 1 is
    C-H-W, batch C is H-W-C), as c_info.json's `batch` says the buffer is laid out."""
    import numpy as np
    _, c, h, w = buffer["shape"]
    b = buffer["batch"]
    cc, hh, ww = np.meshgrid(np.arange(c), np.arange(h), np.arange(w), indexing="ij")
    return ((cc // b) * h * w + hh * w + ww) * b + cc % b


@pytest.mark.skipif(SAMPLES.get("blazeface") != "2.2", reason="the test bed has no 2.2 blazeface sample")
def test_dma_only_chains_relayout_random_tensors_as_c_info_describes_their_buffers():
    """Each DMA-only chain of blazeface (stream engine to stream engine) whose source and
    destination are whole 4-D buffers of its epoch in c_info.json: random source bytes, moved by
    the model, land where the destination's layout (its channel batch) puts each element."""
    import numpy as np
    from npu_model.npu import Npu
    model = control_run("blazeface")
    buffers = c_info_buffers("blazeface")
    rng = np.random.default_rng(3)
    judged = []
    for program in model.npu.programs:
        if any(u.kind != "STRENG" for u in program.units):
            continue
        epoch = int(program.label.split()[1])
        whole = lambda f, epoch=epoch: [b for at, b in buffers if at == f.span[0] and int(b["size_bytes"]) == f.nbytes
                           and b["epochs"]["start"] <= epoch <= b["epochs"]["end"] and len(b["shape"]) == 4]
        source = next(f for f in program.footprints if f.direction == "read")
        dest = next(f for f in program.footprints if f.direction == "write")
        ins, outs = whole(source), whole(dest)
        if len(ins) != 1 or len(outs) != 1 or ins[0]["shape"] != outs[0]["shape"]:
            continue
        memory = {}
        data = rng.integers(0, 256, source.nbytes, dtype=np.uint8)
        (first, _), (out, _) = source.span, dest.span
        npu = Npu(lambda a, d, memory=memory: memory.__setitem__(a, bytes(d)), mode="stop")
        npu.read_memory = lambda a, n, data=data, first=first: bytes(data[a - first:a - first + n])
        npu._move(source, dest)
        moved = np.zeros(dest.nbytes, np.uint8)
        for address, chunk in memory.items():
            moved[address - out:address - out + len(chunk)] = np.frombuffer(chunk, np.uint8)
        expected = np.zeros(dest.nbytes, np.uint8)
        expected[layout_indices(outs[0]).ravel()] = data[layout_indices(ins[0]).ravel()]
        assert np.array_equal(moved, expected), (program.label, ins[0]["name"], outs[0]["name"])
        judged.append((epoch, ins[0]["batch"], outs[0]["batch"]))
    assert judged and any(a != b for _, a, b in judged), judged
