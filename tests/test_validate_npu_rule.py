"""The validate rule for outputs the simulated board's NPU model computes from a real ST Edge AI
Core's network.c (docs/validate.md): at most NPU_MAX_LSB from the reference (an explicit
VALIDATE_TOLERANCE wins) and the same top-1 or a near tie within NPU_TIE_LSB, a figure of its
own; where the arithmetic is exact the tolerance rule stays. Which networks it applies to:
st_npu_epochs."""
from types import SimpleNamespace as NS

import numpy as np

from n6.aivalidation.messages import TensorDesc
from n6.run.reference import st_npu_epochs
from n6.run.validate import NPU_MAX_LSB, NPU_TIE_LSB, metrics, validate
from n6.stedgeai_install import SIMULATED_AUTHOR

SCORES = TensorDesc("scores", "int8", (1, 100), 0.25, 0)
MODEL = NS(outputs=[SCORES])


def _runs(*rows):
    return np.array([[r] for r in rows], np.int8)


def test_a_near_tie_counts_as_the_same_top_1_within_the_tie():
    want = _runs([0] * 97 + [40, 50, 0])
    got = _runs([0] * 97 + [52, 50, 0])          # the board picks the reference's second, 10 LSB below its best
    assert metrics(got, want)["top1"] == metrics(got, want)["top1_tie"] == 0.0
    assert metrics(got, want, tie=10)["top1_tie"] == 1.0 and metrics(got, want, tie=9)["top1_tie"] == 0.0
    assert metrics(got, want, 0.5, tie=20)["top1_tie"] == 1.0 and metrics(got, want, 0.5, tie=19)["top1_tie"] == 0.0
    assert metrics(got, want, tie=10)["top1"] == 0.0                 # the strict figure stays apart
    assert metrics(got, want)["top1_gap_lsb"] == 10.0 and metrics(got, want, 0.5)["top1_gap_lsb"] == 20.0


def _validate(got, simulated_npu=True, tolerance=None):
    want = np.zeros((2, 1, 100), np.int8)
    want[:, 0, 70] = 100
    want[:, 0, 10] = 100 - NPU_TIE_LSB            # the runner-up, a near tie
    want[:, 0, 20] = 100 - NPU_TIE_LSB - 1        # and one just beyond it
    return validate(MODEL, [got], [want], tolerance, "LiteRT", simulated_npu=simulated_npu)


def _board(peak, **others):
    """The reference's values with the peak (class 70) at `peak` and `others` (class → value)."""
    got = np.zeros((2, 1, 100), np.int8)
    got[:, 0, [70, 10, 20]] = peak, 100 - NPU_TIE_LSB, 100 - NPU_TIE_LSB - 1
    for k, value in others.items():
        got[:, 0, int(k[1:])] = value
    return got


def test_simulated_npu_outputs_pass_within_the_drift_and_fail_beyond_it():
    text, report, passed = _validate(_board(100 - NPU_MAX_LSB))
    assert passed and report["rule"] == "simulated NPU" and report["tolerance_lsb"] == NPU_MAX_LSB
    assert (report["tie_lsb"], report["tolerance_given"]) == (NPU_TIE_LSB, False)
    assert f"simulated NPU: <= {NPU_MAX_LSB} LSB, top-1 within {NPU_TIE_LSB} LSB (docs/validate.md)" in text
    assert not _validate(_board(100 - NPU_MAX_LSB - 1))[2]              # one value too far
    assert not _validate(_board(97), simulated_npu=False)[2]            # the exact rule: 2 LSB
    assert _validate(_board(98), simulated_npu=False)[2]
    text, report, passed = _validate(_board(80, c10=81))                # the near tie picked, 20-29 LSB off
    assert passed and [(o["top1"], o["top1_tie"], o["top1_gap_lsb"]) for o in report["outputs"]] == [(0.0, 1.0, 48.0)]
    assert f"top-1 tie {NPU_TIE_LSB} LSB" in text.splitlines()[2]
    assert not _validate(_board(80, c20=81))[2]                         # a class beyond the tie picked


def test_an_explicit_tolerance_wins_over_the_simulated_npu_bound_but_not_the_tie():
    """VALIDATE_TOLERANCE= given: its figure bounds the error (a user tightening it to catch
    drift, or loosening it, asked for that figure); the near tie is a figure of its own."""
    text, report, passed = _validate(_board(97), tolerance=2.0)         # 3 LSB off
    assert not passed and report["tolerance_lsb"] == 2.0 and report["tolerance_given"] is True
    assert f"simulated NPU: <= 2 LSB (VALIDATE_TOLERANCE), top-1 within {NPU_TIE_LSB} LSB" in text
    assert _validate(_board(97), tolerance=3.0)[2]
    assert _validate(_board(100 - NPU_MAX_LSB - 1), tolerance=NPU_MAX_LSB + 1)[2]   # loosened
    assert _validate(_board(80, c10=81), tolerance=29)[2]               # the tie of 48 LSB, the bound 29
    assert not _validate(_board(80, c10=81), tolerance=28)[2]


def test_st_npu_epochs_counts_a_real_tools_npu_epochs_only(tmp_path):
    real = "/* ST Edge AI Core v2.2 */\nEpochBlock_Flags_pure_hw\nEpochBlock_Flags_hybrid\nEpochBlock_Flags_pure_sw\n"
    (tmp_path / "network.c").write_text(real)
    (tmp_path / "network.h").write_text("EpochBlock_Flags_blob")
    assert st_npu_epochs(str(tmp_path)) == 2
    (tmp_path / "network.c").write_text(f"/* {SIMULATED_AUTHOR} */\n" + real)
    assert st_npu_epochs(str(tmp_path)) == 0
