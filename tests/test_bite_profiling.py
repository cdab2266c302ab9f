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


def test_diff_of_added_removed_and_common_epochs():
    from n6.profiling.diff import diff

    def epoch(name, ms, bw, cycles):
        return {"name": name, "time_ms": ms, "bandwidth": bw, "npu_core_cycles": cycles}
    before = {"model": "m", "epochs": [epoch("e1", 2.0, {"a": 100.0, "b": 50.0}, 1000), epoch("gone", 0.5, None, 8)],
              "totals": {"time_ms": 2.5, "inf_per_s": 400.0, "npu_core_cycles": 1008}}
    after = {"model": "m", "epochs": [epoch("e1", 3.0, {"a": 300.0}, 1500), epoch("new", 0.25, {"a": 8.0}, 0)],
             "totals": {"time_ms": 3.25, "inf_per_s": 320.0, "npu_core_cycles": 1500}}
    d = diff(before, after, "base.json")
    assert [(e["name"], e["status"], e["time_ms"]["delta"]) for e in d["epochs"]] == \
        [("e1", "both", 1.0), ("gone", "removed", -0.5), ("new", "added", 0.25)]
    e1 = d["epochs"][0]
    assert e1["time_ms"]["percent"] == 50.0 and e1["mb_per_s"] == {"before": 150.0, "after": 300.0, "delta": 150.0,
                                                                    "percent": 100.0}
    assert e1["npu_core_cycles"] == {"before": 1000, "after": 1500, "delta": 500, "percent": 50.0}
    assert d["epochs"][1]["mb_per_s"] == {"before": None, "after": None}
    assert d["epochs"][2]["npu_core_cycles"] == {"before": None, "after": 0}
    assert d["total"]["inf_per_s"] == {"before": 400.0, "after": 320.0, "delta": -80.0, "percent": -20.0}
    assert d["note"] is None
    from n6.profiling.diff import columns
    headers, rows = columns(d)
    assert [r[0] for r in rows] == ["e1", "gone (removed)", "new (added)", "total"]
    assert rows[0][1:5] == ["2.0000", "3.0000", "+1.0000", "+50.0"]
    assert rows[-1] == ["total", "2.5000", "3.2500", "+0.7500", "+30.0", "", "", "", "+492"]   # no MB/s in total


def test_the_busiest_engine_as_the_table_shows_it():
    from n6.profiling.report import _busiest
    assert _busiest({"id": 4, "role": "output", "percent": 65.45}, True) == "#4 o 65.5%"
    assert _busiest({"id": 0, "role": "input", "percent": None}, True) == "#0 i"      # no core cycles: no share
    assert (_busiest(None, True), _busiest(None, False)) == ("none", "")


def test_the_compiler_line_of_a_model_whose_every_epoch_runs_on_the_npu():
    """No 'NPU blocks only' and no 'for them alone' when the NPU blocks are the whole model."""
    from types import SimpleNamespace

    from n6.profiling.report import compiler_line
    totals = {"ops": 30000, "npu_blocks": 2, "npu_max_cycles": 9000, "npu_ops": 30000,
              "compiler_inf_per_s": 1e9 / 9000, "compiler_ideal_inf_per_s": None}
    epochs = [SimpleNamespace(unit="NPU", time_ms=0.005), SimpleNamespace(unit="NPU", time_ms=0.0069)]
    profile = SimpleNamespace(totals=totals, epochs=epochs, clocks={"npu_freq": 1e9})
    assert compiler_line(profile) == ("compiler: 30,000 ops, 9,000 max cycles = 0.0090 ms (measured 0.0119 ms) → "
                                      "111111.1 inf/s, ideal - inf/s")
