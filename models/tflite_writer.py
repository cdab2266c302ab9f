"""Write an int8 network (the simulated tool's lowered layers of a QDQ ONNX model) as a .tflite
flatbuffer, with the builders of the `tflite` package: the same weights, scales and zero points,
in TFLite's channel-last layout. Covers what the bundled TFLite models use: CONV_2D,
DEPTHWISE_CONV_2D, FULLY_CONNECTED, AVERAGE_POOL_2D, MAX_POOL_2D, RESHAPE, SOFTMAX."""
import importlib

import flatbuffers
import numpy as np


def _t(name):
    return importlib.import_module("tflite." + name)


def _enum(name):
    return getattr(_t(name), name)


class _Writer:
    def __init__(self):
        self.b = flatbuffers.Builder(1 << 16)
        self.tensors, self.buffers, self.index = [], [b""], {}
        self.opcodes, self.ops = [], []
        self.OP, self.OPT = _enum("BuiltinOperator"), _enum("BuiltinOptions")
        self.ACT, self.PAD, self.TYPE = _enum("ActivationFunctionType"), _enum("Padding"), _enum("TensorType")

    def tensor(self, t, data=None, shape=None, qdim=0):
        """Index of IR tensor t (4-D activations as N, H, W, C), adding it on first use."""
        if t.name in self.index:
            return self.index[t.name]
        if shape is None:
            shape = (t.shape[0], t.shape[2], t.shape[3], t.shape[1]) if len(t.shape) == 4 else t.shape
        buf = 0
        if data is not None:
            self.buffers.append(np.ascontiguousarray(data).astype(data.dtype.newbyteorder("<")).tobytes())
            buf = len(self.buffers) - 1
        self.tensors.append((t.name, tuple(int(d) for d in shape), t.dtype, np.atleast_1d(t.scale).astype(np.float32),
                             t.zero_point, buf, qdim))
        self.index[t.name] = len(self.tensors) - 1
        return self.index[t.name]

    def opcode(self, code):
        if code not in self.opcodes:
            self.opcodes.append(code)
        return self.opcodes.index(code)

    def act(self, layer):
        a = layer.attrs
        if a.get("act_min", -128) == -128:
            return self.ACT.NONE
        return self.ACT.RELU if a.get("act_max", 127) == 127 else self.ACT.RELU6

    def options(self, table, fields):
        m = _t(table)
        getattr(m, "Start")(self.b)
        for field, value in fields.items():
            getattr(m, "Add" + field)(self.b, value)
        return getattr(m, "End")(self.b)

    def padding(self, layer):
        return self.PAD.VALID if not any(layer.attrs["pads"]) else self.PAD.SAME

    def layer(self, layer):
        a, x, y = layer.attrs, layer.inputs[0], layer.output
        ins = [self.tensor(x)]
        if layer.kind == "conv2d":
            w, b = layer.params[0], layer.params[1] if a["has_bias"] else None
            depthwise = a["group"] > 1
            if depthwise and a["group"] != x.shape[1]:
                raise ValueError(f"{layer.name}: grouped convolution has no TFLite operator")
            data = w.data.transpose(3, 1, 2, 0) if depthwise else w.data      # OHWI → 1HWO for depthwise
            ins.append(self.tensor(w, data, data.shape, 3 if depthwise else 0))
            ins.append(self.tensor(b, b.data, b.data.shape) if b is not None else -1)
            fields = {"Padding": self.padding(layer), "StrideH": a["strides"][0], "StrideW": a["strides"][1],
                      "DilationHFactor": a["dilations"][0], "DilationWFactor": a["dilations"][1],
                      "FusedActivationFunction": self.act(layer)}
            if depthwise:
                fields["DepthMultiplier"] = 1
                op, table, opt = self.OP.DEPTHWISE_CONV_2D, "DepthwiseConv2DOptions", self.OPT.DepthwiseConv2DOptions
            else:
                op, table, opt = self.OP.CONV_2D, "Conv2DOptions", self.OPT.Conv2DOptions
        elif layer.kind == "dense":
            w, b = layer.params[0], layer.params[1] if a["has_bias"] else None
            ins += [self.tensor(w, w.data, w.data.shape), self.tensor(b, b.data, b.data.shape) if b is not None else -1]
            op, table, opt = self.OP.FULLY_CONNECTED, "FullyConnectedOptions", self.OPT.FullyConnectedOptions
            fields = {"FusedActivationFunction": self.act(layer)}
        elif layer.kind in ("avgpool", "maxpool"):
            op = self.OP.AVERAGE_POOL_2D if layer.kind == "avgpool" else self.OP.MAX_POOL_2D
            table, opt = "Pool2DOptions", self.OPT.Pool2DOptions
            fields = {"Padding": self.padding(layer), "StrideH": a["strides"][0], "StrideW": a["strides"][1],
                      "FilterHeight": a["kernel"][0], "FilterWidth": a["kernel"][1]}
        elif layer.kind == "gather" and a["label"] in ("Flatten", "Reshape"):
            op, table, opt, fields = self.OP.RESHAPE, None, self.OPT.NONE, {}
        elif layer.kind == "softmax":
            op, table, opt, fields = self.OP.SOFTMAX, "SoftmaxOptions", self.OPT.SoftmaxOptions, {"Beta": 1.0}
        else:
            raise ValueError(f"{layer.name}: {layer.label} is not written to TFLite")
        self.ops.append((self.opcode(op), ins, [self.tensor(y)], opt, table, fields))

    def vector(self, start, items, prepend):
        start(self.b, len(items))
        for item in reversed(items):
            prepend(item)
        return self.b.EndVector()

    def ints(self, module, what, values):
        return self.vector(getattr(_t(module), "Start" + what + "Vector"), list(values), self.b.PrependInt32)

    def finish(self, net):
        b = self.b
        tensors = []
        for name, shape, dtype, scale, zp, buf, qdim in self.tensors:
            sc = self.vector(_t("QuantizationParameters").StartScaleVector, list(scale), b.PrependFloat32)
            zps = self.vector(_t("QuantizationParameters").StartZeroPointVector, [zp] * len(scale), b.PrependInt64)
            q = self.options("QuantizationParameters", {"Scale": sc, "ZeroPoint": zps, "QuantizedDimension": qdim})
            nm, sh = b.CreateString(name), self.ints("Tensor", "Shape", shape)
            tensors.append(self.options("Tensor", {"Shape": sh, "Type": getattr(self.TYPE, dtype.upper()),
                                                   "Buffer": buf, "Name": nm, "Quantization": q}))
        ops = []
        for code, ins, outs, opt_type, table, fields in self.ops:
            opt = self.options(table, fields) if table else None
            iv, ov = self.ints("Operator", "Inputs", ins), self.ints("Operator", "Outputs", outs)
            f = {"OpcodeIndex": code, "Inputs": iv, "Outputs": ov}
            if opt is not None:
                f.update(BuiltinOptionsType=opt_type, BuiltinOptions=opt)
            ops.append(self.options("Operator", f))
        sub = self.options("SubGraph", {
            "Tensors": self.vector(_t("SubGraph").StartTensorsVector, tensors, b.PrependUOffsetTRelative),
            "Inputs": self.ints("SubGraph", "Inputs", [self.index[t.name] for t in net.inputs]),
            "Outputs": self.ints("SubGraph", "Outputs", [self.index[t.name] for t in net.outputs]),
            "Operators": self.vector(_t("SubGraph").StartOperatorsVector, ops, b.PrependUOffsetTRelative),
            "Name": b.CreateString("main")})
        codes = [self.options("OperatorCode", {"BuiltinCode": c, "DeprecatedBuiltinCode": min(c, 127), "Version": 1})
                 for c in self.opcodes]
        bufs = []
        for data in self.buffers:
            fields = {"Data": b.CreateByteVector(data)} if data else {}
            bufs.append(self.options("Buffer", fields))
        model = self.options("Model", {
            "Version": 3,
            "OperatorCodes": self.vector(_t("Model").StartOperatorCodesVector, codes, b.PrependUOffsetTRelative),
            "Subgraphs": self.vector(_t("Model").StartSubgraphsVector, [sub], b.PrependUOffsetTRelative),
            "Description": b.CreateString("n6 reference model"),
            "Buffers": self.vector(_t("Model").StartBuffersVector, bufs, b.PrependUOffsetTRelative)})
        b.Finish(model, file_identifier=b"TFL3")
        return bytes(b.Output())


def tflite_bytes(net):
    w = _Writer()
    for t in net.inputs:
        w.tensor(t)
    for layer in net.layers:
        w.layer(layer)
    return w.finish(net)
