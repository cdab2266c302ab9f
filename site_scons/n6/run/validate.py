"""`scons validate`: the board's outputs against a host reference of the same model, reported
like `stedgeai validate --mode target`: per output L2 relative error, mean / max absolute error
in LSB, cosine similarity, top-1 agreement, and pass/fail against a tolerance in LSB."""
import numpy as np
from tabulate import tabulate

from ..errors import N6Error
from .reference import quantize


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
