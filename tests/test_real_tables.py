"""The simulated board reads real images: every real 2.2 sample of the test bed, built by ST's own
flow, installed on the simulated board; its epoch table and its input/output buffer tables, as
the board reads them from the emulated memory, equal what the sample's network.c declares, field
by field. The names of flags and codes are resolved with ST's header of the test bed, not ours."""
import os
import re

import pytest

from conftest import scons
from test_real_install import REAL, SAMPLES, _install, repo, st_flow  # noqa: F401  (repo: a fixture)

pytestmark = pytest.mark.skipif(not (REAL and os.path.isdir(os.path.join(REAL, "2.2"))),
                                reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")

ST_HEADER = os.path.join(REAL, "2.2", "Middlewares", "ST", "AI", "Npu", "ll_aton", "ll_aton_NN_interface.h")


def st_codes():
    """{C name: value} of ST's flags and codes, read from ST's header."""
    text = open(ST_HEADER).read()
    codes = {m[0]: 1 << int(m[1]) for m in re.findall(r"(EpochBlock_Flags_\w+) = \(0x1 << (\d+)\)", text)}
    codes.update({m[0]: int(m[1]) for m in re.findall(r"\b((?:DataType|CHPos)_\w+) = (\d+)", text)})
    return codes


def function_body(text, name):
    start = text.index("{", re.search(rf"\b{name}\(void\)", text).end())
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    raise AssertionError(f"{name}: no end")


def entries(body):
    """The designated initialisers of the table, as {field: text}; parameter buffers (inside
    `#if LL_ATON_DBG_BUFFER_INFO_EXCLUDED == 0`, which the model build sets to 1) left out."""
    body = re.sub(r"#if LL_ATON_DBG_BUFFER_INFO_EXCLUDED == 0.*?#endif[^\n]*", "", body, flags=re.S)
    table = body[body.index("[] = {") + 6:]
    return [dict(re.findall(r"\.(\w+) = ([^\n]*?),?\s*(?://[^\n]*)?\n", e + "\n"))
            for e in re.findall(r"\{\s*\n(.*?)\n\s*\}", table, flags=re.S)]


def arrays(body):
    return {m[1]: [float(v) if m[0] == "float" else int(v) for v in m[2].split(",")]
            for m in re.findall(r"static const (uint32_t|float|int16_t) (\w+)\[\] = \{ ([^}]*) \};", body)}


def value(text, codes):
    text = re.sub(r"/\*.*?\*/", "", text).strip()
    if text in ("NULL", ""):
        return 0
    total = 0
    for part in text.split("|"):
        part = part.strip()
        total |= codes[part] if part in codes else int(part, 0)
    return total


def declared_epochs(text, codes):
    out = []
    for e in entries(function_body(text, "LL_ATON_EpochBlockItems_Default")):
        flags = value(e["flags"], codes)
        if flags & codes["EpochBlock_Flags_last_eb"]:
            break
        out.append((e.get("start_epoch_block", "NULL") != "NULL", e.get("end_epoch_block", "NULL") != "NULL",
                    flags, int(e["epoch_num"]), int(e["last_epoch_num"]), int(e["wait_mask"], 0)))
    return out


def declared_buffers(text, kind, codes):
    body = function_body(text, f"LL_ATON_{kind}_Buffers_Info_Default")
    arr, out = arrays(body), []
    for e in entries(body):
        if e["name"] == "NULL":
            break
        per_channel = int(e.get("per_channel", "0"))
        out.append({"name": e["name"].strip('"'), "offset_start": int(e["offset_start"]),
                    "offset_end": int(e["offset_end"]), "offset_limit": int(e["offset_limit"]),
                    "epoch": int(e["epoch"]), "batch": int(e["batch"]), "mem_shape": tuple(arr[e["mem_shape"]]),
                    "chpos": value(e["chpos"], codes), "type": value(e["type"], codes), "Qm": int(e["Qm"]),
                    "Qn": int(e["Qn"]), "Qunsigned": int(e["Qunsigned"]), "nbits": int(e["nbits"]),
                    "per_channel": per_channel, "shape": tuple(arr[e["shape"]]),
                    "scale": tuple(arr[e["scale"]]) if e.get("scale", "NULL") != "NULL" else (),
                    "offset": tuple(arr[e["offset"]]) if e.get("offset", "NULL") != "NULL" else ()})
    return out


def board_buffers(model, entry):
    from n6.nn_interface import read_buffer_infos
    infos = read_buffer_infos(model.cpu.read, model.cpu.c_string, model.cpu.call(model.entry(entry), r9=model.r9))
    return [{"name": b.name, "offset_start": b.offset_start, "offset_end": b.offset_end,
             "offset_limit": b.offset_limit, "epoch": b.epoch, "batch": b.batch, "mem_shape": b.mem_shape,
             "chpos": int(b.chpos), "type": int(b.type), "Qm": b.Qm, "Qn": b.Qn, "Qunsigned": b.Qunsigned,
             "nbits": b.nbits, "per_channel": b.per_channel, "shape": b.shape, "scale": b.scale,
             "offset": b.offset} for b in infos]


@pytest.mark.parametrize("sample", [s for s, rel in SAMPLES.items() if rel == "2.2"])
def test_board_reads_the_tables_network_c_declares(sample):
    from n6board.firmware import InstalledModel
    build, _ = st_flow(sample, "secure")
    with open(os.path.join(build, "network_rel.bin"), "rb") as f:
        model = InstalledModel(f.read())
    with open(os.path.join(REAL, "samples", sample, "network.c")) as f:
        text = f.read()
    codes = st_codes()
    assert len(codes) > 30
    declared = declared_epochs(text, codes)
    assert [(bool(e.start), bool(e.end), int(e.flags), e.first, e.last) for e in model.epochs] == \
        [d[:5] for d in declared]
    for kind, entry in (("Input", "get_input_buffers_info"), ("Output", "get_output_buffers_info")):
        want, got = declared_buffers(text, kind, codes), board_buffers(model, entry)
        assert want and len(got) == len(want)
        for w, g in zip(want, got):
            w_scale, g_scale = w.pop("scale"), g.pop("scale")
            assert g == w and g_scale == pytest.approx(w_scale, rel=1e-6)
    # what the board reports to a host: the mem_shape with the batch first, ST's type and quantisation
    first = model.inputs[0]
    assert first.mem_shape == declared_buffers(text, "Input", codes)[0]["mem_shape"]


@pytest.mark.parametrize("sample", [s for s, rel in SAMPLES.items() if rel == "2.2"])
def test_scons_run_of_a_real_sample_runs_every_epoch_to_its_end(repo, sample):  # noqa: F811  (repo: a fixture)
    """`scons run` of a real sample (built and flashed with the real install): the simulated board
    takes the image whatever its size, runs its software epochs (ST's runtime library's Helium
    kernels included) and its hardware epochs on the NPU model, to its end, and writes its
    outputs (before the NPU model computed, it stopped at the first hardware epoch)."""
    import json
    proc = scons(repo, "flash", "run", f"MODEL={sample}", "BUILD_DIR=build-run", "RELOC_ABSOLUTE_FLASH_POOLS=1",
                 env={"STEDGEAI_CORE_DIR": _install()}, check=False, timeout=900)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout[-2000:] + proc.stderr[-3000:]
    run_dir = os.path.join(repo, "build-run", sample, "run")
    assert any(f.startswith("output_") for f in os.listdir(run_dir))
    with open(os.path.join(run_dir, "run.json")) as f:
        assert "board_log" not in json.load(f)       # nothing the NPU model left not computed


def _drawn_digits():
    """A 1 (a vertical bar) and a 0 (a ring), white on black in 28 x 28, values 0..1."""
    import numpy as np
    one = np.zeros((28, 28), np.float32)
    one[4:24, 13:15] = 1.0
    rows, cols = np.mgrid[0:28, 0:28]
    ring = ((rows - 14) / 9) ** 2 + ((cols - 14) / 6) ** 2
    zero = ((ring > 0.7) & (ring < 1.3)).astype(np.float32)
    return {1: one, 0: zero}


@pytest.mark.skipif(bool(SAMPLES) and "nucleo_mnist" not in SAMPLES, reason="the test bed has no nucleo_mnist sample")
def test_a_real_sample_computed_in_software_on_the_simulated_board_reads_drawn_digits():
    """nucleo_mnist has software epochs only (ST's float kernels, Helium throughout): installed on
    the simulated board, with its weights where network.c places them (the xSPI2 file at its
    absolute address, as a board has it flashed beside the image), it reads a drawn 1 and a drawn 0
    as 1 and 0 with high confidence: the CPU side computes what the model means."""
    import numpy as np
    from n6board.firmware import InstalledModel
    build, _ = st_flow("nucleo_mnist", "secure")
    sample = os.path.join(REAL, "samples", "nucleo_mnist")
    with open(os.path.join(sample, "network.c")) as f:
        address = int(re.search(r"file postfix=xSPI2 name=\w+ offset=(0x[0-9A-Fa-f]+)", f.read())[1], 16)
    with open(os.path.join(build, "network_rel.bin"), "rb") as f:
        model = InstalledModel(f.read())
    with open(os.path.join(sample, "network_atonbuf.xSPI2.raw"), "rb") as f:
        model.cpu.write(address, f.read())
    for digit, image in _drawn_digits().items():
        scores = np.frombuffer(model.infer([image.tobytes()]).outputs[0], np.float32)
        assert scores.argmax() == digit and scores.max() > 0.9 and abs(scores.sum() - 1) < 1e-5, scores
