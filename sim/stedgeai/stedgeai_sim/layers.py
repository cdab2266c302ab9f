"""Builders of int8 Layers from quantised arrays, shared by the ONNX and TFLite importers.

Every builder takes the int8 activation Tensors (logical ONNX axis order: 4-D is N, C, H, W;
memory is channel-last) and plain numpy arrays, and returns one Layer; the kernels it names live
in the simulated runtime library."""
import numpy as np

from .ir import Layer, Tensor

F32 = np.float32


def multiplier(s_in, s_out):
    return F32(F32(s_in) / F32(s_out))


def quantize(y, t):
    """ONNX QuantizeLinear of float32 values into tensor t's int8 grid (round half to even)."""
    return np.clip(np.rint(np.asarray(y, F32) / F32(t.scale)) + t.zero_point, -128, 127).astype(np.int8)


def act_range(out, lo=None, hi=None):
    """Integer clamp bounds of a fused activation with float bounds lo/hi (None: unbounded)."""
    qlo = -128 if lo is None else int(quantize(lo, out))
    qhi = 127 if hi is None else int(quantize(hi, out))
    return {"act_min": qlo, "act_max": qhi}


def conv2d(name, x, w, w_scale, bias, out, strides, pads, dilations, group, act):
    """w: int8 OIHW (I = in channels / group), w_scale per output channel, bias int32 or None."""
    oc, icg, kh, kw = w.shape
    params = [Tensor(name + "_weights", (oc, kh, kw, icg), "int8", w_scale, 0,
                     np.ascontiguousarray(w.transpose(0, 2, 3, 1)))]
    if bias is not None:
        params.append(Tensor(name + "_bias", (oc,), "int32", F32(x.scale) * w_scale, 0, bias.astype(np.int32)))
    _, _, oh, ow = out.shape
    return Layer("conv2d", name, [x], out, params,
                 dict(act, multiplier=(F32(x.scale) * w_scale / F32(out.scale)).astype(F32), kernel=(kh, kw),
                      strides=tuple(strides), pads=tuple(pads[:2]), dilations=tuple(dilations), group=group,
                      has_bias=bias is not None, macc=oc * oh * ow * kh * kw * icg,
                      label="DepthwiseConv2D" if group > 1 and group == x.shape[1] else "Conv2D"))


def dense(name, x, w, w_scale, bias, out, act):
    """w: int8 [n_out, n_in]."""
    n, k = w.shape
    params = [Tensor(name + "_weights", (n, k), "int8", w_scale, 0, np.ascontiguousarray(w))]
    if bias is not None:
        params.append(Tensor(name + "_bias", (n,), "int32", F32(x.scale) * w_scale, 0, bias.astype(np.int32)))
    return Layer("dense", name, [x], out, params,
                 dict(act, multiplier=(F32(x.scale) * w_scale / F32(out.scale)).astype(F32), macc=n * k,
                      has_bias=bias is not None))


POOL_MODES = {"avgpool": 0, "maxpool": 1, "avgpool_codes": 2}     # nr_pool_s8's NR_POOL_* modes


def pool(name, x, out, kind, kernel, strides, pads, codes=False):
    """codes: an average of the codes themselves, rounded half away from zero (TFLite's
    AVERAGE_POOL_2D, whose output keeps the input's grid); else of the values, requantised."""
    mult = multiplier(x.scale, out.scale)
    if kind == "avgpool":
        mult = F32(mult / F32(kernel[0] * kernel[1]))
    mode = POOL_MODES["avgpool_codes" if codes else kind]
    return Layer(kind, name, [x], out, attrs={"kernel": tuple(kernel), "strides": tuple(strides),
                                              "pads": tuple(pads[:2]), "multiplier": mult, "mode": mode})


def lut(name, x, out, fn, label, per_channel=0, **facts):
    """A unary operator as a table over the 256 input codes: out = Q(fn(DQ(x))).
    With per_channel = C, fn(values, c) gives channel c's table (channel = logical axis 1).
    `facts` (e.g. alpha) describe the operator for writers of other formats."""
    xf = ((np.arange(-128, 128, dtype=F32) - F32(x.zero_point)) * F32(x.scale)).astype(F32)
    tables = [fn(xf, c) for c in range(per_channel)] if per_channel else [fn(xf)]
    data = np.stack([quantize(t, out) for t in tables])
    inner = 1
    if per_channel and len(x.shape) != 4:
        inner = int(np.prod(x.shape[2:], dtype=np.int64))
    table = Tensor(name + "_table", data.shape, "int8", 1.0, 0, data)
    return Layer("lut", name, [x], out, [table], dict(facts, inner=inner, n_tables=len(tables), label=label))


def dequantize(q, scale, zp):
    return ((np.asarray(q).astype(F32) - np.asarray(zp).astype(F32)) * np.asarray(scale, F32)).astype(F32)


def prelu(name, x, out, slope, quantized=None):
    """PRelu with one slope or one per channel (logical axis 1); `quantized` = (q, scale, zp) of an
    int8 slope constant, kept for writers of other formats. None when the slope shape does not fit."""
    slope = np.asarray(slope, F32).reshape(-1)
    facts = {"slope": slope, "slope_quantized": quantized}
    if slope.size == 1:
        return lut(name, x, out, lambda v: np.where(v >= 0, v, v * slope[0]).astype(F32), "PRelu", **facts)
    if slope.size == x.shape[1]:
        return lut(name, x, out, lambda v, c: np.where(v >= 0, v, v * slope[c]).astype(F32), "PRelu",
                   per_channel=x.shape[1], **facts)
    return None


