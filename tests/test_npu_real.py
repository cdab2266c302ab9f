"""Real images on the simulated board with the NPU model: ST's own relocatable images of the 2.2
samples (ST's flow, test_real_install.st_flow) run their hardware epochs through the model.
Judged by network.c, read apart from the model: each epoch's `Enable_epoch_<N>_all_units` list
says which units its hardware chains must start. Every chain and runtime library operation
computes, with or without NPU_MODEL=control (part II: the numbers are judged in
test_npu_image_real.py).

Needs the test bed named by N6_REAL_STEDGEAI."""
import functools
import os
import re
import sys

import pytest

from conftest import ROOT, scons
from network_c_inits import (RESETS, decoded_fields, decoded_streng_fields, expected_arith_fields,
                             expected_convacc_fields, expected_pool_fields, expected_streng_fields, network_c_epochs)
from test_real_install import REAL, SAMPLES, _install, repo, st_flow  # noqa: F401  (repo: a fixture)

sys.path.insert(0, os.path.join(ROOT, "bench"))
from npu_samples import installed  # noqa: E402  (ST's image with its params at their flash address)

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


@pytest.mark.parametrize("sample", [s for s in MUST_RUN if SAMPLES.get(s) == "2.2"])
def test_a_real_image_runs_to_its_end_in_control_mode_starting_the_units_network_c_enables(sample):
    model = installed(sample, "control")
    result = model.infer([bytes(b.nbytes) for b in model.inputs])
    assert len(result.epochs) == len(model.epochs)
    started = {}
    for program in model.npu.programs:
        started.setdefault(int(program.label.split()[1]), set()).update(u.name for u in program.units)
    assert started == enabled_units(sample)
    assert model.npu.cycles > 0 and model.npu.not_computed == []        # every chain and library op computed


@pytest.mark.parametrize("sample", [s for s in MUST_RUN if SAMPLES.get(s) == "2.2"])
def test_without_the_opt_in_a_real_image_runs_to_its_end_computing_everything(sample):
    model = installed(sample, "stop")
    result = model.infer([bytes(b.nbytes) for b in model.inputs])
    assert len(result.epochs) == len(model.epochs) and model.npu.not_computed == []


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


