"""Small float ONNX graphs quantised to int8 QDQ (models/qdq_quantize.py, ranges calibrated with
onnxruntime), and onnxruntime's output of such a QDQ model on the int8 grid."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def float_model(path, nodes, in_shape, consts, opset=17):
    """nodes: onnx NodeProtos reading "x" and writing "y"; consts: {name: array}."""
    graph = helper.make_graph(nodes, "op", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    onnx.save(model, str(path))


def quantize(src, dst, samples, per_channel, fuse=()):
    from qdq_quantize import quantize_qdq
    onnx.save(quantize_qdq(onnx.load(str(src)), samples, per_channel, fuse), str(dst))


def reference(model_path, x, fused=False):
    """onnxruntime of float input x: without graph optimisation, the DQ → float op → Q semantics
    step by step; fused=True, its default session, which fuses each DQ → op → Q into an integer
    operator (QLinearConv, QLinearSigmoid, ...): what an int8 deployment computes."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    if not fused:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def grid(data_format):
    """(scale, zero point) of a c_info `data_format` (ST's spelling: one-element lists)."""
    return data_format["scale"][0], data_format["zero"][0]


def on_grid(y, scale, zero):
    return np.clip(np.rint(np.asarray(y, np.float32) / np.float32(scale)) + zero, -128, 127).astype(np.int8)


def to_memory(a):
    """Logical (N, C, H, W) → the network's channel-last memory order."""
    return a.transpose(0, 2, 3, 1) if a.ndim == 4 else a


def from_memory(buf, shape, dtype=np.int8):
    a = np.frombuffer(buf, dtype)
    if len(shape) == 4:
        n, c, h, w = shape
        return a.reshape(n, h, w, c).transpose(0, 3, 1, 2)
    return a.reshape(shape)


def sub_model(model_path, src, dst, out_path):
    """The part of a QDQ model from the DequantizeLinear output `src` to the value `dst`, as a model
    whose float input is re-quantised exactly as `src` was (so it sees the same int8 tensor)."""
    from onnx import numpy_helper
    full = onnx.load(str(model_path))
    dq = next(n for n in full.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == src)
    inits = {i.name: i for i in full.graph.initializer}
    onnx.utils.extract_model(str(model_path), str(out_path), [src], [dst])
    part = onnx.load(str(out_path))
    part.graph.input[0].name = "x"
    part.graph.node.insert(0, helper.make_node("DequantizeLinear", ["x_q", dq.input[1], dq.input[2]], [src]))
    part.graph.node.insert(0, helper.make_node("QuantizeLinear", ["x", dq.input[1], dq.input[2]], ["x_q"]))
    have = {i.name for i in part.graph.initializer}
    part.graph.initializer.extend(numpy_helper.from_array(numpy_helper.to_array(inits[n]), n)
                                  for n in dq.input[1:] if n not in have)
    onnx.save(part, str(out_path))


def intermediate(model_path, name, x):
    """onnxruntime's value of the float tensor `name` of a model on input x."""
    import onnxruntime as ort
    model = onnx.load(str(model_path))
    model.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run([name], {sess.get_inputs()[0].name: x})[0]
