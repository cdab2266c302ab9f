"""`scons validate`: the board's outputs against a host reference of the same model, reported
like `stedgeai validate --mode target`: per output L2 relative error, mean / max absolute error
in LSB, cosine similarity, top-1 agreement, and pass/fail against a tolerance in LSB."""
import numpy as np
from tabulate import tabulate

from ..errors import N6Error


def io_quantization(model_file):
    """(inputs, outputs) of a QDQ ONNX model: per graph input the (scale, zero point) of the
    QuantizeLinear that takes it, per graph output those of the DequantizeLinear that gives it;
    None where there is none or it is per-axis. A model built with float inputs/outputs
    (`input_data_type`/`output_data_type` float32) computes on these int8 grids: its generated
    code quantises the float inputs and dequantises the int8 outputs with them."""
    import onnx
    from onnx import numpy_helper
    graph = onnx.load(model_file).graph
    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute:
            consts[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)

    def grid(node):
        scale = consts.get(node.input[1])
        zp = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else np.int8(0)
        if scale is None or np.size(scale) != 1 or zp is None or np.size(zp) != 1:
            return None
        return float(np.float32(scale.reshape(-1)[0])), int(zp.reshape(-1)[0])

    first = {n.input[0]: n for n in graph.node if n.op_type == "QuantizeLinear"}
    last = {n.output[0]: n for n in graph.node if n.op_type == "DequantizeLinear"}
    return ([grid(first[i.name]) if i.name in first else None for i in graph.input if i.name not in consts],
            [grid(last[o.name]) if o.name in last else None for o in graph.output])


def quantize_as_deployed(x, scale, zero_point):
    """Float values to int8 the way the generated input conversion does (the runtime's
    nr_quantize_f32): x / scale in single precision, nearest integer with ties to even, plus the
    zero point, saturated to [-128, 127] (a quotient beyond the int32 range saturates first)."""
    with np.errstate(over="ignore"):
        v = np.asarray(x, np.float32) / np.float32(scale)
    q = np.rint(np.clip(v, -2.0 ** 31, 2.0 ** 31 - 128)).astype(np.int64) + zero_point
    return np.clip(q, -128, 127).astype(np.int8)


def dequantize_as_deployed(q, scale, zero_point):
    """int8 values to float the way the generated output conversion does (nr_dequantize_s8):
    (float)(q - zero_point) * scale in single precision."""
    return (np.asarray(q, np.int32) - zero_point).astype(np.float32) * np.float32(scale)


def float_grid(desc, grids, k):
    """The int8 grid behind tensor `k` when it is a float tensor of the board (None otherwise)."""
    return grids[k] if np.dtype(desc.dtype).kind == "f" and k < len(grids) else None


def output_lsb(grids, model):
    """Per output, the size of one LSB in the board's output values: 1 for an integer output,
    the scale of the int8 grid behind a float output (`grids`: io_quantization's outputs; 1
    when the model gives none)."""
    return [(float_grid(d, grids, j) or (1.0,))[0] for j, d in enumerate(model.outputs)]


def onnx_reference(model_file, model, inputs, grids):
    """Evaluate the ONNX model with onnxruntime on the board's inputs; returns the outputs
    quantised like the board's outputs, one array (runs, n) per output. A float input or output
    goes through the model's int8 grid (`grids`: io_quantization's) as the deployed model's conversions do: the input is
    quantised (then given to onnxruntime dequantised), the output quantised then dequantised."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise N6Error(model_file, "onnxruntime is not installed", "install requirements.txt (./n6 setup)") from None
    sess = ort.InferenceSession(model_file, providers=["CPUExecutionProvider"])
    feeds = sess.get_inputs()
    grids_in, grids_out = grids
    outs = [[] for _ in model.outputs]
    for bufs in inputs:
        feed = {}
        for k, (meta, desc, raw) in enumerate(zip(feeds, model.inputs, bufs)):
            x = np.frombuffer(raw, desc.dtype).reshape(desc.shape)
            grid = float_grid(desc, grids_in, k)
            if grid:
                x = dequantize_as_deployed(quantize_as_deployed(x, *grid), *grid)
            x = (x.astype(np.float32) - desc.zero_point) * desc.scale if desc.scale else x.astype(np.float32)
            shape = [d if isinstance(d, int) else 1 for d in meta.shape]
            if len(shape) == 4 and x.size == np.prod(shape) and tuple(x.shape[-3:]) == (shape[2], shape[3], shape[1]):
                x = x.reshape(1, shape[2], shape[3], shape[1]).transpose(0, 3, 1, 2)   # channel-last buffer
            feed[meta.name] = np.ascontiguousarray(x.reshape(shape), dtype=np.float32)
        for j, (y, desc) in enumerate(zip(sess.run(None, feed), model.outputs)):
            y = np.asarray(y)
            if y.ndim == 4 and tuple(desc.shape[-3:]) == (y.shape[2], y.shape[3], y.shape[1]) != y.shape[1:]:
                y = y.transpose(0, 2, 3, 1)        # the board's buffer is channel-last, like its inputs
            grid = float_grid(desc, grids_out, j)
            if grid:
                y = dequantize_as_deployed(quantize_as_deployed(y, *grid), *grid)
            outs[j].append(quantize(y.reshape(-1), desc))
    return [np.stack(o) for o in outs]


def quantize(y, desc):
    dt = np.dtype(desc.dtype)
    if dt.kind == "f" or not desc.scale:
        return y.astype(dt)
    info = np.iinfo(dt)
    return np.clip(np.round(y / desc.scale) + desc.zero_point, info.min, info.max).astype(dt)


def test_set(path, model):
    """A model folder's `test_data.npz` (`x` float samples as the source model takes them, `y`
    labels): the samples quantised like the board's input, one run each, and the labels."""
    try:
        data = np.load(path)
        x, y = np.asarray(data["x"], np.float32), np.asarray(data["y"]).reshape(-1)
    except (OSError, ValueError, KeyError) as e:
        raise N6Error(path, f"cannot read the test set: {e}", "save arrays x (samples) and y (labels)") from None
    desc = model.inputs[0]
    if len(model.inputs) != 1 or x.size != len(y) * desc.size:
        raise N6Error(path, f"{x.shape} samples for input '{desc.name}' of {desc.size} values",
                      "save one sample of the model's single input per label")
    q = quantize(x.reshape(len(y), -1), desc)
    return [[row.tobytes()] for row in q], y


