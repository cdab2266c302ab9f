"""Lower an int8 TFLite model to the same layers as the ONNX path (layers.py).

The flatbuffer is read with the `tflite` package (code generated from TFLite's schema).
TFLite is channel-last (N, H, W, C): 4-D tensors become (N, C, H, W) logical shapes, whose
channel-last memory is the TFLite layout byte for byte."""
import os
import struct

import numpy as np

from n6.errors import N6Error

from . import layers as L
from .ir import Network, Tensor, bad_scale

F32 = np.float32
NHWC_AXIS = {0: 0, 1: 2, 2: 3, 3: 1}     # TFLite axis of a 4-D tensor → logical (N, C, H, W) axis
TFL_AXIS = {v: k for k, v in NHWC_AXIS.items()}
BOUNDARY_TYPES = {"INT8": "int8", "UINT8": "uint8", "FLOAT32": "float32"}   # TFLite type → tensor dtype
TYPE_NAMES = {v: k for k, v in BOUNDARY_TYPES.items()}
ITEM_SIZE = {"FLOAT32": 4, "FLOAT16": 2, "INT32": 4, "UINT8": 1, "INT64": 8, "BOOL": 1, "INT16": 2, "INT8": 1,
             "FLOAT64": 8, "UINT64": 8, "UINT32": 4, "UINT16": 2}
ZERO_POINTS = {"INT8": (-128, 127), "UINT8": (0, 255)}
# Inputs each operator takes in TFLite (its kernel's NumInputs check): (fewest, most).
N_INPUTS = {"ADD": (2, 2), "MUL": (2, 2), "CONV_2D": (2, 3), "DEPTHWISE_CONV_2D": (2, 3), "FULLY_CONNECTED": (2, 3),
            "QUANTIZE": (1, 1), "DEQUANTIZE": (1, 1), "SOFTMAX": (1, 1), "MEAN": (2, 2), "PAD": (2, 3),
            "MAX_POOL_2D": (1, 1), "AVERAGE_POOL_2D": (1, 1), "RESHAPE": (1, 2), "SQUEEZE": (1, 1),
            "EXPAND_DIMS": (2, 2), "RESIZE_NEAREST_NEIGHBOR": (2, 2), "RESIZE_BILINEAR": (2, 2), "LOGISTIC": (1, 1),
            "TANH": (1, 1), "RELU": (1, 1), "RELU6": (1, 1), "HARD_SWISH": (1, 1), "LEAKY_RELU": (1, 1),
            "STRIDED_SLICE": (4, 4), "TRANSPOSE": (2, 2), "PRELU": (2, 2), "CONCATENATION": (1, 1 << 16)}
# What reading a damaged flatbuffer raises: offsets past the end, short vectors, bad strings.
DAMAGE = (IndexError, struct.error, ValueError, TypeError, AttributeError, UnicodeDecodeError, OverflowError,
          RecursionError, MemoryError)


def _logical_axis(axis, rank):
    return NHWC_AXIS[axis] if rank == 4 else axis


def _tflite_axis(axis, rank):
    return TFL_AXIS[axis] if rank == 4 else axis


def _tfl():
    import tflite
    from tflite.ActivationFunctionType import ActivationFunctionType
    from tflite.BuiltinOperator import BuiltinOperator
    from tflite.Padding import Padding
    from tflite.TensorType import TensorType
    return tflite, ActivationFunctionType, BuiltinOperator, Padding, TensorType


