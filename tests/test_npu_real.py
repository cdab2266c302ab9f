"""Real images on the simulated board with the NPU model: ST's own relocatable images of the 2.2
samples (ST's flow, test_real_install.st_flow) run their hardware epochs through the model.
Judged by network.c, read apart from the model: each epoch's `Enable_epoch_<N>_all_units` list
says which units its hardware chains must start; the first hardware epoch network.c declares is
where the run stops without NPU_MODEL=control, naming one of that epoch's processing units.

Needs the test bed named by N6_REAL_STEDGEAI."""
import os
import re

import pytest

from test_real_install import REAL, SAMPLES, st_flow

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
