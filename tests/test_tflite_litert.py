"""The bundled .tflite models against LiteRT, TFLite's own runtime: it loads and runs each one,
and the host build of the simulated tool's C computes the same int8 outputs on seeded inputs
(exact-match rate and max error in LSB printed per model)."""
import glob
import os

import numpy as np
import pytest

from conftest import MODELS, generate, host_build, host_run

BUNDLED_TFLITE = sorted(glob.glob(os.path.join(MODELS, "*", "*.tflite")))


def litert(path):
    """LiteRT's interpreter of `path`, tensors allocated (where LiteRT prepares every operator)."""
    from ai_edge_litert.interpreter import Interpreter
    interpreter = Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    return interpreter


def litert_outputs(path, inputs):
    """LiteRT's first output on each int8 input (in the model's own NHWC order)."""
    interpreter = litert(path)
    inp, out = interpreter.get_input_details()[0], interpreter.get_output_details()[0]
    outs = []
    for x in inputs:
        interpreter.set_tensor(inp["index"], x)
        interpreter.invoke()
        outs.append(interpreter.get_tensor(out["index"]).copy())
    return outs


def test_models_are_bundled_as_tflite():
    assert [os.path.basename(os.path.dirname(p)) for p in BUNDLED_TFLITE] == ["ds_cnn"]


@pytest.mark.parametrize("path", BUNDLED_TFLITE, ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_simulated_tool_computes_what_litert_does(sim_install, tmp_path, path):
    name = os.path.basename(os.path.dirname(path))
    shape = litert(path).get_input_details()[0]["shape"]
    rng = np.random.default_rng(38)
    inputs = [rng.integers(-128, 128, size=shape, dtype=np.int8) for _ in range(16)]
    want = np.stack(litert_outputs(path, inputs))
    out = generate(path, tmp_path / "st_ai_output", os.path.join(MODELS, name, "neural_art.json"))
    exe, _ = host_build(out, sim_install("2.2"), tmp_path)
    got = np.frombuffer(host_run(exe, tmp_path, np.concatenate([x.reshape(-1) for x in inputs])), np.int8)
    got = got.reshape(want.shape)
    diff = np.abs(got.astype(int) - want.astype(int))
    print(f"{name}: {100 * np.mean(diff == 0):.1f} % of {diff.size} outputs equal LiteRT's, max {diff.max()} LSB")
    assert diff.max() == 0


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
