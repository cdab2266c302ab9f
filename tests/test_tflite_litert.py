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
