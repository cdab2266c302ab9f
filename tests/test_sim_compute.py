"""The generated code computes the model: network.c + the simulated runtime, built with the host
compiler, run on memory mapped at the pools' addresses, agree with ONNX's reference evaluator."""
import os

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

from conftest import BUNDLED, MODELS, host_build, host_run
from qdq import grid


@pytest.mark.parametrize("model", BUNDLED)
def test_generated_code_matches_the_onnx_reference(generated, sim_install, tmp_path, model):
    out = generated(model)
    exe, info = host_build(out, sim_install("2.2"), tmp_path)
    (inp,), (outp,) = info["graphs"][0]["original_inputs"], info["graphs"][0]["original_outputs"]
    (s_in, z_in), (s_out, z_out) = grid(inp["data_format"]), grid(outp["data_format"])
    rng = np.random.default_rng(7)
    for trial in range(3):
        x = rng.standard_normal(inp["shape"]).astype(np.float32)
        xq = np.clip(np.round(x / s_in) + z_in, -128, 127).astype(np.int8)
        if len(inp["shape"]) == 4:   # the network's input buffer is channel-last
            feed = xq.transpose(0, 2, 3, 1)
        else:
            feed = xq
        got = np.frombuffer(host_run(exe, tmp_path, feed), np.int8)
        ref = ReferenceEvaluator(onnx.load(os.path.join(MODELS, model, "model.onnx")))
        y = ref.run(None, {"input": ((xq.astype(np.float32) - z_in) * s_in).astype(np.float32)})[0]
        want = np.clip(np.round(y / s_out) + z_out, -128, 127).reshape(-1)
        assert got.tolist() == want.astype(int).tolist(), trial      # integer arithmetic: exact (was <= 2 LSB)


def test_float_input_and_uint8_output_conversions(stedgeai, sim_install, tmp_path):
    """--input-data-type float32 / --output-data-type uint8 add convert epochs at the boundary."""
    out = tmp_path / "st_ai_output"
    proc = stedgeai().generate("kws_mlp", out, "--input-data-type", "float32", "--output-data-type", "uint8")
    assert proc.returncode == 0, proc.stderr
    text = open(out / "network.c").read()
    assert "LL_SW_CONVERT_FLOAT_TO_INT8" in text and "LL_SW_CONVERT_INT8_TO_UINT8" in text
    exe, info = host_build(str(out), sim_install("2.2"), tmp_path)
    (inp,), (outp,) = info["graphs"][0]["original_inputs"], info["graphs"][0]["original_outputs"]
    assert inp["data_format"] == {"quantizer": "NONE", "scale": [], "size": 32, "type": "FLOAT", "zero": []}
    assert outp["data_format"]["type"] == "UNSIGNED"    # as ST's samples spell them (test_c_info_data_format)
    x = np.random.default_rng(3).standard_normal(inp["shape"]).astype(np.float32)
    got = np.frombuffer(host_run(exe, tmp_path, x), np.uint8)
    ref = ReferenceEvaluator(onnx.load(os.path.join(MODELS, "kws_mlp", "model.onnx")))
    y = ref.run(None, {"input": x})[0]
    scale, zero = grid(outp["data_format"])
    want = np.clip(np.round(y / scale) + zero, 0, 255).reshape(-1)
    assert got.tolist() == want.astype(int).tolist()            # no ties on these inputs: exact (was <= 2 LSB)
