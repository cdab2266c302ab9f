"""Static int8 quantisation of a float ONNX graph into the QDQ format, as model-zoo flows do:
activations per tensor (asymmetric, ranges calibrated with onnxruntime on sample inputs),
weights symmetric per channel or per tensor, biases int32. Deterministic for given samples.

`fuse` names float values that stay unquantised, so that their producer and consumer form one
group (Conv → BatchNormalization → Relu → Q). `fixed` gives, by operator type, an output range used
instead of the calibrated one (TFLITE_FIXED: what TFLite's int8 kernels require)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WEIGHT_AXIS = {"Conv": 0, "MatMul": 1}      # Gemm: 0 with transB=1, else 1
CONST_OPERANDS = ("Add", "Mul", "Concat", "PRelu")
TFLITE_FIXED = {"Softmax": (0.0, 255 / 256)}     # int8 softmax output: scale 1/256, zero point -128


def calibrate(model, samples):
    """{tensor name: (min, max)} over the samples, for the input and every node output."""
    import onnxruntime as ort
    m = onnx.ModelProto()
    m.CopyFrom(model)
    known = {o.name for o in m.graph.output}
    for node in m.graph.node:
        for out in node.output:
            if out not in known:
                m.graph.output.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    in_name = sess.get_inputs()[0].name
    lo, hi = {}, {}
    for x in samples:
        for name, v in zip([in_name] + names, [x] + sess.run(names, {in_name: x})):
            if v.dtype == np.float32:
                lo[name] = min(lo.get(name, np.inf), float(v.min()))
                hi[name] = max(hi.get(name, -np.inf), float(v.max()))
    return {k: (lo[k], hi[k]) for k in lo}


def act_qparams(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = np.float32((hi - lo) / 255.0) if hi > lo else np.float32(1.0)
    zp = np.int8(np.clip(np.round(-128 - lo / scale), -128, 127))
    return scale, zp


class _Builder:
    def __init__(self, model, ranges, per_channel, fuse, fixed):
        self.src, self.ranges, self.per_channel, self.fuse, self.fixed = model, ranges, per_channel, set(fuse), fixed
        self.inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        self.nodes, self.new_inits, self.rename, self.scales = [], [], {}, {}

    def const(self, name, value):
        self.new_inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def qdq(self, name, out_name=None):
        """Q → DQ of a float activation; returns the DQ output."""
        scale, zp = act_qparams(*self.ranges[name])
        s, z = self.const(name + "_scale", scale), self.const(name + "_zp", zp)
        dq = out_name or name + "_dq"
        self.nodes += [helper.make_node("QuantizeLinear", [name, s, z], [name + "_q"], name=name + "_Q"),
                       helper.make_node("DequantizeLinear", [name + "_q", s, z], [dq], name=name + "_DQ")]
        self.scales[dq] = scale
        return dq

    def dq_const(self, name, q, scale, zp, axis=None):
        kw = {"axis": axis} if axis is not None else {}
        self.const(name + "_quantized", q)
        self.const(name + "_scale", scale)
        self.const(name + "_zp", zp)
        self.nodes.append(helper.make_node("DequantizeLinear", [name + "_quantized", name + "_scale", name + "_zp"],
                                           [name + "_dq"], name=name + "_DQ", **kw))
        return name + "_dq"

    def weight(self, name, w, axis):
        if self.per_channel:
            other = tuple(i for i in range(w.ndim) if i != axis)
            scale = (np.max(np.abs(w), axis=other) / 127).astype(np.float32)
            scale[scale == 0] = 1.0
            shape = [1] * w.ndim
            shape[axis] = -1
            q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
            return self.dq_const(name, q, scale, np.zeros(len(scale), np.int8), axis), scale
        scale = np.float32(np.max(np.abs(w)) / 127 or 1.0)
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        return self.dq_const(name, q, scale, np.int8(0)), scale

    def bias(self, name, b, x_scale, w_scale):
        scale = (np.float32(x_scale) * np.broadcast_to(w_scale, b.shape)).astype(np.float32)
        q = np.round(b / scale).astype(np.int32)
        return self.dq_const(name, q, scale, np.zeros(len(b), np.int32), 0)

    def operand(self, name, v):
        scale, zp = act_qparams(float(v.min()), float(v.max()))
        q = np.clip(np.round(v / scale) + zp, -128, 127).astype(np.int8)
        return self.dq_const(name, q, scale, zp)

    def node(self, n):
        ins, w_scale = [], None
        for i, name in enumerate(n.input):
            init = self.inits.get(name)
            if name in self.rename:
                ins.append(self.rename[name])
            elif init is None or init.dtype != np.float32 or not name:
                ins.append(name)
            elif i == 1 and n.op_type in ("Conv", "Gemm", "MatMul"):
                axis = WEIGHT_AXIS.get(n.op_type)
                if n.op_type == "Gemm":
                    axis = 0 if any(a.name == "transB" and a.i for a in n.attribute) else 1
                dq, w_scale = self.weight(name, init, axis)
                ins.append(dq)
            elif i == 2 and n.op_type in ("Conv", "Gemm"):
                ins.append(self.bias(name, init, self.scales[ins[0]], w_scale))
            elif n.op_type in CONST_OPERANDS:
                ins.append(self.operand(name, init))
            else:
                ins.append(name)     # attributes given as inputs: shapes, pads, BN statistics, ...
        outs = list(n.output)
        final = {o.name for o in self.src.graph.output}
        outs = [o + "_float" if o in final else o for o in outs]
        self.nodes.append(helper.make_node(n.op_type, ins, outs, name=n.name or outs[0], domain=n.domain,
                                           **{a.name: helper.get_attribute_value(a) for a in n.attribute}))
        for orig, out in zip(n.output, outs):
            if orig in self.fuse:
                self.rename[orig] = out
                self.scales[out] = None
            else:
                self.ranges[out] = self.fixed.get(n.op_type, self.ranges[orig])
                self.rename[orig] = self.qdq(out, orig if orig in final else None)

    def build(self):
        g = self.src.graph
        for vi in g.input:
            if vi.name not in self.inits:
                self.rename[vi.name] = self.qdq(vi.name)
        for n in g.node:
            self.node(n)
        graph = helper.make_graph(self.nodes, g.name, list(g.input), list(g.output), self.new_inits + [
            i for i in g.initializer if numpy_helper.to_array(i).dtype != np.float32
            or any(i.name in n.input for n in self.nodes)])
        model = helper.make_model(graph, opset_imports=list(self.src.opset_import), producer_name="n6-qdq")
        model.ir_version = self.src.ir_version
        return model


def quantize_qdq(model, samples, per_channel=True, fuse=(), fixed=None):
    ranges = calibrate(model, samples)
    return _Builder(model, ranges, per_channel, fuse, fixed or {}).build()
