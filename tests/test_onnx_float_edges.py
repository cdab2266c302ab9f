"""ST's own `_OE_` ONNX files (the published blazeface's model_OE.onnx) hold what the simulated
tool must take as ST's tool does: float Transposes between the graph input and its first
QuantizeLinear (and after the last DequantizeLinear), float Conv weights and biases, and Relu,
Pad and MaxPool run on a dequantised tensor with no QuantizeLinear after them. Judged by
onnxruntime through `scons validate` at 0 LSB."""
import json
import os
import shutil

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import copy_repo, scons


def _model(path, nodes, inits, x_shape, y_shape):
    graph = helper.make_graph(nodes, "edges", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def _grids():
    return {"s_in": np.array(0.02, np.float32), "z_in": np.array(-3, np.int8),
            "s_o": np.array(0.05, np.float32), "z_o": np.array(5, np.int8)}


def transposed_io(path):
    """NHWC float input → Transpose → Q/DQ → Conv (int8 weights) → Q/DQ → Transpose → NHWC output;
    height and width differ so that a swapped axis shows."""
    w = np.random.default_rng(0).integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    inits = dict(_grids(), w=w, s_w=np.full(4, 0.01, np.float32), z_w=np.zeros(4, np.int8))
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 3, 1, 2]),
             helper.make_node("QuantizeLinear", ["xt", "s_in", "z_in"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s_in", "z_in"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "s_w", "z_w"], ["wd"], axis=0),
             helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("QuantizeLinear", ["c", "s_o", "z_o"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "s_o", "z_o"], ["cd"]),
             helper.make_node("Transpose", ["cd"], ["y"], perm=[0, 2, 3, 1])]
    _model(path, nodes, inits, [1, 6, 5, 3], [1, 6, 5, 4])


def oe_pattern(path):
    """DQ → Relu → Pad → MaxPool (no Q between) → Conv with float weights and bias (an int8
    model's, dequantised: per-channel scales with a ±127 in each channel) → Q/DQ."""
    rng = np.random.default_rng(1)
    wq = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    wq[:, 0, 0, 0] = 127
    ws = (rng.random(4) * 0.01 + 0.001).astype(np.float32)
    bias = (rng.integers(-500, 500, 4) * np.float32(0.02) * ws).astype(np.float32)
    inits = dict(_grids(), w=(wq * ws.reshape(-1, 1, 1, 1)).astype(np.float32), b=bias,
                 pads=np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), pv=np.array(0.0, np.float32))
    nodes = [helper.make_node("QuantizeLinear", ["x", "s_in", "z_in"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "s_in", "z_in"], ["xd"]),
             helper.make_node("Relu", ["xd"], ["r"]),
             helper.make_node("Pad", ["r", "pads", "pv"], ["p"], mode="constant"),
             helper.make_node("MaxPool", ["p"], ["mp"], kernel_shape=[2, 2], strides=[1, 1]),
             helper.make_node("Conv", ["mp", "w", "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("QuantizeLinear", ["c", "s_o", "z_o"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "s_o", "z_o"], ["y"])]
    _model(path, nodes, inits, [1, 3, 6, 5], [1, 4, 6, 5])


@pytest.mark.parametrize("make", [transposed_io, oe_pattern])
def test_float_edges_validate_exactly_against_onnxruntime(tmp_path, make):
    repo = copy_repo(tmp_path / "repo")
    folder = os.path.join(repo, "models", "edges")
    os.makedirs(folder)
    for name in ("neural_art.json", "tiny_yolo.mpool"):
        shutil.copyfile(os.path.join(repo, "models", "tiny_yolo", name), os.path.join(folder, name))
    make(os.path.join(folder, "model.onnx"))
    scons(repo, "validate-edges", "VALIDATE_TOLERANCE=0", "RUNS=3")
    verdict = json.load(open(os.path.join(repo, "build", "edges", "run", "validate.json")))
    assert verdict["passed"] and all(o["max_abs_lsb"] == 0 for o in verdict["outputs"]), verdict
