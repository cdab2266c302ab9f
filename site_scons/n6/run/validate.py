"""`scons validate`: the board's outputs against a host reference of the same model, reported
like `stedgeai validate --mode target`: per output L2 relative error, mean / max absolute error
in LSB, cosine similarity, top-1 agreement, and pass/fail against a tolerance in LSB."""
import numpy as np
from tabulate import tabulate

from ..errors import N6Error


def onnx_reference(model_file, model, inputs):
    """Evaluate the ONNX model with onnxruntime on the board's (quantised) inputs; returns the
    outputs quantised like the board's outputs, one array (runs, n) per output."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise N6Error(model_file, "onnxruntime is not installed", "install requirements.txt (./n6 setup)") from None
    sess = ort.InferenceSession(model_file, providers=["CPUExecutionProvider"])
    feeds = sess.get_inputs()
    outs = [[] for _ in model.outputs]
    for bufs in inputs:
        feed = {}
        for meta, desc, raw in zip(feeds, model.inputs, bufs):
            x = np.frombuffer(raw, desc.dtype).reshape(desc.shape)
            x = (x.astype(np.float32) - desc.zero_point) * desc.scale if desc.scale else x.astype(np.float32)
            shape = [d if isinstance(d, int) else 1 for d in meta.shape]
            if len(shape) == 4 and x.size == np.prod(shape) and tuple(x.shape[-3:]) == (shape[2], shape[3], shape[1]):
                x = x.reshape(1, shape[2], shape[3], shape[1]).transpose(0, 3, 1, 2)   # channel-last buffer
            feed[meta.name] = np.ascontiguousarray(x.reshape(shape), dtype=np.float32)
        for j, (y, desc) in enumerate(zip(sess.run(None, feed), model.outputs)):
            outs[j].append(quantize(np.asarray(y).reshape(-1), desc))
    return [np.stack(o) for o in outs]


def quantize(y, desc):
    dt = np.dtype(desc.dtype)
    if dt.kind == "f" or not desc.scale:
        return y.astype(dt)
    info = np.iinfo(dt)
    return np.clip(np.round(y / desc.scale) + desc.zero_point, info.min, info.max).astype(dt)


def metrics(got, want):
    """Per-output figures over all runs; `got` and `want` are (runs, ...) arrays."""
    g = got.reshape(len(got), -1).astype(np.float64)
    w = want.reshape(len(want), -1).astype(np.float64)
    diff = np.abs(g - w)
    norm = np.linalg.norm(w)
    cos = float(np.sum(g * w) / (np.linalg.norm(g) * norm)) if norm and np.linalg.norm(g) else 1.0 * (norm == 0)
    return {"l2r": float(np.linalg.norm(g - w) / norm) if norm else float(np.linalg.norm(g - w)),
            "mean_abs_lsb": float(diff.mean()), "max_abs_lsb": float(diff.max()), "cosine": cos,
            "top1": float(np.mean(np.argmax(g, axis=1) == np.argmax(w, axis=1)))}


def validate(model, got_outputs, ref_outputs, tolerance, reference):
    """(text, JSON-able dict, passed)."""
    rows, per = [], []
    passed = True
    for desc, got, want in zip(model.outputs, got_outputs, ref_outputs):
        m = metrics(got, want.reshape(got.shape))
        ok = m["max_abs_lsb"] <= tolerance and m["top1"] == 1.0
        passed &= ok
        per.append({"name": desc.name, **m, "passed": ok})
        rows.append([desc.name, f"{m['l2r']:.6f}", f"{m['mean_abs_lsb']:.3f}", f"{m['max_abs_lsb']:.0f}",
                     f"{m['cosine']:.6f}", f"{m['top1'] * 100:.1f}%", "ok" if ok else "FAIL"])
    table = tabulate(rows, headers=["output", "l2r", "mean |err| LSB", "max |err| LSB", "cosine", "top-1", ""],
                     tablefmt="simple")
    text = f"  reference: {reference}; tolerance {tolerance} LSB and the same top-1\n{table}"
    return text, {"reference": reference, "tolerance_lsb": tolerance, "outputs": per, "passed": passed}, passed
