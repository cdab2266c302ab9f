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
    assert {entry["epoch"] for entry in model.npu.not_computed} >= {f"epoch {n}" for n in started}


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
def test_scons_profile_of_a_real_image_in_control_mode_reports_every_epoch(repo, sample):
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
_FIELD = re.compile(r"\.(\w+) = (\{\(unsigned char \*\)(?:ATON_LIB_PHYSICAL_TO_VIRTUAL_ADDR)?\((0x[0-9a-fA-F]+)UL\)|\(\w+\)\(?-?\w+\)?|-?\w+)")
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
        routes = set()
        for unit, i, port, contexts in _SWITCH.findall(body):
            for ctx, src, si, _, frames in _CONTEXT.findall(contexts):
                routes.add((f"{unit}{i}", int(port), int(ctx), f"{src}{si}", int(frames)))
        out[int(epoch)] = {"streng": streng, "routes": routes}
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
def test_decoded_programs_reproduce_network_c_stream_engine_and_switch_inits_field_by_field(sample):
    """Every LL_Streng_TensorInit and every switch entry of every epoch of network.c, field by
    field, against the epoch programs decoded from the register writes of ST's image. Addresses in
    the flash (relocated in the image) are compared as offsets from the image's own base."""
    model = control_run(sample)
    declared = network_c_epochs(sample)
    programs = {}
    for p in model.npu.programs:
        epoch = programs.setdefault(int(p.label.split()[1]), {"units": {}, "routes": set()})
        epoch["units"].update({u.name: u for u in p.units})
        epoch["routes"].update((r.dest, r.port, r.context, r.source, r.frames) for r in p.routes)
    compared = 0
    for epoch, want in declared.items():
        if not want["streng"]:
            continue
        got = programs[epoch]
        assert got["routes"] == want["routes"], epoch
        for i, init in want["streng"].items():
            expected, decoded = expected_streng_fields(init), decoded_streng_fields(got["units"][f"STRENG{i}"])
            if init.get("addr_base", 0) >= 0x7000_0000:          # the flash: relocated with the image
                relocated = decoded[("ADDR", "REG")] - init.get("offset_start", 0)
                for key in (("ADDR", "REG"), ("LIMITADDR", "REG")):
                    expected[key] -= init["addr_base"]
                    decoded[key] -= relocated
            assert decoded == expected, (epoch, i)
            compared += 1
    assert compared == sum(len(e["streng"]) for e in declared.values()) > 0
