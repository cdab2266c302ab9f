"""Lower a QDQ-quantised ONNX graph to int8 layers.

Float operators sit between DequantizeLinear and QuantizeLinear nodes; each QuantizeLinear
closes one fused group (e.g. Conv → Relu → Q, MatMul → Add → Q) that becomes one Layer."""
import os
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

from n6.errors import N6Error

from .ir import Layer, Network, Tensor

SUPPORTED = ("Conv", "Gemm", "MatMul", "Add", "Relu", "MaxPool", "AveragePool", "GlobalAveragePool",
             "Reshape", "Flatten", "Softmax", "QuantizeLinear", "DequantizeLinear")


@dataclass
class _FloatOp:
    """A float-domain value not yet closed by a QuantizeLinear."""
    node: object
    args: list        # _FloatOp | Tensor (dequantised activation) | _Const


@dataclass
class _Const:
    name: str
    q: np.ndarray     # integer values as stored
    scale: np.ndarray
    zero_point: np.ndarray


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


class _Importer:
    def __init__(self, path):
        self.path = path
        try:
            model = onnx.load(path)
        except FileNotFoundError:
            raise N6Error(path, "model file not found", "check the -m/--model path") from None
        except Exception as e:  # onnx raises DecodeError and friends
            raise N6Error(path, f"not a readable ONNX model ({type(e).__name__})",
                          "export the model again as .onnx") from None
        self.model = shape_inference.infer_shapes(model)
        g = self.model.graph
        self.inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        self.shapes = {}
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            dims = vi.type.tensor_type.shape.dim
            self.shapes[vi.name] = tuple(d.dim_value or 1 for d in dims)
        self.values = {}      # name -> Tensor (int8 activation) | _FloatOp | _Const | ("dq", Tensor)
        self.layers = []

    def fail(self, node, problem, fix):
        raise N6Error(self.path, f"node '{node.name or node.op_type}': {problem}", fix)

    def run(self):
        g = self.model.graph
        for node in g.node:
            if node.op_type not in SUPPORTED:
                self.fail(node, f"operator '{node.op_type}' is not supported",
                          "use " + ", ".join(SUPPORTED[:-2]) + " with QDQ int8 quantisation")
            getattr(self, "_" + node.op_type)(node)
        inputs = [self._graph_input(vi.name) for vi in g.input if vi.name not in self.inits]
        outputs = [self._graph_output(vi.name) for vi in g.output]
        if not self.layers:
            raise N6Error(self.path, "the model has no quantised operator",
                          "quantise the model to int8 (QDQ format) before generating")
        n_params = sum(int(np.prod(v.shape)) for v in self.inits.values())
        name = os.path.splitext(os.path.basename(self.path))[0]
        return Network(name, inputs, outputs, self.layers, n_params)

    # -- graph boundary ------------------------------------------------------------------
    def _graph_input(self, name):
        t = self.values.get(("input", name))
        if t is None:
            raise N6Error(self.path, f"graph input '{name}' is not followed by QuantizeLinear; "
                          "the model is not int8", "quantise the model to int8 (QDQ format)")
        return t

    def _graph_output(self, name):
        v = self.values.get(name)
        if isinstance(v, tuple) and v[0] == "dq":
            return v[1]
        if isinstance(v, Tensor):
            return v
        raise N6Error(self.path, f"graph output '{name}' is not an int8 tensor (no QuantizeLinear "
                      "before it); the model is not int8", "quantise the model to int8 (QDQ format)")

    # -- Q / DQ ----------------------------------------------------------------------------
    def _qparams(self, node, scale_name, zp_name):
        scale = self.inits.get(scale_name)
        zp = self.inits.get(zp_name) if zp_name else np.zeros((), np.int8)
        if scale is None or zp is None:
            self.fail(node, "scale and zero point must be constants", "export with constant Q/DQ parameters")
        return scale.astype(np.float32), zp

    def _DequantizeLinear(self, node):
        x = node.input[0]
        scale, zp = self._qparams(node, node.input[1], node.input[2] if len(node.input) > 2 else None)
        if x in self.inits:
            q = self.inits[x]
            if q.dtype not in (np.int8, np.int32):
                self.fail(node, f"constant '{x}' is {q.dtype}, not int8", "quantise weights to int8 (bias int32)")
            self.values[node.output[0]] = _Const(x, q, scale, zp)
        else:
            t = self.values.get(x)
            if not isinstance(t, Tensor):
                self.fail(node, f"input '{x}' is not an int8 tensor", "quantise the model to int8 (QDQ format)")
            self.values[node.output[0]] = ("dq", t)

    def _QuantizeLinear(self, node):
        x = node.input[0]
        scale, zp = self._qparams(node, node.input[1], node.input[2] if len(node.input) > 2 else None)
        if zp.dtype != np.int8:
            self.fail(node, f"activation zero point is {zp.dtype}, not int8", "quantise activations to int8")
        out = Tensor(node.output[0], self.shapes.get(node.output[0], ()), "int8", float(scale), int(zp))
        v = self.values.get(x)
        if v is None:  # a graph input: the model's native input is this int8 tensor
            out.name = x
            self.values[("input", x)] = out
        elif isinstance(v, _FloatOp):
            self.layers.append(self._lower(v, out))
        elif isinstance(v, tuple) and v[0] == "dq":  # DQ → Q: requantising copy
            self.layers.append(Layer("reshape", node.name, [v[1]], out, attrs={"chw": False}))
        else:
            self.fail(node, "QuantizeLinear must follow a float operator", "re-export the QDQ model")
        self.values[node.output[0]] = out

    # -- float operators: remembered until a QuantizeLinear lowers them ------------------------
    def _float(self, node):
        args = [self.values.get(i) for i in node.input if i]
        for i, a in zip(node.input, args):
            if a is None and i in self.inits:
                continue  # e.g. Reshape's shape input
            if a is None or (isinstance(a, Tensor)):
                self.fail(node, f"input '{i}' is float, the model is not int8",
                          "quantise the model to int8 (QDQ format): every input of a compute node "
                          "must come from DequantizeLinear")
        self.values[node.output[0]] = _FloatOp(node, args)

    _Conv = _Gemm = _MatMul = _Add = _Relu = _float
    _MaxPool = _AveragePool = _GlobalAveragePool = _Reshape = _Flatten = _Softmax = _float

    # -- lowering --------------------------------------------------------------------------
    def _act(self, node, arg):
        if not (isinstance(arg, tuple) and arg[0] == "dq"):
            self.fail(node, "expected a dequantised int8 activation as first input",
                      "quantise the model to int8 (QDQ format)")
        return arg[1]

    def _const(self, node, arg, what):
        if not isinstance(arg, _Const):
            self.fail(node, f"{what} must be a quantised constant", "quantise weights to int8 (QDQ format)")
        return arg

    def _lower(self, op, out):
        relu = False
        if op.node.op_type == "Relu" and isinstance(op.args[0], _FloatOp):
            relu, op = True, op.args[0]
        node, kind = op.node, op.node.op_type
        if kind == "Add":
            mm, bias = op.args
            if not (isinstance(mm, _FloatOp) and mm.node.op_type == "MatMul"):
                self.fail(node, "Add is supported only as the bias of a MatMul", "use Gemm or MatMul + bias")
            return self._dense(mm.node, self._act(mm.node, mm.args[0]), self._const(mm.node, mm.args[1], "weight"),
                               self._const(node, bias, "bias"), out, relu, transposed=False)
        if kind in ("Gemm", "MatMul"):
            a = _attrs(node)
            if kind == "Gemm" and (a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0):
                self.fail(node, "Gemm with transA, alpha or beta is not supported", "export a plain Gemm")
            bias = self._const(node, op.args[2], "bias") if len(op.args) > 2 else None
            return self._dense(node, self._act(node, op.args[0]), self._const(node, op.args[1], "weight"),
                               bias, out, relu, transposed=kind == "Gemm" and a.get("transB", 0) == 1)
        if kind == "Conv":
            bias = self._const(node, op.args[2], "bias") if len(op.args) > 2 else None
            return self._conv(node, self._act(node, op.args[0]), self._const(node, op.args[1], "weight"),
                              bias, out, relu)
        x = self._act(node, op.args[0])
        if relu:
            self.fail(node, f"Relu after {kind} is not supported", "place Relu after Conv, Gemm or MatMul")
        if kind == "Relu":
            return Layer("relu", node.name, [x], out)
        if kind in ("MaxPool", "AveragePool", "GlobalAveragePool"):
            return self._pool(node, x, out)
        if kind in ("Reshape", "Flatten"):
            chw = len(x.shape) == 4 and x.shape[1] > 1 and x.shape[2] * x.shape[3] > 1
            return Layer("reshape", node.name, [x], out, attrs={"chw": chw})
        if kind == "Softmax":
            axis = _attrs(node).get("axis", -1)
            if axis not in (-1, len(x.shape) - 1):
                self.fail(node, "Softmax is supported on the last axis only", "use axis=-1")
            return Layer("softmax", node.name, [x], out)
        self.fail(node, f"operator '{kind}' cannot be lowered here", "re-export the QDQ model")

    def _weights(self, node, w, axis):
        if w.q.dtype != np.int8:
            self.fail(node, f"weight '{w.name}' is {w.q.dtype}, not int8", "quantise weights to int8")
        if np.any(w.zero_point != 0):
            self.fail(node, f"weight '{w.name}' has a non-zero zero point", "quantise weights symmetrically")
        return np.broadcast_to(w.scale, (w.q.shape[axis],)).astype(np.float32)

    def _bias(self, node, b, n):
        if b is None:
            return None
        if b.q.dtype != np.int32 or b.q.shape != (n,):
            self.fail(node, f"bias '{b.name}' must be int32 of shape ({n},)", "quantise biases to int32")
        return b.q.astype(np.int32)

    def _requant(self, x, w_scale, out):
        return (np.float32(x.scale) * w_scale / np.float32(out.scale)).astype(np.float32)

    def _dense(self, node, x, w, b, out, relu, transposed):
        wq = w.q if transposed else w.q.T          # → [N, K]
        w_scale = self._weights(node, w, 0 if transposed else 1)
        n, k = wq.shape
        if x.count != k:
            self.fail(node, f"weight expects {k} inputs, got {x.count}", "check the model shapes")
        params = [Tensor(w.name, tuple(wq.shape), "int8", w_scale, 0, np.ascontiguousarray(wq))]
        bias = self._bias(node, b, n)
        if bias is not None:
            params.append(Tensor(b.name, (n,), "int32", float(x.scale) * w_scale, 0, bias))
        return Layer("dense", node.name, [x], out, params,
                     {"relu": relu, "multiplier": self._requant(x, w_scale, out), "macc": n * k,
                      "has_bias": bias is not None})

    def _conv(self, node, x, w, b, out, relu):
        a = _attrs(node)
        if a.get("group", 1) != 1 or any(d != 1 for d in a.get("dilations", [1, 1])):
            self.fail(node, "grouped or dilated convolution is not supported", "use group=1, dilations=1")
        if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            self.fail(node, "auto_pad is not supported", "export explicit pads")
        oc, ic, kh, kw = w.q.shape
        w_scale = self._weights(node, w, 0)
        pads = a.get("pads", [0, 0, 0, 0])
        strides = a.get("strides", [1, 1])
        params = [Tensor(w.name, (oc, kh, kw, ic), "int8", w_scale, 0,
                         np.ascontiguousarray(w.q.transpose(0, 2, 3, 1)))]   # OHWI
        bias = self._bias(node, b, oc)
        if bias is not None:
            params.append(Tensor(b.name, (oc,), "int32", float(x.scale) * w_scale, 0, bias))
        _, _, oh, ow = out.shape
        return Layer("conv2d", node.name, [x], out, params,
                     {"relu": relu, "multiplier": self._requant(x, w_scale, out), "kernel": (kh, kw),
                      "strides": tuple(strides), "pads": tuple(pads), "has_bias": bias is not None,
                      "macc": oc * oh * ow * kh * kw * ic})

    def _pool(self, node, x, out):
        a = _attrs(node)
        if node.op_type == "GlobalAveragePool":
            kernel, strides, pads = tuple(x.shape[2:]), (1, 1), (0, 0, 0, 0)
        else:
            kernel = tuple(a["kernel_shape"])
            strides, pads = tuple(a.get("strides", [1, 1])), tuple(a.get("pads", [0, 0, 0, 0]))
            if node.op_type == "AveragePool" and any(pads) and not a.get("count_include_pad", 0):
                self.fail(node, "padded AveragePool needs count_include_pad=1", "set count_include_pad=1")
        kind = "maxpool" if node.op_type == "MaxPool" else "avgpool"
        mult = np.float32(x.scale) / np.float32(out.scale)
        if kind == "avgpool":
            mult = mult / np.float32(kernel[0] * kernel[1])
        return Layer(kind, node.name, [x], out, attrs={"kernel": kernel, "strides": strides, "pads": pads,
                                                       "multiplier": np.float32(mult)})


def import_onnx(path):
    return _Importer(path).run()
