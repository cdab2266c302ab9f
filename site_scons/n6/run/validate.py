"""`scons validate`: the board's outputs against the reference (n6.run.reference), reported
like `stedgeai validate --mode target`: per output ST's metrics (acc, rmse, mae, l2r, cos on the
dequantised values) beside ours (mean / max absolute error in LSB, top-1 agreement), pass/fail
against a tolerance in LSB."""
import numpy as np
from collections.abc import Sequence

from tabulate import tabulate

from ..errors import N6Error
from .arrays import named_arrays
from ..aivalidation.messages import ModelInfo, TensorDesc
from ..jsonfile import JsonObject
from .options import NPU_MAX_LSB, NPU_TIE_LSB, TOLERANCE_LSB, rule_words
from .reference import board_grid, convert


def test_set(path: str, model: ModelInfo) -> tuple[list[list[bytes]], np.ndarray]:
    """A model folder's `test_data.npz` (`x` float samples as the source model takes them, `y`
    labels): the samples quantised like the board's input, one run each, and the labels."""
    fix = "save arrays x (samples) and y (labels) with numpy.savez"
    data = named_arrays(path, "test set", fix)
    if "x" not in data or "y" not in data:
        raise N6Error(path, f"holds {', '.join(str(k) for k in data)}, not arrays x and y", fix)
    x, y = data["x"].astype(np.float32), data["y"].reshape(-1)
    desc = model.inputs[0]
    if len(model.inputs) != 1 or x.size != len(y) * desc.size:
        raise N6Error(path, f"{x.shape} samples for input '{desc.name}' of {desc.size} values",
                      "save one sample of the model's single input per label")
    q = convert(x.reshape(len(y), -1), np.float32, None, desc.dtype, board_grid(desc))
    return [[row.tobytes()] for row in q], y


def accuracy(outputs: np.ndarray, labels: np.ndarray) -> tuple[int, float]:
    """Top-1 accuracy of the first output's scores: (correct samples, fraction)."""
    correct = int(np.sum(np.argmax(outputs.reshape(len(outputs), -1), axis=1) == labels))
    return correct, correct / len(labels)


def accuracy_report(board: np.ndarray, reference: np.ndarray, labels: np.ndarray, path: str,
                    reference_name: str) -> tuple[str, JsonObject]:
    """(text, JSON-able dict) of top-1 accuracy on the test set, board next to the reference."""
    (nb, ab), (nr, ar) = accuracy(board, labels), accuracy(reference, labels)
    n = len(labels)
    table = tabulate([["board", f"{nb}/{n}", f"{ab * 100:.2f}%"], [reference_name, f"{nr}/{n}", f"{ar * 100:.2f}%"]],
                     headers=[f"test set ({n} samples)", "correct", "top-1 accuracy"], tablefmt="simple")
    return table, {"test_data": path, "samples": n, "board": {"correct": nb, "accuracy": ab},
                   "reference": {"correct": nr, "accuracy": ar}}


def metrics(got: np.ndarray, want: np.ndarray, lsb: float = 1.0, tie: float = 0.0) -> dict[str, float]:
    """Our per-output figures over all runs: mean and max absolute error in LSB and top-1
    agreement; `got` and `want` are (runs, ...) arrays, `lsb` the size of one LSB in their values
    (a float output: the scale of its int8 grid). `top1`: the reference ranks the board's top-1
    best; `top1_tie`: best or within `tie` LSB of its best (a near tie the rule cannot settle);
    `top1_gap_lsb`: the most, over the runs, the reference scores the board's top-1 below its best."""
    g = got.reshape(len(got), -1).astype(np.float64)
    w = want.reshape(len(want), -1).astype(np.float64)
    diff = np.abs(g - w) / lsb
    gap = (w.max(axis=1) - w[np.arange(len(w)), np.argmax(g, axis=1)]) / lsb
    return {"mean_abs_lsb": float(diff.mean()), "max_abs_lsb": float(diff.max()), "exact": float(np.mean(diff == 0)),
            "top1": float(np.mean(gap <= 0)), "top1_tie": float(np.mean(gap <= tie)), "top1_gap_lsb": float(gap.max())}


def real_values(x: np.ndarray, desc: TensorDesc) -> np.ndarray:
    """An output's values as ST's checker compares them: dequantised with the tensor's scale and
    zero point, in single precision (float outputs as they are)."""
    return convert(np.asarray(x).reshape(len(x), -1), desc.dtype, board_grid(desc), np.float32, None)


