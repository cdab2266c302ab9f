"""Validation's figures at their edges, in-process: the test set's shape rules, top-1 accuracy and
its table, our LSB metrics in units of each output's LSB, ST's metrics where a branch decides
(a zero reference, a cosine whose epsilon matters) and pass/fail at exactly the tolerance."""
from types import SimpleNamespace as NS

import numpy as np
import pytest

from n6.aivalidation.messages import TensorDesc
from n6.errors import N6Error
from n6.run import validate as v
from n6.run.validate import accuracy, accuracy_report, metrics, real_values, st_metrics, validate

IN = TensorDesc("x", "int8", (1, 4), 0.5, 1)
SCORES = TensorDesc("scores", "int8", (1, 3), 0.25, -2)
FLOAT = TensorDesc("f", "float32", (1, 2))


def test_the_test_set_is_quantised_like_the_boards_input(tmp_path):
    path = tmp_path / "test_data.npz"
    np.savez(path, x=np.array([[0, 0.5, 1.0, -0.5], [1.5, 2, -1, 0]]), y=np.array([[2], [0]]))
    runs, y = v.test_set(str(path), NS(inputs=[IN]))
    assert runs == [[bytes([1, 2, 3, 0])], [bytes([4, 5, 0xFF, 1])]] and y.tolist() == [2, 0]


@pytest.mark.parametrize("inputs, x", [([IN], np.zeros((2, 5))), ([IN, IN], np.zeros((2, 4))),
                                       ([IN], np.zeros((3, 4)))])
def test_a_test_set_of_another_shape_is_one_line(tmp_path, inputs, x):
    path = tmp_path / "test_data.npz"
    np.savez(path, x=x, y=np.zeros(2))
    shape = rf"\({x.shape[0]}, {x.shape[1]}\)"
    with pytest.raises(N6Error, match=rf"test_data.npz: {shape} samples for input 'x' of 4 values"):
        v.test_set(str(path), NS(inputs=inputs))
    np.savez(path, x=x)
    with pytest.raises(N6Error, match=r"test_data.npz: holds x, not arrays x and y \(fix: save arrays x"):
        v.test_set(str(path), NS(inputs=inputs))


def test_accuracy_counts_the_top_1_of_each_run():
    scores = np.array([[[0, 9, 1, 0]], [[5, 0, 1, 0]], [[0, 1, 2, 0]]])
    assert accuracy(scores, np.array([1, 0, 0])) == (2, 2 / 3)
    text, doc = accuracy_report(scores, scores[[0, 0, 2]], np.array([1, 0, 0]), "t.npz", "LiteRT")
    assert [line.split() for line in text.splitlines()[2:]] == [["board", "2/3", "66.67%"], ["LiteRT", "1/3", "33.33%"]]
    assert doc == {"test_data": "t.npz", "samples": 3, "board": {"correct": 2, "accuracy": 2 / 3},
                   "reference": {"correct": 1, "accuracy": 1 / 3}}


def test_our_metrics_are_in_lsb_of_the_output():
    want = np.array([[[0, 4, 8]], [[8, 0, 0]]], np.int8)
    got = np.array([[[2, 4, 7]], [[0, 6, 0]]], np.int8)
    assert metrics(got, want) == {"mean_abs_lsb": 17 / 6, "max_abs_lsb": 8.0, "exact": 2 / 6, "top1": 0.5,
                                  "top1_tie": 0.5, "top1_gap_lsb": 8.0}
    assert metrics(got, want, 0.5) == {"mean_abs_lsb": 34 / 6, "max_abs_lsb": 16.0, "exact": 2 / 6, "top1": 0.5,
                                       "top1_tie": 0.5, "top1_gap_lsb": 16.0}


def test_real_values_are_dequantised_in_single_precision():
    got = real_values(np.array([[[-2, 2, 6]]], np.int8), SCORES)
    assert got.dtype == np.float32 and got.tolist() == [[0.0, 1.0, 2.0]]


def test_st_metrics_of_a_zero_reference_and_of_a_tiny_prediction():
    zero = np.zeros((1, 2), np.float32)
    m = st_metrics(np.array([[3, 4]], np.float32), zero, FLOAT)
    assert (m["l2r"], m["rmse"], m["mae"]) == (5.0, pytest.approx(np.sqrt(12.5)), 3.5)
    assert st_metrics(zero, zero, FLOAT)["cos"] == 1.0           # 0 = 0 within epsilon
    eps = np.finfo(np.float32).eps
    tiny = st_metrics(np.array([[eps, 0]], np.float32), np.array([[1, 1]], np.float32), FLOAT)
    assert tiny["cos"] == pytest.approx(1 / np.sqrt(10), rel=1e-6)   # eps / (sqrt 2 * |(2 eps, eps)|)
    m = st_metrics(np.array([[[-2, 2, 6]], [[6, 2, -2]]], np.int8), np.array([[[-2, 2, 10]], [[-2, 2, 10]]], np.int8),
                   SCORES)
    assert (m["acc"], m["rmse"], m["mae"]) == (0.5, pytest.approx(np.sqrt(14 / 6)), 1.0)


def _validate(got, want, tolerance, lsb=None):
    model = NS(outputs=[SCORES, SCORES])
    return validate(model, [got, got], [want, want], tolerance, "ref", lsb)


def test_an_output_passes_at_exactly_its_tolerance_and_the_same_top_1():
    want = np.array([[[0, 4, 8]]], np.int8)
    got = np.array([[[2, 4, 8]]], np.int8)
    text, doc, passed = _validate(got, want, 2)
    assert passed and [o["passed"] for o in doc["outputs"]] == [True, True]
    row = text.splitlines()[4].split()
    assert row[:2] == ["scores", "100.00%"] and row[-5:] == ["0.667", "2", "66.7%", "100.0%", "ok"]
    assert not _validate(got, want, 1)[2]
    _, doc, passed = _validate(got, want, 1, lsb=[0.5, 2.0])
    assert [o["max_abs_lsb"] for o in doc["outputs"]] == [4.0, 1.0] and not passed
    assert [o["passed"] for o in doc["outputs"]] == [False, True]
    flipped = np.array([[[0, 9, 8]]], np.int8)                   # 5 LSB, and the top-1 moves
    text, doc, passed = _validate(flipped, want, 5)
    assert not passed and doc["outputs"][0]["top1"] == 0.0 and text.splitlines()[4].split()[-2:] == ["0.0%", "FAIL"]
