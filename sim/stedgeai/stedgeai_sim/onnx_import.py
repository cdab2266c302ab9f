"""Lower a QDQ-quantised ONNX graph to int8 layers.

Float operators sit between DequantizeLinear and QuantizeLinear nodes; each QuantizeLinear
closes one fused group (e.g. Conv → BatchNormalization → Relu → Q, MatMul → Add → Q) that
becomes one Layer (see layers.py)."""
import os
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference

from n6.errors import N6Error

from . import layers as L
from .ir import Network, Tensor, bad_scale

F32 = np.float32
UNARY = ("Relu", "Clip", "LeakyRelu", "PRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "BatchNormalization")
MOVES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice", "Pad", "Concat")
COMPUTE = ("Conv", "Gemm", "MatMul", "Add", "Mul", "MaxPool", "AveragePool", "GlobalAveragePool", "ReduceMean",
           "Resize", "Softmax")
SUPPORTED = COMPUTE + UNARY + MOVES + ("QuantizeLinear", "DequantizeLinear")
FUSES_ACTIVATION = ("Conv", "Gemm", "MatMul", "Add", "Mul", "BatchNormalization")


@dataclass
class _FloatOp:
    """A float-domain value not yet closed by a QuantizeLinear."""
    node: object
    args: list        # _FloatOp | ("dq", Tensor) | _Const | None (a float initializer)

    @property
    def kind(self):
        return self.node.op_type


@dataclass
class _Const:
    name: str
    q: np.ndarray     # integer values as stored
    scale: np.ndarray
    zero_point: np.ndarray


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _str(v):
    return v.decode() if isinstance(v, bytes) else v


def _external_data_present(path, model):
    """Each file the model's externally stored initializers name is there, next to the model."""
    for t in model.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            where = os.path.join(os.path.dirname(path), {e.key: e.value for e in t.external_data}.get("location", ""))
            if not os.path.isfile(where):
                raise N6Error(where, f"missing: the external data of initializer '{t.name}' of {path}",
                              "copy the data file next to the model, or save the model with its data inside")


class _Importer:
    def __init__(self, path):
        self.path = path
        if os.path.exists(path) and os.path.getsize(path) == 0:
            raise N6Error(path, "the model file is empty", "export the model again as .onnx")
        try:
            model = onnx.load(path, load_external_data=False)
            _external_data_present(path, model)
            onnx.load_external_data_for_model(model, os.path.dirname(path))
        except N6Error:
            raise
        except FileNotFoundError:
            raise N6Error(path, "model file not found", "check the -m/--model path") from None
        except Exception as e:  # onnx raises DecodeError and friends
            raise N6Error(path, f"not a readable ONNX model ({type(e).__name__})",
                          "export the model again as .onnx") from None
        if not model.graph.node:
            raise N6Error(path, "the model has no operator (empty graph)", "export the model again as .onnx")
        opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
        if model.ir_version > onnx.IR_VERSION or opset > onnx.defs.onnx_opset_version():
            raise N6Error(path, f"IR version {model.ir_version}, opset {opset}: newer than any ONNX release this "
                          f"tool reads (IR {onnx.IR_VERSION}, opset {onnx.defs.onnx_opset_version()})",
                          "export the model with an older ONNX (IR version and opset)")
        inits = {i.name for i in model.graph.initializer}
        for vi in model.graph.input:
            if vi.name in inits:
                continue
            for axis, d in enumerate(vi.type.tensor_type.shape.dim):
                if d.dim_value > 0:
                    continue
                if d.WhichOneof("value") == "dim_value":      # a size, 0 or below: no tensor to run
                    raise N6Error(path, f"input '{vi.name}' has dimension {axis} of size {d.dim_value}",
                                  "export the model with every input dimension above 0")
                if axis == 0:      # a symbolic batch: the NPU runs batch 1
                    d.Clear()
                    d.dim_value = 1
                else:
                    raise N6Error(path, f"input '{vi.name}' has a dynamic dimension {axis} "
                                  f"('{d.dim_param or '?'}')", "export the model with fixed input dimensions")
        self.model = shape_inference.infer_shapes(model)
        g = self.model.graph
        self.inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        self.shapes = {}
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            dims = vi.type.tensor_type.shape.dim
            if all(d.dim_value > 0 for d in dims):
                self.shapes[vi.name] = tuple(d.dim_value for d in dims)
        self.graph_inputs = {vi.name for vi in g.input} - set(self.inits)   # the model's inputs, not its weights
        self.consumers = {}   # name -> the nodes that take it
        for n in g.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
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
            if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
                getattr(self, "_" + node.op_type)(node)
            else:
                self._float(node)
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
        scale = scale.astype(F32)
        if (bad := bad_scale(scale)) is not None:
            self.fail(node, f"scale '{scale_name}' holds {bad:g}, not a finite number 0 or more",
                      "quantise the model again")
        return scale, zp

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
        if scale.size != 1:
            self.fail(node, "activations must be quantised per tensor", "quantise activations per tensor")
        if not scale.reshape(-1)[0] > 0:       # every value would be x / 0
            self.fail(node, f"scale '{node.input[1]}' is 0: no value can be quantised with it",
                      "quantise the model again")
        shape = self.shapes.get(node.output[0]) or self.shapes.get(x)
        if shape is None:
            self.fail(node, f"the shape of '{x}' is unknown or dynamic", "export the model with fixed shapes")
        out = Tensor(node.output[0], shape, "int8", float(scale.reshape(-1)[0]), int(zp.reshape(-1)[0]))
        v = self.values.get(x)
        if v is None:  # a graph input: the model's native input is this int8 tensor
            out.name = x
            self.values[("input", x)] = out
        elif isinstance(v, _FloatOp) and v.args[:1] == [("input", v.node.input[0])]:
            # a move (Transpose, Reshape...) of the float input, then Q: quantising commutes with moving
            # values, so the input is quantised as it comes and the move runs on its int8 codes
            name = v.node.input[0]
            if name not in self.shapes:
                self.fail(node, f"the shape of '{name}' is unknown or dynamic", "export the model with fixed shapes")
            source = Tensor(name, self.shapes[name], "int8", out.scale, out.zero_point)
            self.values[("input", name)] = source
            self.layers.append(self._move(v, source, out))
        elif isinstance(v, _FloatOp):
            self.layers.append(self._lower(v, out))
        elif isinstance(v, tuple) and v[0] == "dq":  # DQ → Q: requantising copy
            self.layers.append(L.reshape(node.name, v[1], out, "Requantize"))
        else:
            self.fail(node, "QuantizeLinear must follow a float operator", "re-export the QDQ model")
        self.values[node.output[0]] = out

    # -- float operators: remembered until a QuantizeLinear lowers them ------------------------
    def _float(self, node):
        args = []
        for n, i in enumerate(node.input):
            a = self.values.get(i) if i else None
            if a is None and n == 0 and i in self.graph_inputs and node.op_type in MOVES and node.op_type != "Concat":
                a = ("input", i)       # data movement on the float input: done on its int8 codes (see _QuantizeLinear)
            elif a is None and i and i not in self.inits:
                self.fail(node, f"input '{i}' is float, the model is not int8",
                          "quantise the model to int8 (QDQ format): every input of a compute node "
                          "must come from DequantizeLinear")
            if isinstance(a, Tensor):
                self.fail(node, f"input '{i}' is an int8 tensor without DequantizeLinear", "re-export the QDQ model")
            args.append(a)
        op = _FloatOp(node, args)
        if self._on_its_grid(op):
            x = args[0][1]
            out = Tensor(node.output[0], self.shapes[node.output[0]], "int8", x.scale, x.zero_point)
            self.layers.append(self._lower(op, out))
            self.values[node.output[0]] = ("dq", out)
        else:
            self.values[node.output[0]] = op

    def _on_its_grid(self, op):
        """A Relu, MaxPool or data movement of one dequantised tensor whose result no QuantizeLinear takes
        (ST's `_OE_` files: DequantizeLinear, Relu, Pad, Conv): its result is exact on its input's
        int8 grid, so it runs there, on the codes."""
        node = op.node
        if node.op_type not in ("Relu", "MaxPool", *MOVES) or node.op_type == "Concat" or \
                node.output[0] not in self.shapes:
            return False
        if not (isinstance(op.args[0], tuple) and op.args[0][0] == "dq") or \
                any(a is not None and not isinstance(a, _Const) for a in op.args[1:]):
            return False
        return not any(n.op_type == "QuantizeLinear" for n in self.consumers.get(node.output[0], ()))

    # -- lowering helpers --------------------------------------------------------------------
    def _act(self, node, arg):
        if not (isinstance(arg, tuple) and arg[0] == "dq"):
            what = f"the float result of '{arg.node.name or arg.kind}'" if isinstance(arg, _FloatOp) else "a constant"
            self.fail(node, f"input is {what}, not a dequantised int8 activation",
                      "insert QuantizeLinear/DequantizeLinear between the two operators")
        return arg[1]

    def _const(self, node, arg, what):
        if not isinstance(arg, _Const):
            self.fail(node, f"{what} must be a quantised constant", "quantise weights to int8 (QDQ format)")
        return arg

    def _init(self, node, index, default=None):
        """A float/int initializer input (e.g. Clip's min, Pad's pads), or default when absent."""
        if index >= len(node.input) or not node.input[index]:
            return default
        v = self.inits.get(node.input[index])
        if v is None:
            self.fail(node, f"input '{node.input[index]}' must be a constant", "export with constant parameters")
        return v

    def _operand(self, node, arg):
        """An eltwise operand: an int8 activation, or an int8 constant (stored with the weights)."""
        if isinstance(arg, _Const):
            if arg.q.dtype != np.int8 or np.size(arg.scale) != 1:
                self.fail(node, f"constant '{arg.name}' must be int8 with one scale", "quantise it per tensor")
            return Tensor(arg.name, tuple(arg.q.shape), "int8", float(arg.scale.reshape(-1)[0]),
                          int(np.asarray(arg.zero_point).reshape(-1)[0]), np.ascontiguousarray(arg.q))
        return self._act(node, arg)

    def _weights(self, node, w, axis):
        if w.q.dtype != np.int8:
            self.fail(node, f"weight '{w.name}' is {w.q.dtype}, not int8", "quantise weights to int8")
        if np.any(w.zero_point != 0):
            self.fail(node, f"weight '{w.name}' has a non-zero zero point", "quantise weights symmetrically")
        return np.broadcast_to(w.scale, (w.q.shape[axis],)).astype(F32)

    def _bias(self, node, b, n):
        if b is None:
            return None
        if b.q.dtype != np.int32 or b.q.shape != (n,):
            self.fail(node, f"bias '{b.name}' must be int32 of shape ({n},)", "quantise biases to int32")
        return b.q.astype(np.int32)

    # -- lowering --------------------------------------------------------------------------
    def _lower(self, op, out):
        act = {"act_min": -128, "act_max": 127}
        if op.kind in ("Relu", "Clip") and isinstance(op.args[0], _FloatOp) and op.args[0].kind in FUSES_ACTIVATION:
            if op.kind == "Relu":
                act = L.act_range(out, lo=0.0)
            else:
                lo, hi = self._clip_bounds(op.node)
                act = L.act_range(out, lo, hi)
            op = op.args[0]
        node, kind = op.node, op.kind
        bn = None
        if kind == "BatchNormalization" and isinstance(op.args[0], _FloatOp) and op.args[0].kind == "Conv":
            bn, op = node, op.args[0]
            node, kind = op.node, op.kind
        elif act["act_min"] != -128 or act["act_max"] != 127:
            if kind == "BatchNormalization":
                self.fail(node, "an activation after a stand-alone BatchNormalization is not supported",
                          "fold BatchNormalization into the preceding Conv or quantise between them")
        for a in op.args:
            if isinstance(a, _FloatOp) and not (kind == "Add" and a.kind == "MatMul"):
                self.fail(node, f"'{a.node.name or a.kind}' ({a.kind}) feeds {kind} without quantisation",
                          "insert QuantizeLinear/DequantizeLinear between the two operators")
        name = node.name or node.output[0]
        if kind in ("Gemm", "MatMul") or (kind == "Add" and isinstance(op.args[0], _FloatOp)):
            return self._dense(op, out, act)
        if kind == "Conv":
            return self._conv(op, out, act, bn)
        if kind in ("Add", "Mul"):
            a, b = (self._operand(node, x) for x in op.args)
            return L.eltwise(name, kind.lower(), a, b, out, act)
        x = self._act(node, op.args[0])
        if kind in UNARY:
            return self._unary(node, op, x, out)
        if kind in ("MaxPool", "AveragePool", "GlobalAveragePool", "ReduceMean"):
            return self._pool(node, x, out)
        if kind == "Softmax":
            axis = _attrs(node).get("axis", -1) % len(x.shape)
            if axis != (1 if len(x.shape) == 4 else len(x.shape) - 1):
                self.fail(node, f"Softmax on axis {axis} is not supported", "use the channel (last) axis")
            return L.softmax(name, x, out)
        if kind == "Resize":
            return self._resize(node, x, out)
        return self._move(op, x, out)

    def _move(self, op, x, out):
        """The data-movement layer of `op` (Transpose, Reshape, Slice, Pad, Concat...) from `x` to `out`."""
        return getattr(self, "_move_" + op.kind)(op.node, op, x, out)

    def _clip_bounds(self, node):
        a = _attrs(node)
        lo, hi = self._init(node, 1), self._init(node, 2)
        lo = a.get("min") if lo is None else float(np.asarray(lo).reshape(-1)[0])
        hi = a.get("max") if hi is None else float(np.asarray(hi).reshape(-1)[0])
        return lo, hi

    def _dense(self, op, out, act):
        node, kind = op.node, op.kind
        bias = None
        if kind == "Add":
            mm, bias = op.args
            if mm.kind != "MatMul":
                self.fail(node, "Add of a float result is supported only as the bias of a MatMul",
                          "use Gemm or MatMul + bias")
            bias, op, node = self._const(node, bias, "bias"), mm, mm.node
        a = _attrs(node)
        if node.op_type == "Gemm":
            if a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
                self.fail(node, "Gemm with transA, alpha or beta is not supported", "export a plain Gemm")
            if len(op.args) > 2:
                bias = self._const(node, op.args[2], "bias")
        x = self._act(node, op.args[0])
        w = self._const(node, op.args[1], "weight")
        transposed = node.op_type == "Gemm" and a.get("transB", 0) == 1
        wq = w.q if transposed else w.q.T          # → [N, K]
        w_scale = self._weights(node, w, 0 if transposed else 1)
        n, k = wq.shape
        if x.count != k:
            self.fail(node, f"weight expects {k} inputs, got {x.count}", "check the model shapes")
        if bias is not None and bias.q.dtype == np.int8:   # an int8 constant added to MatMul: requantise it
            real = (bias.q.astype(np.float64) - bias.zero_point) * bias.scale
            bias = _Const(bias.name, np.rint(real.reshape(-1) / (np.float64(F32(x.scale)) * w_scale)).astype(np.int32),
                          None, None)
        return L.dense(node.name or node.output[0], x, wq, w_scale, self._bias(node, bias, n), out, act)

    def _conv(self, op, out, act, bn):
        node = op.node
        a = _attrs(node)
        if _str(a.get("auto_pad", "NOTSET")) != "NOTSET":
            self.fail(node, "auto_pad is not supported", "export explicit pads")
        x = self._act(node, op.args[0])
        w = self._const(node, op.args[1], "weight") if op.args[1] is not None else self._float_weights(node)
        if w.q.ndim != 4:
            self.fail(node, f"{w.q.ndim - 2}-D convolution is not supported", "use a 2-D Conv")
        group = a.get("group", 1)
        oc = w.q.shape[0]
        if x.shape[1] != w.q.shape[1] * group or oc % group:
            self.fail(node, f"weight shape {list(w.q.shape)} does not match {x.shape[1]} input channels in "
                      f"{group} groups", "check the model shapes")
        w_scale = self._weights(node, w, 0)
        wq = w.q
        bias = op.args[2] if len(op.args) > 2 else None
        if len(op.args) > 2 and bias is None:      # a float bias beside float weights: on their grid, int32
            real = self.inits[node.input[2]].astype(np.float64)
            bias = _Const(node.input[2], np.rint(real / (np.float64(F32(x.scale)) * w_scale)).astype(np.int32), None,
                          None)
        bias = self._bias(node, self._const(node, bias, "bias") if bias is not None else None, oc)
        if bn is not None:
            wq, w_scale, bias = self._fold_bn(bn, x, wq, w_scale, bias)
        pads = a.get("pads", [0, 0, 0, 0])
        return L.conv2d(node.name or node.output[0], x, wq, w_scale, bias, out, a.get("strides", [1, 1]), pads,
                        a.get("dilations", [1, 1]), group, act)

    def _float_weights(self, node):
        """Float Conv weights in a model whose activations are quantised (ST's own `_OE_` ONNX of
        an int8 model holds them dequantised): int8 per output channel, symmetric, scale
        max|w| / 127, TFLite's rule, so that an int8 model's weights come back as they were."""
        w = self.inits.get(node.input[1])
        if w is None or w.dtype != np.float32:
            self.fail(node, "weight must be a quantised constant", "quantise weights to int8 (QDQ format)")
        peak = np.abs(w).reshape(w.shape[0], -1).max(axis=1).astype(F32)
        scale = np.where(peak > 0, peak / F32(127), F32(1)).astype(F32)
        q = np.clip(np.rint(w / scale.reshape(-1, *([1] * (w.ndim - 1)))), -127, 127).astype(np.int8)
        return _Const(node.input[1], q, scale, np.zeros(w.shape[0], np.int8))

    def _fold_bn(self, bn, x, wq, w_scale, bias):
        """Conv → BatchNormalization: scale the weights' per-channel scales, fold the shift into the bias."""
        gamma, beta, mean, var = (self._init(bn, i).astype(np.float64) for i in range(1, 5))
        k = gamma / np.sqrt(var + _attrs(bn).get("epsilon", 1e-5))
        sign = np.where(k < 0, -1, 1)
        if np.any((sign < 0)[:, None, None, None] & (wq == -128)):
            self.fail(bn, "cannot fold a negative scale into weights holding -128", "quantise weights to [-127, 127]")
        new_scale = (w_scale * np.abs(k)).astype(F32)
        b = np.zeros(len(k)) if bias is None else bias.astype(np.float64)
        shift = beta - k * mean
        folded = np.rint(sign * b + shift / (np.float64(F32(x.scale)) * new_scale))
        return (wq * sign[:, None, None, None]).astype(np.int8), new_scale, folded.astype(np.int32)

    def _unary(self, node, op, x, out):
        a, name, kind = _attrs(node), node.name or node.output[0], op.kind
        if kind == "Relu":
            fn = lambda v: np.maximum(v, F32(0))
        elif kind == "Clip":
            lo, hi = self._clip_bounds(node)
            return L.lut(name, x, out, lambda v: np.clip(v, F32(-np.inf if lo is None else lo),
                                                         F32(np.inf if hi is None else hi)), kind, lo=lo, hi=hi)
        elif kind == "LeakyRelu":
            alpha = F32(a.get("alpha", 0.01))
            return L.lut(name, x, out, lambda v: np.where(v >= 0, v, v * alpha).astype(F32), kind, alpha=float(alpha))
        elif kind == "Sigmoid":
            fn = lambda v: (F32(1) / (F32(1) + np.exp(-v))).astype(F32)
        elif kind == "Tanh":
            fn = np.tanh
        elif kind == "HardSigmoid":
            alpha, beta = F32(a.get("alpha", 0.2)), F32(a.get("beta", 0.5))
            fn = lambda v: np.clip(alpha * v + beta, F32(0), F32(1))
        elif kind == "HardSwish":
            fn = lambda v: v * np.clip(v / F32(6) + F32(0.5), F32(0), F32(1))
        elif kind == "PRelu":
            c = op.args[1]
            quantized = (c.q, c.scale, c.zero_point) if isinstance(c, _Const) else None
            slope = L.dequantize(*quantized) if quantized else self._init(node, 1).astype(F32)
            layer = L.prelu(name, x, out, slope, quantized)
            if layer is None:
                self.fail(node, f"PRelu slope of {slope.size} values is not supported", "use one slope per channel")
            return layer
        else:   # BatchNormalization on its own: a per-channel affine map
            gamma, beta, mean, var = (self._init(node, i).astype(F32) for i in range(1, 5))
            k = gamma / np.sqrt(var + F32(a.get("epsilon", 1e-5)))
            return L.lut(name, x, out, lambda v, c: ((v - mean[c]) * k[c] + beta[c]).astype(F32),
                         "BatchNorm", per_channel=x.shape[1])
        return L.lut(name, x, out, fn, kind)

    def _pool(self, node, x, out):
        a, kind = _attrs(node), node.op_type
        if len(x.shape) != 4:
            self.fail(node, f"{kind} needs a 4-D input", "use a 2-D pooling on an N, C, H, W tensor")
        if kind in ("GlobalAveragePool", "ReduceMean"):
            if kind == "ReduceMean":
                axes = a.get("axes")
                if axes is None:
                    axes = self._init(node, 1)
                axes = sorted(int(v) % 4 for v in (axes if axes is not None else range(4)))
                if axes != [2, 3]:
                    self.fail(node, f"ReduceMean over axes {axes} is not supported", "reduce over axes [2, 3]")
            return L.pool(node.name or node.output[0], x, out, "avgpool", x.shape[2:], (1, 1), (0, 0))
        if a.get("ceil_mode", 0) or any(d != 1 for d in a.get("dilations", [1, 1])):
            self.fail(node, f"{kind} with ceil_mode or dilations is not supported", "use plain pooling")
        pads = a.get("pads", [0, 0, 0, 0])
        if kind == "AveragePool" and any(pads) and not a.get("count_include_pad", 0):
            self.fail(node, "padded AveragePool needs count_include_pad=1", "set count_include_pad=1")
        return L.pool(node.name or node.output[0], x, out, "maxpool" if kind == "MaxPool" else "avgpool",
                      a["kernel_shape"], a.get("strides", [1, 1]), pads)

    def _resize(self, node, x, out):
        a = _attrs(node)
        mode = _str(a.get("mode", "nearest"))
        coord = _str(a.get("coordinate_transformation_mode", "half_pixel"))
        nearest = _str(a.get("nearest_mode", "round_prefer_floor"))
        if len(x.shape) != 4 or out.shape[:2] != x.shape[:2]:
            self.fail(node, "Resize is supported on the spatial axes of a 4-D tensor only", "resize H and W only")
        if mode not in ("nearest", "linear") or coord not in L.COORD or nearest not in L.NEAREST:
            self.fail(node, f"Resize mode '{mode}' / '{coord}' / '{nearest}' is not supported",
                      "use nearest or linear with half_pixel, asymmetric, align_corners or pytorch_half_pixel")
        scales = self._init(node, 2)
        if scales is not None and scales.size == 4:
            sh, sw = float(scales[2]), float(scales[3])
        else:
            sh, sw = out.shape[2] / x.shape[2], out.shape[3] / x.shape[3]
        return L.resize(node.name or node.output[0], x, out, mode == "linear", coord, nearest, (sh, sw))

    # -- data movement: one strided copy (gather) per input -------------------------------------
    def _reshape(self, node, x, out):
        layer = L.reshape(node.name or node.output[0], x, out, node.op_type)
        if layer is None:
            self.fail(node, f"reshape {list(x.shape)} → {list(out.shape)} across the channel-last layout "
                      "is not supported", "flatten to 2-D first")
        return layer

    def _move_Reshape(self, node, op, x, out):
        return self._reshape(node, x, out)

    _move_Flatten = _move_Squeeze = _move_Unsqueeze = _move_Reshape

    def _move_Transpose(self, node, op, x, out):
        perm = _attrs(node).get("perm", list(reversed(range(len(x.shape)))))
        return L.gather(node.name or node.output[0], [L.gather_part(x, out, [(p, 0, 1) for p in perm])], out,
                        "Transpose", perm=tuple(perm))

    def _move_Slice(self, node, op, x, out):
        n, a = len(x.shape), _attrs(node)
        starts = self._init(node, 1, a.get("starts"))          # inputs since opset 10, attributes before
        if starts is None:
            self.fail(node, "Slice without starts", "export a valid Slice")
        axes = self._init(node, 3, a.get("axes", np.arange(len(starts))))
        steps = self._init(node, 4, np.ones(len(starts), np.int64))
        amap = [(a, 0, 1) for a in range(n)]
        for s, axis, step in zip(starts, axes, steps):
            axis, dim = int(axis) % n, x.shape[int(axis) % n]
            if step < 1:
                self.fail(node, "Slice with a negative or zero step is not supported", "use positive steps")
            s = int(s) + dim if s < 0 else int(s)
            amap[axis] = (axis, min(max(s, 0), dim), int(step))
        return L.gather(node.name or node.output[0], [L.gather_part(x, out, amap)], out, "Slice",
                        starts=tuple(m[1] for m in amap), steps=tuple(m[2] for m in amap))

    def _move_Pad(self, node, op, x, out):
        a = _attrs(node)
        if _str(a.get("mode", "constant")) != "constant":
            self.fail(node, f"Pad mode '{_str(a['mode'])}' is not supported", "use constant padding")
        pads = self._init(node, 1)
        pads = a.get("pads") if pads is None else pads
        n = len(x.shape)
        axes = self._init(node, 3, np.arange(n))
        begin = [0] * n
        for i, axis in enumerate(axes):
            begin[int(axis) % n] = int(pads[i])
        value = self._init(node, 2)
        if isinstance(op.args[2] if len(op.args) > 2 else None, _Const):
            c = op.args[2]
            value = (c.q.astype(F32) - c.zero_point.astype(F32)) * c.scale
        value = a.get("value", 0.0) if value is None else float(np.asarray(value).reshape(-1)[0])
        end = [out.shape[i] - x.shape[i] - begin[i] for i in range(n)]
        return L.gather(node.name or node.output[0], [L.gather_part(x, out, [(i, -begin[i], 1) for i in range(n)])],
                        out, "Pad", pad_value=value, pads=(tuple(begin), tuple(end)))

    def _move_Concat(self, node, op, x, out):
        axis = _attrs(node)["axis"] % len(out.shape)
        parts, offset = [], 0
        for arg in op.args:
            t = self._act(node, arg)
            start = [0] * len(out.shape)
            start[axis] = offset
            parts.append(L.gather_part(t, out, [(i, 0, 1) for i in range(len(out.shape))], start, t.shape))
            offset += t.shape[axis]
        return L.gather(node.name or node.output[0], parts, out, "Concat", axis=axis)


def import_onnx(path):
    return _Importer(path).run()