def accuracy(outputs, labels):
    """Top-1 accuracy of the first output's scores: (correct samples, fraction)."""
    correct = int(np.sum(np.argmax(outputs.reshape(len(outputs), -1), axis=1) == labels))
    return correct, correct / len(labels)


def accuracy_report(board, reference, labels, path, reference_name):
    """(text, JSON-able dict) of top-1 accuracy on the test set, board next to the reference."""
    (nb, ab), (nr, ar) = accuracy(board, labels), accuracy(reference, labels)
    n = len(labels)
    table = tabulate([["board", f"{nb}/{n}", f"{ab * 100:.2f}%"], [reference_name, f"{nr}/{n}", f"{ar * 100:.2f}%"]],
                     headers=[f"test set ({n} samples)", "correct", "top-1 accuracy"], tablefmt="simple")
    return table, {"test_data": path, "samples": n, "board": {"correct": nb, "accuracy": ab},
                   "reference": {"correct": nr, "accuracy": ar}}


def metrics(got, want, lsb=1.0):
    """Per-output figures over all runs; `got` and `want` are (runs, ...) arrays, `lsb` the size
    of one LSB in their values (a float output: the scale of its int8 grid)."""
    g = got.reshape(len(got), -1).astype(np.float64)
    w = want.reshape(len(want), -1).astype(np.float64)
    diff = np.abs(g - w) / lsb
    norm = np.linalg.norm(w)
    cos = float(np.sum(g * w) / (np.linalg.norm(g) * norm)) if norm and np.linalg.norm(g) else 1.0 * (norm == 0)
    return {"l2r": float(np.linalg.norm(g - w) / norm) if norm else float(np.linalg.norm(g - w)),
            "mean_abs_lsb": float(diff.mean()), "max_abs_lsb": float(diff.max()), "cosine": cos,
            "top1": float(np.mean(np.argmax(g, axis=1) == np.argmax(w, axis=1)))}


def validate(model, got_outputs, ref_outputs, tolerance, reference, lsb=None):
    """(text, JSON-able dict, passed). `lsb`: per output, the size of one LSB (output_lsb)."""
    rows, per = [], []
    passed = True
    for desc, got, want, unit in zip(model.outputs, got_outputs, ref_outputs, lsb or [1.0] * len(model.outputs)):
        m = metrics(got, want.reshape(got.shape), unit)
        ok = m["max_abs_lsb"] <= tolerance and m["top1"] == 1.0
        passed &= ok
        per.append({"name": desc.name, **m, "passed": ok})
        rows.append([desc.name, f"{m['l2r']:.6f}", f"{m['mean_abs_lsb']:.3f}", f"{m['max_abs_lsb']:.0f}",
                     f"{m['cosine']:.6f}", f"{m['top1'] * 100:.1f}%", "ok" if ok else "FAIL"])
    table = tabulate(rows, headers=["output", "l2r", "mean |err| LSB", "max |err| LSB", "cosine", "top-1", ""],
                     tablefmt="simple")
    text = f"  reference: {reference}; tolerance {tolerance} LSB and the same top-1\n{table}"
    return text, {"reference": reference, "tolerance_lsb": tolerance, "outputs": per, "passed": passed}, passed