def st_metrics(got: np.ndarray, want: np.ndarray, desc: TensorDesc) -> dict[str, float]:
    """ST's validation metrics of one output (`stedgeai validate`, its checker): on the dequantised
    values, in single precision. acc: share of runs whose top-1 class agrees (for a classifier);
    rmse, mae: root mean square and mean absolute error; l2r: norm of the error over the norm of
    the reference; cos: cosine similarity, its denominator's prediction norm taken with float32's
    epsilon added, and 1 when numerator and denominator agree within that epsilon."""
    pred, ref = real_values(got, desc), real_values(want, desc)
    d = ref - pred
    eps = np.finfo(np.float32).eps
    num = np.dot(ref.reshape(-1), pred.reshape(-1))
    den = np.linalg.norm(ref.reshape(-1)) * np.linalg.norm(pred.reshape(-1) + eps)
    ref_norm = np.linalg.norm(ref.reshape(-1))
    return {"acc": float(np.mean(np.argmax(pred, axis=1) == np.argmax(ref, axis=1))),
            "rmse": float(np.sqrt(np.mean(d ** 2))), "mae": float(np.mean(np.abs(d))),
            "l2r": float(np.linalg.norm(d.reshape(-1)) / ref_norm) if ref_norm else float(np.linalg.norm(d)),
            "cos": 1.0 if np.isclose(num, den, rtol=eps) else float(np.float32(num / den))}


def validate(model: ModelInfo, got_outputs: Sequence[np.ndarray], ref_outputs: Sequence[np.ndarray],
             tolerance: float | None, reference: str, lsb: Sequence[float] | None = None,
             simulated_npu: bool = False) -> tuple[str, JsonObject, bool]:
    """(text, JSON-able dict, passed): per output ST's metrics (`st`) beside ours, pass/fail on
    ours. `tolerance`: VALIDATE_TOLERANCE= (None: not given); `lsb`: per output, the size of one
    LSB (n6.run.reference.Reference.lsb); `simulated_npu`: the outputs come from the simulated
    board's NPU model: its bound (NPU_MAX_LSB) unless a tolerance is given, which wins (a user
    tightening it to catch drift, or loosening it, asked for that figure), and the top-1 near
    tie (NPU_TIE_LSB), a figure of its own that no tolerance changes."""
    rows, per = [], []
    passed = True
    given = tolerance is not None
    tol = tolerance if tolerance is not None else NPU_MAX_LSB if simulated_npu else TOLERANCE_LSB
    tie = NPU_TIE_LSB if simulated_npu else 0
    for desc, got, want, unit in zip(model.outputs, got_outputs, ref_outputs, lsb or [1.0] * len(model.outputs)):
        want = want.reshape(got.shape)
        m, st = metrics(got, want, unit, tie), st_metrics(got, want, desc)
        ok = m["max_abs_lsb"] <= tol and m["top1_tie"] == 1.0
        passed &= ok
        per.append({"name": desc.name, **m, "st": st, "passed": ok})
        rows.append([desc.name, f"{st['acc'] * 100:.2f}%", f"{st['rmse']:.8f}", f"{st['mae']:.8f}",
                     f"{st['l2r']:.8f}", f"{st['cos']:.6f}", f"{m['mean_abs_lsb']:.3f}", f"{m['max_abs_lsb']:.0f}",
                     f"{m['exact'] * 100:.1f}%", f"{m['top1'] * 100:.1f}%"] +
                    ([f"{m['top1_tie'] * 100:.1f}%"] if tie else []) + ["ok" if ok else "FAIL"])
    table = tabulate(rows, headers=["output", "acc", "rmse", "mae", "l2r", "cos", "mean |err| LSB", "max |err| LSB",
                                    "exact", "top-1"] + ([f"top-1 tie {tie} LSB"] if tie else []) + [""],
                     tablefmt="simple", disable_numparse=True)
    words = rule_words(tol, given, tie)
    rule = f"simulated NPU: {words} (docs/validate.md)" if simulated_npu else f"tolerance: {words}"
    text = (f"  reference: {reference}; {rule}\n"
            f"  acc rmse mae l2r cos: ST's metrics on the dequantised values; LSB and top-1: ours\n{table}")
    return text, {"reference": reference, "rule": "simulated NPU" if simulated_npu else "tolerance",
                  "tolerance_lsb": tol, "tolerance_given": given, "tie_lsb": tie, "outputs": per,
                  "passed": passed}, passed