class _Importer:
    def __init__(self, path):
        self.path = path
        tflite, self.ACT, ops, self.PAD, types = _tfl()
        self.tflite = tflite
        self.op_names = {v: k for k, v in vars(ops).items() if not k.startswith("_")}
        self.type_names = {v: k for k, v in vars(types).items() if not k.startswith("_")}
        try:
            with open(path, "rb") as f:
                buf = f.read()
        except FileNotFoundError:
            raise N6Error(path, "model file not found", "check the -m/--model path") from None
        if not buf:
            raise N6Error(path, "the model file is empty", "export the model again as .tflite")
        if len(buf) < 8 or not tflite.Model.ModelBufferHasIdentifier(buf, 0):
            raise N6Error(path, "not a TFLite flatbuffer (no TFL3 identifier)", "export the model again as .tflite")
        _verify(path, buf)
        self.model = tflite.Model.GetRootAs(buf, 0)
        if self.model.SubgraphsLength() != 1:
            raise N6Error(path, f"{self.model.SubgraphsLength()} subgraphs", "export a model with one subgraph")
        self.g = self.model.Subgraphs(0)
        self.values = {}          # tensor index → activation Tensor
        self.layers = []
        self._check_structure()

    def _check_structure(self):
        """The consistency LiteRT checks before it runs a model: every index names an existing
        tensor, buffer and operator code; a constant's bytes match its shape and type."""
        n_tensors, n_buffers, n_codes = self.g.TensorsLength(), self.model.BuffersLength(), \
            self.model.OperatorCodesLength()

        def bad(problem):
            raise N6Error(self.path, f"inconsistent .tflite file: {problem}", "export the model again as .tflite")
        for k in range(self.g.OperatorsLength()):
            op = self.g.Operators(k)
            if not 0 <= op.OpcodeIndex() < n_codes:
                bad(f"operator {k} has operator code {op.OpcodeIndex()} of {n_codes}")
            for what, ids, optional in (("input", op.InputsAsNumpy() if op.InputsLength() else [], True),
                                        ("output", op.OutputsAsNumpy() if op.OutputsLength() else [], False)):
                for i in ids:
                    if not (-1 if optional else 0) <= int(i) < n_tensors:
                        bad(f"operator {k} {what} is tensor {int(i)} of {n_tensors}")
            if not op.OutputsLength():
                bad(f"operator {k} has no output")
        for what, ids in (("input", self.g.InputsAsNumpy() if self.g.InputsLength() else []),
                          ("output", self.g.OutputsAsNumpy() if self.g.OutputsLength() else [])):
            for i in ids:
                if not 0 <= int(i) < n_tensors:
                    bad(f"graph {what} is tensor {int(i)} of {n_tensors}")
        for i in range(n_tensors):
            t = self.g.Tensors(i)
            if not 0 <= t.Buffer() < n_buffers:
                bad(f"tensor {i} uses buffer {t.Buffer()} of {n_buffers}")
            data = self.model.Buffers(t.Buffer()).DataLength() if t.Buffer() else 0
            shape = t.ShapeAsNumpy() if t.ShapeLength() else np.zeros(0, np.int32)
            if np.any(shape < 0):
                bad(f"tensor {i} has shape {shape.tolist()}")
            q = t.Quantization()
            if q is not None and q.ScaleLength() and q.ZeroPointLength() != q.ScaleLength():
                bad(f"tensor {i} has {q.ScaleLength()} scales and {q.ZeroPointLength()} zero points")
            if q is not None and q.ScaleLength() > 1 and not (
                    0 <= q.QuantizedDimension() < len(shape) and shape[q.QuantizedDimension()] == q.ScaleLength()):
                bad(f"tensor {i} {shape.tolist()} has {q.ScaleLength()} scales along axis {q.QuantizedDimension()}")
            lo, hi = ZERO_POINTS.get(self.type_names.get(t.Type()), (-1 << 63, 1 << 63))
            if q is not None and q.ZeroPointLength() and not np.all((q.ZeroPointAsNumpy() >= lo) &
                                                                    (q.ZeroPointAsNumpy() <= hi)):
                bad(f"tensor {i} has a zero point outside [{lo}, {hi}]")
            size = ITEM_SIZE.get(self.type_names.get(t.Type()))
            if data and size and data < int(np.prod(shape, dtype=np.int64)) * size:     # more is LiteRT's padding
                bad(f"tensor {i} ({self.type_names.get(t.Type())} {shape.tolist()}) holds {data} bytes, not "
                    f"{int(np.prod(shape, dtype=np.int64)) * size}")

    # -- tensors -----------------------------------------------------------------------------
    def fail(self, where, problem, fix):
        raise N6Error(self.path, f"operator {where}: {problem}", fix)

    def _raw(self, i):
        t = self.g.Tensors(i)
        shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        if t.ShapeSignatureLength() and any(int(d) < 0 for d in t.ShapeSignatureAsNumpy()[1:]):
            raise N6Error(self.path, f"tensor '{t.Name().decode('utf-8', 'replace')}' has a dynamic dimension",
                          "export the model with fixed input dimensions")
        q = t.Quantization()
        scale = q.ScaleAsNumpy().astype(F32) if q is not None and q.ScaleLength() else np.ones(1, F32)
        if (bad := bad_scale(scale)) is not None:       # LiteRT loads it; no code can be made of it
            raise N6Error(self.path, f"tensor '{t.Name().decode('utf-8', 'replace')}' has the scale "
                          f"{bad:g}, not a finite number 0 or more",
                          "quantise the model again")
        zp = q.ZeroPointAsNumpy().astype(np.int64) if q is not None and q.ZeroPointLength() else np.zeros(1, np.int64)
        data = self.model.Buffers(t.Buffer()).DataAsNumpy() if t.Buffer() else 0
        return t, shape, scale, zp, (None if isinstance(data, int) else data)

    def _logical(self, shape):
        return (shape[0], shape[3], shape[1], shape[2]) if len(shape) == 4 else shape

    def act(self, where, i, types=("INT8",)):
        """Activation tensor i, of one of `types` (the boundary QUANTIZE / DEQUANTIZE take others)."""
        if i in self.values:
            t = self.values[i]
            if t.dtype.upper() not in types:
                self.fail(where, f"tensor '{t.name}' is {TYPE_NAMES[t.dtype]}, not int8",
                          "convert the model with full int8 quantisation")
            return t
        if self._raw(i)[4] is not None:
            return self.const(i)
        return self._activation(i, types, lambda name, kind: self.fail(
            where, f"tensor '{name}' is {kind}, not int8", "convert the model with full int8 quantisation"))

    def const(self, i):
        """A constant as an int8 Tensor (eltwise operand) laid out in logical order."""
        t, _, scale, zp, _ = self._raw(i)
        arr = self.array(i, np.int8)[0]
        if arr.ndim == 4:
            arr = arr.transpose(0, 3, 1, 2)
        return Tensor(t.Name().decode('utf-8', 'replace'), tuple(arr.shape), "int8", float(scale[0]), int(zp[0]),
                      np.ascontiguousarray(arr))

    def array(self, i, dtype):
        t, shape, scale, zp, data = self._raw(i)
        count = int(np.prod(shape, dtype=np.int64))      # a buffer may hold more bytes than its tensor
        return np.frombuffer(data.tobytes(), dtype)[:count].reshape(shape), scale, zp

    def bias(self, op, where):
        """The int32 bias of a convolution or dense operator, or None; its zero point must be 0 (LiteRT's rule)."""
        if op.InputsLength() <= 2 or op.Inputs(2) < 0:
            return None
        bias, _, zp = self.array(op.Inputs(2), np.int32)
        if np.any(zp != 0):
            self.fail(where, "bias has a non-zero zero point", "quantise the bias with zero point 0")
        return bias

    def out(self, op, k=0, types=("INT8",)):
        return self._activation(op.Outputs(k), types, lambda name, kind: self.fail(
            name, f"output is {kind}, not int8", "convert the model with full int8 quantisation"))

    def _activation(self, i, types, refuse):
        """Tensor i as the activation it is (one of `types`, else refuse(name, type)), remembered."""
        t, shape, scale, zp, _ = self._raw(i)
        kind = self.type_names.get(t.Type())
        name = t.Name().decode('utf-8', 'replace')
        if kind not in types:
            refuse(name, kind)
        self.values[i] = Tensor(name, self._logical(shape), BOUNDARY_TYPES.get(kind, "int8"), float(scale[0]),
                                int(zp[0]))
        return self.values[i]

    def options(self, op, cls):
        table = op.BuiltinOptions()
        opts = getattr(self.tflite, cls)()
        if table is not None:
            opts.Init(table.Bytes, table.Pos)
        return opts

    def fused(self, opts, y, where):
        kind = opts.FusedActivationFunction()
        if kind == self.ACT.NONE:
            return L.act_range(y)
        if kind == self.ACT.RELU:
            return L.act_range(y, 0.0)
        if kind == self.ACT.RELU6:
            return L.act_range(y, 0.0, 6.0)
        if kind == self.ACT.RELU_N1_TO_1:
            return L.act_range(y, -1.0, 1.0)
        self.fail(where, f"fused activation {kind} is not supported", "use NONE, RELU or RELU6")

    def pads(self, opts, x, y, kernel, strides, dil=(1, 1)):
        if opts.Padding() == self.PAD.VALID:
            return [0, 0, 0, 0]
        total = [max((y.shape[2 + d] - 1) * strides[d] + (kernel[d] - 1) * dil[d] + 1 - x.shape[2 + d], 0)
                 for d in range(2)]
        return [total[0] // 2, total[1] // 2, total[0] - total[0] // 2, total[1] - total[1] // 2]

    # -- operators --------------------------------------------------------------------------
    def run(self):
        for k in range(self.g.OperatorsLength()):
            op = self.g.Operators(k)
            code = self.model.OperatorCodes(op.OpcodeIndex())
            name = self.op_names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "CUSTOM")
            where = f"'{self.g.Tensors(op.Outputs(0)).Name().decode('utf-8', 'replace')}' ({name})"
            handler = getattr(self, "_" + name, None)
            fewest, most = N_INPUTS.get(name, (0, 1 << 16))
            if handler is not None and not fewest <= op.InputsLength() <= most:
                self.fail(where, f"{op.InputsLength()} inputs, where {name} takes {fewest}" +
                          (f" to {most}" if most > fewest else ""), "export the model again as .tflite")
            if handler is None:
                self.fail(where, f"operator '{name}' is not supported",
                          "use " + ", ".join(sorted(n[1:] for n in dir(self) if n[1:].isupper() and n[0] == "_")))
            self.layers.append(handler(op, where))
        inputs = [self.act("input", self.g.Inputs(i), tuple(BOUNDARY_TYPES)) for i in range(self.g.InputsLength())]
        outputs = [self.values[self.g.Outputs(i)] for i in range(self.g.OutputsLength())]
        if not self.layers:
            raise N6Error(self.path, "the model has no operator", "export the model again as .tflite")
        n_params = sum(int(np.prod(self.g.Tensors(i).ShapeAsNumpy())) for i in range(self.g.TensorsLength())
                       if self.g.Tensors(i).Buffer() and self.g.Tensors(i).ShapeLength()
                       and not isinstance(self.model.Buffers(self.g.Tensors(i).Buffer()).DataAsNumpy(), int))
        return Network(os.path.splitext(os.path.basename(self.path))[0], inputs, outputs, self.layers, n_params)

    def _conv(self, op, where, depthwise):
        x = self.act(where, op.Inputs(0))
        y = self.out(op)
        w, w_scale, w_zp = self.array(op.Inputs(1), np.int8)
        if np.any(w_zp != 0):
            self.fail(where, "weights have a non-zero zero point", "quantise weights symmetrically")
        opts = self.options(op, "DepthwiseConv2DOptions" if depthwise else "Conv2DOptions")
        wq = w.transpose(3, 0, 1, 2) if depthwise else w.transpose(0, 3, 1, 2)     # → OIHW
        group = x.shape[1] if depthwise else x.shape[1] // wq.shape[1]
        bias = self.bias(op, where)
        strides, dil = (opts.StrideH(), opts.StrideW()), (opts.DilationHFactor(), opts.DilationWFactor())
        w_scale = np.broadcast_to(w_scale, (wq.shape[0],)).astype(F32)
        return L.conv2d(y.name, x, wq, w_scale, bias, y, strides, self.pads(opts, x, y, wq.shape[2:], strides, dil),
                        dil, group, self.fused(opts, y, where))

    def _CONV_2D(self, op, where):
        return self._conv(op, where, False)

    def _DEPTHWISE_CONV_2D(self, op, where):
        return self._conv(op, where, True)

    def _FULLY_CONNECTED(self, op, where):
        x, y = self.act(where, op.Inputs(0)), self.out(op)
        w, w_scale, _ = self.array(op.Inputs(1), np.int8)
        bias = self.bias(op, where)
        opts = self.options(op, "FullyConnectedOptions")
        return L.dense(y.name, x, w, np.broadcast_to(w_scale, (w.shape[0],)).astype(F32), bias, y,
                       self.fused(opts, y, where))

    def _pool(self, op, where, kind):
        x, y = self.act(where, op.Inputs(0)), self.out(op)
        opts = self.options(op, "Pool2DOptions")
        kernel, strides = (opts.FilterHeight(), opts.FilterWidth()), (opts.StrideH(), opts.StrideW())
        pads = self.pads(opts, x, y, kernel, strides)
        if kind == "avgpool" and any(pads):
            self.fail(where, "SAME-padded average pooling is not supported", "use VALID padding")
        same_grid = (x.scale, x.zero_point) == (y.scale, y.zero_point)   # else requantised, not codes averaged
        return L.pool(y.name, x, y, kind, kernel, strides, pads, codes=kind == "avgpool" and same_grid)

    def _AVERAGE_POOL_2D(self, op, where):
        return self._pool(op, where, "avgpool")

    def _MAX_POOL_2D(self, op, where):
        return self._pool(op, where, "maxpool")

    def _MEAN(self, op, where):
        x, y = self.act(where, op.Inputs(0)), self.out(op)
        axes = sorted(int(a) % 4 for a in self.array(op.Inputs(1), np.int32)[0].reshape(-1))
        if len(x.shape) != 4 or axes != [1, 2]:
            self.fail(where, f"MEAN over axes {axes} is not supported", "average over the spatial axes [1, 2]")
        return L.pool(y.name, x, y, "avgpool", x.shape[2:], (1, 1), (0, 0))

    def _RESHAPE(self, op, where):
        x, y = self.act(where, op.Inputs(0)), self.out(op)
        return L.reshape(y.name, x, y, memory_order=True)

    _SQUEEZE = _EXPAND_DIMS = _RESHAPE

    def _QUANTIZE(self, op, where):
        """float32 or uint8 into the int8 graph (a model-zoo input), or int8 requantised."""
        x = self.act(where, op.Inputs(0), ("INT8", "UINT8", "FLOAT32"))
        y = self.out(op)
        if x.dtype == "float32":
            return L.convert(y.name, x, y, "float32_to_int8")
        if x.dtype == "uint8":
            if x.scale != y.scale or y.zero_point != x.zero_point - 128:
                self.fail(where, f"uint8 to int8 with scale {x.scale:g} -> {y.scale:g}, zero point {x.zero_point} -> "
                          f"{y.zero_point}", "quantise the uint8 input with the int8 graph's scale, zero point + 128")
            return L.convert(y.name, x, y, "uint8_to_int8")
        if (x.scale, x.zero_point) == (y.scale, y.zero_point):
            return L.reshape(y.name, x, y, memory_order=True)
        return L.lut(y.name, x, y, lambda v: v, "Requantize")

    def _DEQUANTIZE(self, op, where):
        """int8 out of the graph as float32 (a model-zoo output)."""
        x, y = self.act(where, op.Inputs(0)), self.out(op, types=("FLOAT32",))
        return L.convert(y.name, x, y, "int8_to_float32")

    def _TRANSPOSE(self, op, where):
        x, y = self.act(where, op.Inputs(0)), self.out(op)
        perm = [int(p) for p in self.array(op.Inputs(1), np.int32)[0].reshape(-1)]
        n = len(y.shape)       # out TFLite axis j reads in TFLite axis perm[j]
        logical = [_logical_axis(perm[_tflite_axis(a, n)], n) for a in range(n)]
        return L.gather(y.name, [L.gather_part(x, y, [(p, 0, 1) for p in logical])], y, "Transpose",
                        perm=tuple(logical))

    def _STRIDED_SLICE(self, op, where):
        x, y = self.act(where, op.Inputs(0)), self.out(op)
        opts = self.options(op, "StridedSliceOptions")
        if opts.BeginMask() or opts.EndMask() or opts.EllipsisMask() or opts.NewAxisMask() or opts.ShrinkAxisMask():
            self.fail(where, "STRIDED_SLICE with masks is not supported", "export explicit begin/end values")
        begin = self.array(op.Inputs(1), np.int32)[0].reshape(-1)
        strides = self.array(op.Inputs(3), np.int32)[0].reshape(-1)
        n = len(x.shape)
        amap = [(a, 0, 1) for a in range(n)]
        for axis, (b, step) in enumerate(zip(begin, strides)):
            if step < 1:
                self.fail(where, "STRIDED_SLICE with a negative or zero stride is not supported",
                          "use positive strides")
            logical = _logical_axis(axis, n)
            dim = x.shape[logical]
            amap[logical] = (logical, min(max(int(b) + dim if b < 0 else int(b), 0), dim), int(step))
        return L.gather(y.name, [L.gather_part(x, y, amap)], y, "Slice",
                        starts=tuple(m[1] for m in amap), steps=tuple(m[2] for m in amap))

    def _PRELU(self, op, where):
        x, y = self.act(where, op.Inputs(0)), self.out(op)
        q, scale, zp = self.array(op.Inputs(1), np.int8)
        if scale.size != 1:
            self.fail(where, "PRELU alpha must be quantised per tensor", "quantise alpha per tensor")
        quantized = (q, scale.reshape(()), np.int8(zp.reshape(-1)[0]))
        layer = L.prelu(y.name, x, y, L.dequantize(*quantized), quantized)
        if layer is None:
            self.fail(where, f"PRELU alpha of shape {list(q.shape)} is not supported", "use one alpha per channel")
        return layer

    def _SOFTMAX(self, op, where):
        x, y = self.act(where, op.Inputs(0)), self.out(op)
        if self.options(op, "SoftmaxOptions").Beta() != 1.0:
            self.fail(where, "SOFTMAX with beta != 1 is not supported", "use beta = 1")
        return L.softmax(y.name, x, y)

    def _eltwise(self, op, where, kind):
        a, b = (self.act(where, op.Inputs(k)) for k in range(2))
        y = self.out(op)
        if len(a.shape) != len(b.shape):
            self.fail(where, "operands of different ranks are not supported", "broadcast with equal ranks")
        opts = self.options(op, "AddOptions" if kind == "add" else "MulOptions")
        return L.eltwise(y.name, kind, a, b, y, self.fused(opts, y, where), fixed=True)

    def _ADD(self, op, where):
        return self._eltwise(op, where, "add")

    def _MUL(self, op, where):
        return self._eltwise(op, where, "mul")

    def _CONCATENATION(self, op, where):
        y = self.out(op)
        axis = self.options(op, "ConcatenationOptions").Axis() % len(y.shape)
        axis = _logical_axis(axis, len(y.shape))
        parts, offset = [], 0
        for k in range(op.InputsLength()):
            t = self.act(where, op.Inputs(k))
            start = [0] * len(y.shape)
            start[axis] = offset
            parts.append(L.gather_part(t, y, [(i, 0, 1) for i in range(len(y.shape))], start, t.shape))
            offset += t.shape[axis]
        return L.gather(y.name, parts, y, "Concat", axis=axis)

    def _PAD(self, op, where):
        x, y = self.act(where, op.Inputs(0)), self.out(op)
        pads = self.array(op.Inputs(1), np.int32)[0].reshape(-1, 2)
        begin, end = [0] * len(x.shape), [0] * len(x.shape)
        for axis, (before, after) in enumerate(pads):
            logical = _logical_axis(axis, len(x.shape))
            begin[logical], end[logical] = int(before), int(after)
        return L.gather(y.name, [L.gather_part(x, y, [(i, -begin[i], 1) for i in range(len(x.shape))])], y, "Pad",
                        pads=(tuple(begin), tuple(end)))

    def _resize(self, op, where, bilinear):
        x, y = self.act(where, op.Inputs(0)), self.out(op)
        opts = self.options(op, "ResizeBilinearOptions" if bilinear else "ResizeNearestNeighborOptions")
        coord = "align_corners" if opts.AlignCorners() else ("half_pixel" if opts.HalfPixelCenters() else "asymmetric")
        nearest = "round_prefer_ceil" if coord != "asymmetric" else "floor"
        return L.resize(y.name, x, y, bilinear, coord, nearest, (y.shape[2] / x.shape[2], y.shape[3] / x.shape[3]))

    def _RESIZE_NEAREST_NEIGHBOR(self, op, where):
        return self._resize(op, where, False)

    def _RESIZE_BILINEAR(self, op, where):
        return self._resize(op, where, True)

    def _lut(self, op, where, fn, label, **facts):
        x, y = self.act(where, op.Inputs(0)), self.out(op)
        return L.lut(y.name, x, y, fn, label, **facts)

    def _LOGISTIC(self, op, where):
        return self._lut(op, where, lambda v: (F32(1) / (F32(1) + np.exp(-v))).astype(F32), "Sigmoid")

    def _TANH(self, op, where):
        return self._lut(op, where, np.tanh, "Tanh")

    def _RELU(self, op, where):
        return self._lut(op, where, lambda v: np.maximum(v, F32(0)), "Relu")

    def _RELU6(self, op, where):
        return self._lut(op, where, lambda v: np.clip(v, F32(0), F32(6)), "Clip", lo=0.0, hi=6.0)

    def _HARD_SWISH(self, op, where):
        return self._lut(op, where, lambda v: v * np.clip(v / F32(6) + F32(0.5), F32(0), F32(1)), "HardSwish")

    def _LEAKY_RELU(self, op, where):
        alpha = F32(self.options(op, "LeakyReluOptions").Alpha())
        return self._lut(op, where, lambda v: np.where(v >= 0, v, v * alpha).astype(F32), "LeakyRelu",
                         alpha=float(alpha))


def _verify(path, buf):
    """LiteRT's own reading of the file (the flatbuffer verifier, operator codes, buffers): what it
    refuses is a damaged file, in one line."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    try:
        Interpreter(model_content=buf, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    except (ValueError, RuntimeError) as e:
        why = next((line.strip() for line in str(e).splitlines() if line.strip()), type(e).__name__)
        raise N6Error(path, f"damaged .tflite file: {why[:120]}", "export the model again as .tflite") from None


def import_tflite(path):
    try:
        return _Importer(path).run()
    except DAMAGE as e:      # the reader went off the flatbuffer: a damaged file, not a model to compile
        raise N6Error(path, f"damaged .tflite file ({type(e).__name__}: {str(e)[:80]})",
                      "export the model again as .tflite") from None
