"""A soak row (bench/soak.py): the outputs and the cycles of the repeated sessions are judged
apart, so a session whose cycles drift while its outputs hold says exactly that."""
import os
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
from soak import main, soak  # noqa: E402


def _sessions(*runs):
    it = iter(runs)
    return lambda: next(it)


def test_outputs_and_cycles_are_judged_apart():
    first = [["a", [1.0, [100, 0]]], ["b", [1.0, [120, 0]]]]
    drifted = [["a", [1.0, [100, 0]]], ["b", [1.0, [123, 0]]]]
    row = soak("m", "twin", _sessions(first, drifted), 2)
    assert (row["outputs_identical"], row["cycles_identical"], row["cycles_differing"]) == (True, False, 1)
    row = soak("m", "twin", _sessions(first, [["a", [1.0, [100, 0]]], ["c", [1.0, [120, 0]]]]), 2)
    assert (row["outputs_identical"], row["cycles_identical"], row["cycles_differing"]) == (False, True, 0)
    row = soak("m", "twin", _sessions(first, first), 2)
    assert (row["outputs_identical"], row["cycles_identical"], row["cycles_differing"], row["invokes"]) == \
        (True, True, 0, 4)


@pytest.mark.parametrize("argv, says", [(["--rows", "simulted"], "unknown row 'simulted'"),
                                        (["--rows", "simulated,twin"], "--rows twin: needs --firmware"),
                                        (["--rows", "st-client", "--firmware", "st.elf"], "needs --st-client")])
def test_a_row_it_cannot_run_is_refused_before_any_run(argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and says in capsys.readouterr().err
