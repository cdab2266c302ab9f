"""Write an int8 network (the simulated tool's lowered layers of a QDQ ONNX model) as a .tflite
flatbuffer, with the builders of the `tflite` package: the same weights, scales and zero points,
in TFLite's channel-last layout; edge conversions (uint8 / float32) as QUANTIZE and DEQUANTIZE.
Layers without a TFLite equivalent raise ValueError."""
import importlib

import flatbuffers
import numpy as np

from stedgeai_sim.ir import Tensor

TFL_AXIS = {0: 0, 1: 3, 2: 1, 3: 2}      # logical (N, C, H, W) axis → TFLite (N, H, W, C) axis
LOGICAL_AXIS = {v: k for k, v in TFL_AXIS.items()}


def tflite_shape(shape):
    """A logical (N, C, H, W) shape in TFLite's (N, H, W, C) order; other ranks as they are."""
    return (shape[0], shape[2], shape[3], shape[1]) if len(shape) == 4 else tuple(shape)


LUT_OPS = {"Sigmoid": "LOGISTIC", "Tanh": "TANH", "HardSwish": "HARD_SWISH", "Relu": "RELU",
           "LeakyRelu": "LEAKY_RELU"}


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
            shape = tflite_shape(t.shape)
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
        m.Start(self.b)
        for field, value in fields.items():
            getattr(m, "Add" + field)(self.b, value)
        return m.End(self.b)

    def padding(self, layer):
        """VALID or SAME, whichever gives the layer's pads and output size."""
        a, x, y = layer.attrs, layer.inputs[0], layer.output
        dil = a.get("dilations", (1, 1))
        same = []
        for d in range(2):
            total = max((y.shape[2 + d] - 1) * a["strides"][d] + (a["kernel"][d] - 1) * dil[d] + 1 - x.shape[2 + d], 0)
            same.append(total // 2)
        valid = [(x.shape[2 + d] - (a["kernel"][d] - 1) * dil[d] - 1) // a["strides"][d] + 1 for d in range(2)]
        if not any(a["pads"]) and list(y.shape[2:]) == valid:
            return self.PAD.VALID
        if list(a["pads"]) == same:
            return self.PAD.SAME
        return None

    def explicit_pad(self, layer):
        """A PAD (with the input's zero point) before a VALID window, for pads neither VALID nor SAME
        give: what converters write for a symmetric pad. Returns the padded tensor's index."""
        a, x, y = layer.attrs, layer.inputs[0], layer.output
        dil = a.get("dilations", (1, 1))
        size = [(y.shape[2 + d] - 1) * a["strides"][d] + (a["kernel"][d] - 1) * dil[d] + 1 for d in range(2)]
        after = [max(size[d] - x.shape[2 + d] - a["pads"][d], 0) for d in range(2)]
        padded = Tensor(layer.name + "_padded", (x.shape[0], x.shape[1], x.shape[2] + a["pads"][0] + after[0],
                                                 x.shape[3] + a["pads"][1] + after[1]), x.dtype, x.scale, x.zero_point)
        paddings = self.ints(layer.name + "_paddings",
                             [[0, 0], [a["pads"][0], after[0]], [a["pads"][1], after[1]], [0, 0]])
        self.ops.append((self.opcode(self.OP.PAD), [self.tensor(x), paddings], [self.tensor(padded)], self.OPT.NONE,
                         None, {}))
        return self.tensor(padded)

    def window_input(self, layer):
        """(input index, Padding) of a convolution or pooling window."""
        padding = self.padding(layer)
        if padding is None:
            if layer.kind != "conv2d":      # a pool's padding is not a value: no PAD can stand for it
                raise ValueError(f"{layer.name}: padding {layer.attrs['pads']} is neither VALID nor SAME")
            return self.explicit_pad(layer), self.PAD.VALID
        return self.tensor(layer.inputs[0]), padding

    def operand(self, t):
        if not t.is_param:
            return self.tensor(t)
        data = t.data.transpose(0, 2, 3, 1) if t.data.ndim == 4 else t.data
        return self.tensor(t, data, data.shape)

    def ints(self, name, values):
        data = np.asarray(values, np.int32)
        return self.tensor(Tensor(name, data.shape, "int32", 1.0, 0, data), data, data.shape)

    def layer(self, layer):
        a, x, y = layer.attrs, layer.inputs[0], layer.output
        ins = [self.tensor(x)]
        if layer.kind in ("conv2d", "maxpool", "avgpool"):
            ins[0], padding = self.window_input(layer)
        if layer.kind == "conv2d":
            w, b = layer.params[0], layer.params[1] if a["has_bias"] else None
            depthwise = a["group"] > 1
            if depthwise and a["group"] != x.shape[1]:
                raise ValueError(f"{layer.name}: grouped convolution has no TFLite operator")
            data = w.data.transpose(3, 1, 2, 0) if depthwise else w.data      # OHWI → 1HWO for depthwise
            ins.append(self.tensor(w, data, data.shape, 3 if depthwise else 0))
            ins.append(self.tensor(b, b.data, b.data.shape) if b is not None else -1)
            fields = {"Padding": padding, "StrideH": a["strides"][0], "StrideW": a["strides"][1],
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
        elif layer.kind == "avgpool" and tuple(a["kernel"]) == tuple(x.shape[2:]) and \
                (x.scale, x.zero_point) != (y.scale, y.zero_point):
            # a global average that rescales: TFLite's AVERAGE_POOL_2D keeps its input's scale, MEAN rescales
            ins.append(self.ints(layer.name + "_axes", [1, 2]))
            op, table, opt, fields = self.OP.MEAN, "ReducerOptions", self.OPT.ReducerOptions, {"KeepDims": True}
        elif layer.kind == "avgpool" and (x.scale, x.zero_point) != (y.scale, y.zero_point):
            raise ValueError(f"{layer.name}: TFLite's AVERAGE_POOL_2D keeps its input's scale; this one rescales")
        elif layer.kind in ("avgpool", "maxpool"):
            op = self.OP.AVERAGE_POOL_2D if layer.kind == "avgpool" else self.OP.MAX_POOL_2D
            table, opt = "Pool2DOptions", self.OPT.Pool2DOptions
            fields = {"Padding": padding, "StrideH": a["strides"][0], "StrideW": a["strides"][1],
                      "FilterHeight": a["kernel"][0], "FilterWidth": a["kernel"][1]}
        elif layer.kind == "gather" and a["label"] in ("Flatten", "Reshape", "Squeeze", "Unsqueeze") and \
                all(len(t.shape) != 4 or t.shape[2:] == (1, 1) for t in (x, y)):   # same bytes in TFLite's order
            ins.append(self.ints(layer.name + "_shape", tflite_shape(y.shape)))   # LiteRT reads the shape input
            op, table, opt, fields = self.OP.RESHAPE, None, self.OPT.NONE, {}
        elif layer.kind == "gather" and a["label"] == "Concat":
            ins = [self.tensor(p["input"]) for p in a["parts"]]
            axis = TFL_AXIS[a["axis"]] if len(y.shape) == 4 else a["axis"]
            op, table, opt = self.OP.CONCATENATION, "ConcatenationOptions", self.OPT.ConcatenationOptions
            fields = {"Axis": axis}
        elif layer.kind == "gather" and a["label"] == "Pad":
            begin, end = a["pads"]
            order = [0, 2, 3, 1] if len(x.shape) == 4 else range(len(x.shape))
            ins.append(self.ints(layer.name + "_paddings", [[begin[i], end[i]] for i in order]))
            op, table, opt, fields = self.OP.PAD, None, self.OPT.NONE, {}
        elif layer.kind == "gather" and a["label"] == "Transpose":
            n = len(y.shape)
            perm = [TFL_AXIS[a["perm"][LOGICAL_AXIS[j]]] if n == 4 else a["perm"][j] for j in range(n)]
            ins.append(self.ints(layer.name + "_perm", perm))
            op, table, opt, fields = self.OP.TRANSPOSE, None, self.OPT.NONE, {}
        elif layer.kind == "gather" and a["label"] == "Slice":
            order = [0, 2, 3, 1] if len(x.shape) == 4 else range(len(x.shape))
            ins += [self.ints(layer.name + "_begin", [a["starts"][i] for i in order]),
                    self.ints(layer.name + "_end",
                              [a["starts"][i] + (y.shape[i] - 1) * a["steps"][i] + 1 for i in order]),
                    self.ints(layer.name + "_strides", [a["steps"][i] for i in order])]
            op, table, opt, fields = self.OP.STRIDED_SLICE, "StridedSliceOptions", self.OPT.StridedSliceOptions, {}
        elif layer.kind == "lut" and a["label"] == "PRelu" and a.get("slope_quantized") is not None:
            q, scale, zp = a["slope_quantized"]
            q = np.asarray(q, np.int8).reshape(-1)
            data = q.reshape(1, 1, -1) if len(x.shape) == 4 and q.size > 1 else q
            alpha = Tensor(layer.name + "_alpha", data.shape, "int8", float(np.asarray(scale).reshape(-1)[0]),
                           int(np.asarray(zp).reshape(-1)[0]), data)
            ins.append(self.tensor(alpha, data, data.shape))
            op, table, opt, fields = self.OP.PRELU, None, self.OPT.NONE, {}
        elif layer.kind == "eltwise":
            ins = [self.operand(a["a"]), self.operand(a["b"])]
            add = a["op"] == "add"
            op = self.OP.ADD if add else self.OP.MUL
            table, opt = ("AddOptions", self.OPT.AddOptions) if add else ("MulOptions", self.OPT.MulOptions)
            fields = {"FusedActivationFunction": self.act(layer)}
        elif layer.kind == "lut" and (a["label"] in LUT_OPS or (a.get("lo"), a.get("hi")) == (0.0, 6.0)):
            op, table, opt, fields = getattr(self.OP, LUT_OPS.get(a["label"], "RELU6")), None, self.OPT.NONE, {}
            if a["label"] == "LeakyRelu":
                table, opt, fields = "LeakyReluOptions", self.OPT.LeakyReluOptions, {"Alpha": a["alpha"]}
        elif layer.kind == "resize" and (a["bilinear"] or a["coord"] == 1 and a["nearest"] == 2):
            ins.append(self.ints(layer.name + "_size", y.shape[2:]))
            fields = {"AlignCorners": a["coord"] == 2, "HalfPixelCenters": a["coord"] == 0}
            if a["bilinear"]:
                op, table, opt = self.OP.RESIZE_BILINEAR, "ResizeBilinearOptions", self.OPT.ResizeBilinearOptions
            else:
                op, table = self.OP.RESIZE_NEAREST_NEIGHBOR, "ResizeNearestNeighborOptions"
                opt = self.OPT.ResizeNearestNeighborOptions
            if a["coord"] not in (0, 1, 2):
                raise ValueError(f"{layer.name}: no TFLite resize with this coordinate mode")
        elif layer.kind == "convert":     # the edges of a model-zoo export: uint8 / float32 in, float32 out
            op = self.OP.DEQUANTIZE if a["mode"] == "int8_to_float32" else self.OP.QUANTIZE
            if a["mode"] not in ("float32_to_int8", "uint8_to_int8", "int8_to_float32"):
                raise ValueError(f"{layer.name}: {a['mode']} has no TFLite operator")
            table, opt, fields = None, self.OPT.NONE, {}
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

    def int_vector(self, module, what, values):
        return self.vector(getattr(_t(module), "Start" + what + "Vector"), list(values), self.b.PrependInt32)

    def finish(self, net):
        b = self.b
        tensors = []
        for name, shape, dtype, scale, zp, buf, qdim in self.tensors:
            fields = {"Type": getattr(self.TYPE, dtype.upper()), "Buffer": buf}
            if dtype != "float32":        # a float tensor is not quantised
                sc = self.vector(_t("QuantizationParameters").StartScaleVector, list(scale), b.PrependFloat32)
                zps = self.vector(_t("QuantizationParameters").StartZeroPointVector, [zp] * len(scale), b.PrependInt64)
                fields["Quantization"] = self.options("QuantizationParameters",
                                                      {"Scale": sc, "ZeroPoint": zps, "QuantizedDimension": qdim})
            fields.update(Shape=self.int_vector("Tensor", "Shape", shape), Name=b.CreateString(name))
            tensors.append(self.options("Tensor", fields))
        ops = []
        for code, ins, outs, opt_type, table, fields in self.ops:
            opt = self.options(table, fields) if table else None
            iv, ov = self.int_vector("Operator", "Inputs", ins), self.int_vector("Operator", "Outputs", outs)
            f = {"OpcodeIndex": code, "Inputs": iv, "Outputs": ov}
            if opt is not None:
                f.update(BuiltinOptionsType=opt_type, BuiltinOptions=opt)
            ops.append(self.options("Operator", f))
        sub = self.options("SubGraph", {
            "Tensors": self.vector(_t("SubGraph").StartTensorsVector, tensors, b.PrependUOffsetTRelative),
            "Inputs": self.int_vector("SubGraph", "Inputs", [self.index[t.name] for t in net.inputs]),
            "Outputs": self.int_vector("SubGraph", "Outputs", [self.index[t.name] for t in net.outputs]),
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
