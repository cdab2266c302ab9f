"""Profile arithmetic helpers (n6.profiling) at their edges: absent counters (None) on either
side, no rows, no core cycles. Written against the survivors of tools/mutate.py (target
`profiling`)."""
from n6.profiling import counters, measurement


def test_add_each_with_absent_sides():
    assert measurement._add_each(None, None) is None
    assert measurement._add_each(None, {"x": 1}) == {"x": 1}
    assert measurement._add_each({"x": 1}, None) == {"x": 1}
    assert measurement._add_each({"a": 1, "b": None}, {"a": 2, "c": 3}) == {"a": 3, "b": None, "c": 3}


class Row:
    def __init__(self, v):
        self.v = v


def test_all_of_no_rows_is_absent():
    assert counters._all([], "v") is None
    assert counters._all([Row(1), Row(None)], "v") is None
    assert counters._all([Row(1), Row(2)], "v") == [1, 2]


def test_bandwidth_without_core_cycles_is_absent():
    out = counters._with_bandwidth({"busif0": {"read_bytes": 1, "write_bytes": 2}}, None, 800e6)
    assert out["busif0"]["gb_per_s"] is None and out["total"] == {"read_bytes": 1, "write_bytes": 2,
                                                                  "gb_per_s": None}