@pytest.mark.parametrize("board", ["own", "twin"])
@pytest.mark.parametrize("sample", [s for s in MUST_RUN if SAMPLES.get(s) == "2.2"])
def test_scons_profile_of_a_real_image_in_control_mode_reports_every_epoch(repo, sample, board):  # noqa: F811
    """Built and flashed with the real install (absolute flash pools, as ST's flow builds them),
    profiled with NPU_MODEL=control on the simulated board with its own firmware, or with ST's
    validation firmware on the DK twin (`twin`): every epoch network.c declares is reported, the
    hardware ones with the time of their chains (simulated) between start and end. On the twin
    ST's loader first copies the flash pool onto the image itself (nor_window.py)."""
    import json
    firmware = [f"SIM_FIRMWARE={_install()}"] if board == "twin" else []
    proc = scons(repo, "flash", "profile", f"MODEL={sample}", f"BUILD_DIR=build-npu-{board}",
                 "RELOC_ABSOLUTE_FLASH_POOLS=1", *firmware,
                 env={"STEDGEAI_CORE_DIR": _install(), "NPU_MODEL": "control"}, check=False, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    with open(os.path.join(repo, f"build-npu-{board}", sample, "profile", "profile.json")) as f:
        profile = json.load(f)
    from test_real_tables import declared_epochs, st_codes
    with open(os.path.join(REAL, "samples", sample, "network.c")) as f:
        declared = declared_epochs(f.read(), st_codes())
    assert [n for e in profile["epochs"] for n in e["epochs"]] == \
        [f"epoch_{k}" for d in declared for k in range(d[3], d[4] + 1)]
    assert profile["compiler_absent"] is None                  # c_info's extra nodes have no outputs
    hardware = {f"epoch_{n}" for n in enabled_units(sample)}
    if board == "own":
        assert all((e["npu_cycles"]["core"] > 0) == bool(set(e["epochs"]) & hardware) for e in profile["epochs"])
    else:   # ST's firmware counts NPU clocks through every core phase; ST's runtime runs hybrid epochs' DMA on the NPU
        core = {kind: [e["npu_cycles"]["core"] for e in profile["epochs"] if (e["kind"] == "SW") == kind]
                for kind in (True, False)}
        assert min(core[False]) > 10 * max(core[True] or [0])
        assert {e["name"] for e in profile["epochs"] if e["kind"] == "HW"} == hardware
    if sample == "nucleo_mnv1":     # both firmwares read the engines' stall and the interfaces' burst counters
        first = next(e for e in profile["epochs"] if e["name"] == "epoch_3")
        # network.c's epoch 3: STRENG0 reads 2 frames of 150,528 bytes, STRENG7 216, STRENG9 writes 2 x 112x112x4
        assert [(s["id"], s["role"], s["cycles"]) for s in first["stream_engines"]] == \
            [(0, "input", 301_056 // 8), (7, "input", 216 // 8), (9, "output", 100_352 // 8)]
        # simulated bursts: 4-byte runs written as one 8-byte beat each
        bus = first["bus"]
        assert [(bus[i]["read_bytes"], bus[i]["write_bytes"]) for i in ("busif0", "busif1")] == \
            [(301_056, 0), (216, 200_704)]


@pytest.mark.parametrize("sample", [s for s in MUST_RUN if SAMPLES.get(s) == "2.2"])
def test_st_firmware_on_the_twin_computes_the_outputs_our_firmware_computes(repo, sample):  # noqa: F811
    """Without the opt-in, ST's validation firmware on the DK twin runs the image to its end and
    its outputs equal, byte for byte, those of the simulated board with our firmware: the same
    NPU model under two firmwares, and ST's runtime code in the image run in place from the NOR
    (its 64-bit scalar shifts, which unicorn runs wrong, hooked on the twin too)."""
    import numpy as np
    outputs = {}
    for board, firmware in (("own", []), ("twin", [f"SIM_FIRMWARE={_install()}"])):
        proc = scons(repo, "flash", "run", f"MODEL={sample}", f"BUILD_DIR=build-out-{board}",
                     "RELOC_ABSOLUTE_FLASH_POOLS=1", *firmware,
                     env={"STEDGEAI_CORE_DIR": _install(), "NPU_MODEL": None}, check=False, timeout=1800)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        run_dir = os.path.join(repo, f"build-out-{board}", sample, "run")
        outputs[board] = {n: np.load(os.path.join(run_dir, n)) for n in sorted(os.listdir(run_dir))
                          if n.startswith("output_")}
    assert outputs["own"] and outputs["own"].keys() == outputs["twin"].keys()
    for name, own in outputs["own"].items():
        assert own.tobytes() == outputs["twin"][name].tobytes(), name


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
    declared = network_c_epochs(os.path.join(REAL, "samples", sample, "network.c"))
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
    from npu_model.streng import read_items, write_items
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
        read = lambda a, n, data=data, first=first: (bytes(data[a - first:a - first + n])
                                                     if first <= a < first + data.size else bytes(n))
        write_items(dest.addressing, read_items(source.addressing, read), read,
                    lambda a, d, memory=memory: memory.__setitem__(a, bytes(d)))
        moved = np.zeros(dest.nbytes, np.uint8)
        for address, chunk in memory.items():
            moved[address - out:address - out + len(chunk)] = np.frombuffer(chunk, np.uint8)
        expected = np.zeros(dest.nbytes, np.uint8)
        expected[layout_indices(outs[0]).ravel()] = data[layout_indices(ins[0]).ravel()]
        assert np.array_equal(moved, expected), (program.label, ins[0]["name"], outs[0]["name"])
        judged.append((epoch, ins[0]["batch"], outs[0]["batch"]))
    assert judged and any(a != b for _, a, b in judged), judged


@pytest.mark.skipif(SAMPLES.get("blazeface") != "2.2", reason="the test bed has no 2.2 blazeface sample")
def test_scons_run_of_a_real_image_in_control_mode_lists_exactly_the_outputs_not_computed(repo):  # noqa: F811  (the fixture)
    """run.json's board_log holds the simulated board's line for each output the NPU model did
    not compute, as the model lists them running the same image: none, now that every chain of
    the sample computes (no spurious line, no count in the report)."""
    import json
    from npu_model.npu import not_computed_line
    proc = scons(repo, "flash", "run", "MODEL=blazeface", "BUILD_DIR=build-npu", "RELOC_ABSOLUTE_FLASH_POOLS=1",
                 env={"STEDGEAI_CORE_DIR": _install(), "NPU_MODEL": "control"}, check=False, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    with open(os.path.join(repo, "build-npu", "blazeface", "run", "run.json")) as f:
        run = json.load(f)
    expected = [not_computed_line(e) for e in control_run("blazeface").npu.not_computed]
    assert run.get("board_log", []) == expected == []
    assert "log line(s) during the runs" not in proc.stdout