def _rows_desc(rows):
    return np.asarray(rows, np.int32).reshape(-1)


def gather_part(x, out, amap, start=None, count=None):
    """One strided copy of x into out. amap[a] = (source axis of x or None, start, step) for each
    logical axis a of out; count/start (optional) restrict the written region of out."""
    os_, is_ = out.strides(), x.strides()
    rows, offset = [], 0
    for a in out.mem_axes:
        src, s0, step = amap[a]
        n = count[a] if count else out.shape[a]
        rows.append((n, os_[a], is_[src] if src is not None else 0, s0, step,
                     x.shape[src] if src is not None else 1))
        offset += (start[a] if start else 0) * os_[a]
    return {"input": x, "desc": _rows_desc(rows), "out_offset": offset}


def gather(name, inputs_parts, out, label, pad_value=0.0, **facts):
    parts = [dict(p, multiplier=multiplier(p["input"].scale, out.scale)) for p in inputs_parts]
    inputs = []
    for p in parts:
        if all(p["input"] is not t for t in inputs):
            inputs.append(p["input"])
    return Layer("gather", name, inputs, out, attrs=dict(facts, parts=parts, label=label,
                                                         pad_value=int(quantize(pad_value, out))))


def reshape(name, x, out, label="Reshape", memory_order=False):
    """Same elements, new shape: logical row-major order kept (ONNX), or memory order kept
    (TFLite, whose logical order is our memory order). None when not expressible."""
    if memory_order or (x.mem_axes == tuple(range(len(x.shape))) and out.mem_axes == tuple(range(len(out.shape)))) \
            or tuple(x.shape) == tuple(out.shape):
        rows = [(x.count, 1, 1, 0, 1, x.count)]
    elif len(out.shape) != 4:   # channel-last x → row-major out: walk x's logical axes
        fs, ms = x.flat_strides, x.strides()
        rows = [(x.shape[a], fs[a], ms[a], 0, 1, x.shape[a]) for a in range(len(x.shape))]
    elif len(x.shape) != 4:     # row-major x → channel-last out: walk out's logical axes
        fs, ms = out.flat_strides, out.strides()
        rows = [(out.shape[a], ms[a], fs[a], 0, 1, x.count) for a in range(len(out.shape))]
    else:
        return None
    return gather(name, [{"input": x, "desc": _rows_desc(rows), "out_offset": 0}], out, label)


def _broadcast_strides(t, out):
    n, r, st = len(out.shape), len(t.shape), t.strides()
    return {a: (st[a - (n - r)] if a - (n - r) >= 0 and t.shape[a - (n - r)] > 1 else 0) for a in range(n)}


def fixed_multipliers(ma, mb):
    """Add's two scale ratios as integers and a shift, the way LiteRT's default (XNNPACK) kernels
    compute a TFLite ADD: the larger ratio gets 21 significant bits, out = (sum + 2^(shift-1)) >> shift."""
    shift = 20 - (int(np.frexp(max(ma, mb))[1]) - 1)
    return int(np.rint(np.ldexp(np.float64(ma), shift))), int(np.rint(np.ldexp(np.float64(mb), shift))), shift


def eltwise(name, op, a, b, out, act, fixed=False):
    """fixed: an Add with integer multipliers (fixed_multipliers), for TFLite models; else float ratios."""
    sa, sb = _broadcast_strides(a, out), _broadcast_strides(b, out)
    rows = [(out.shape[ax], sa[ax], sb[ax]) for ax in out.mem_axes]
    if op == "mul":
        ma, mb = F32(F32(a.scale) * F32(b.scale) / F32(out.scale)), F32(0)
    else:
        ma, mb = multiplier(a.scale, out.scale), multiplier(b.scale, out.scale)
    facts = {}
    if fixed and op == "add":
        facts = dict(zip(("fixed_a", "fixed_b", "shift"), fixed_multipliers(ma, mb)))
    params = [t for t in (a, b) if t.is_param]
    return Layer("eltwise", name, [t for t in (a, b) if not t.is_param], out, params,
                 dict(act, **facts, op=op, a=a, b=b, desc=np.asarray(rows, np.int32).reshape(-1), mult_a=ma,
                      mult_b=mb, label="Add" if op == "add" else "Mul", macc=out.count))


COORD = {"half_pixel": 0, "asymmetric": 1, "align_corners": 2, "pytorch_half_pixel": 3}
NEAREST = {"round_prefer_floor": 0, "round_prefer_ceil": 1, "floor": 2, "ceil": 3}


def resize(name, x, out, bilinear, coord, nearest, scales):
    return Layer("resize", name, [x], out, attrs={
        "bilinear": int(bilinear), "coord": COORD[coord], "nearest": NEAREST[nearest],
        "scales": (F32(scales[0]), F32(scales[1]))})


def convert(name, x, out, mode):
    """A change of type at the graph's edge: float32 / uint8 ↔ int8 (mode "<from>_to_<to>")."""
    return Layer("convert", name, [x], out, attrs={"mode": mode})


def softmax(name, x, out):
    n = x.shape[1] if len(x.shape) == 4 else x.shape[-1]
    return Layer("softmax", name, [x], out, attrs={"n": n})
