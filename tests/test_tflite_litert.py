"""The bundled .tflite models against LiteRT, TFLite's own runtime: it loads and runs each one,
and the host build of the simulated tool's C computes the same int8 outputs on seeded inputs
(exact-match rate and max error in LSB printed per model)."""
import glob
import os

import numpy as np
import pytest

from conftest import MODELS, generate, host_build

BUNDLED_TFLITE = sorted(glob.glob(os.path.join(MODELS, "*", "*.tflite")))


def litert(path):
    """LiteRT's interpreter of `path`, tensors allocated (where LiteRT prepares every operator)."""
    from ai_edge_litert.interpreter import Interpreter
    interpreter = Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    return interpreter


def seeded_inputs(detail, n, seed=7):
    """n inputs for a model input: images in [0, 1] for float32, every code for (u)int8."""
    rng = np.random.default_rng(seed)
    if detail["dtype"] == np.float32:
        return [rng.uniform(0, 1, detail["shape"]).astype(np.float32) for _ in range(n)]
    info = np.iinfo(detail["dtype"])
    return [rng.integers(info.min, info.max + 1, detail["shape"]).astype(detail["dtype"]) for _ in range(n)]


def lsb_of_outputs(interpreter):
    """Each output's LSB: its own scale, or for a float32 output the scale of the DEQUANTIZE input."""
    scales = {t["index"]: t["quantization"][0] for t in interpreter.get_tensor_details()}
    producer = {o["outputs"][0]: o["inputs"][0] for o in interpreter._get_ops_details() if o["op_name"] == "DEQUANTIZE"}
    return [scales[d["index"]] or scales[producer[d["index"]]] for d in interpreter.get_output_details()]


def compare_with_litert(model, exe, workdir, inputs):
    """[(output name, exact-match rate, max LSB, top-1 agreement)] of the host build against LiteRT."""
    from n6.run import host_reference
    interpreter = litert(model)
    ind, outd = interpreter.get_input_details()[0], interpreter.get_output_details()
    want = [[] for _ in outd]
    for x in inputs:
        interpreter.set_tensor(ind["index"], x)
        interpreter.invoke()
        for k, d in enumerate(outd):
            want[k].append(interpreter.get_tensor(d["index"]).copy())
    got = host_reference.execute(str(exe), str(workdir), [b"".join(x.tobytes() for x in inputs)], len(outd))
    rows = []
    for d, w, g, lsb in zip(outd, want, got, lsb_of_outputs(interpreter)):
        w = np.stack(w)
        g = np.frombuffer(g, w.dtype).reshape(w.shape)
        diff = np.rint(np.abs(g.astype(np.float64) - w.astype(np.float64)) / lsb)
        n = len(inputs)
        rows.append((d["name"], float(np.mean(diff == 0)), int(diff.max()),
                     float(np.mean(g.reshape(n, -1).argmax(1) == w.reshape(n, -1).argmax(1)))))
    return rows


def test_models_are_bundled_as_tflite():
    assert [os.path.basename(os.path.dirname(p)) for p in BUNDLED_TFLITE] == ["ds_cnn", "mobilenet_v2_u8"]


def test_a_bundled_tflite_has_the_edges_of_a_model_zoo_export():
    """uint8 pixels in through QUANTIZE, float32 scores out of DEQUANTIZE, as ST's published sources."""
    interpreter = litert(os.path.join(MODELS, "mobilenet_v2_u8", "model.tflite"))
    ops = [o["op_name"] for o in interpreter._get_ops_details()]
    assert "QUANTIZE" in ops and "DEQUANTIZE" in ops
    assert [d["dtype"] for d in interpreter.get_input_details()] == [np.uint8]
    assert [d["dtype"] for d in interpreter.get_output_details()] == [np.float32]


@pytest.mark.parametrize("path", BUNDLED_TFLITE, ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_simulated_tool_computes_what_litert_does(sim_install, tmp_path, path):
    name = os.path.basename(os.path.dirname(path))
    out = generate(path, tmp_path / "st_ai_output", os.path.join(MODELS, name, "neural_art.json"))
    exe, _ = host_build(out, sim_install("2.2"), tmp_path)
    rows = compare_with_litert(path, exe, tmp_path, seeded_inputs(litert(path).get_input_details()[0], 16))
    for output, equal, lsb, top1 in rows:
        print(f"{name} {output}: {100 * equal:.1f} % equal LiteRT's, max {lsb} LSB, top-1 {top1:.2f}")
    assert [lsb for _, _, lsb, _ in rows] == [0] * len(rows)


def test_add_rounds_as_litert_does(sim_install, tmp_path):
    """A TFLite ADD over every pair of int8 codes, with the scales of blazeface's first residual
    ADD: LiteRT's default kernels add with integer multipliers and a shift, which rounds a few
    pairs differently from float ratios (1 of blazeface's 114688 values on one input)."""
    from n6.run import host_reference
    from stedgeai_sim import layers as L
    from stedgeai_sim.ir import Network, Tensor
    from tflite_writer import tflite_bytes
    n = 256 * 256
    a = Tensor("a", (1, n), "int8", 0.06427863240242004, 30)
    b = Tensor("b", (1, n), "int8", 0.020075445994734764, -128)
    y = Tensor("y", (1, n), "int8", 0.024326235055923462, -128)
    model = tmp_path / "add.tflite"
    model.write_bytes(tflite_bytes(Network("add", [a, b], [y], [L.eltwise("y", "add", a, b, y, L.act_range(y, 0.0))])))
    codes = np.arange(-128, 128, dtype=np.int8)
    xa, xb = np.repeat(codes, 256).reshape(1, n), np.tile(codes, 256).reshape(1, n)
    interpreter = litert(model)
    for detail, x in zip(interpreter.get_input_details(), (xa, xb)):
        interpreter.set_tensor(detail["index"], x)
    interpreter.invoke()
    want = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    out = generate(model, tmp_path / "st_ai_output", os.path.join(MODELS, "kws_mlp", "neural_art.json"))
    exe, _ = host_build(out, sim_install("2.2"), tmp_path)
    got = np.frombuffer(host_reference.execute(str(exe), str(tmp_path), [xa.tobytes(), xb.tobytes()], 1)[0], np.int8)
    assert np.sum(got != want.reshape(-1)) == 0
