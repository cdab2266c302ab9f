"""Profiling library: the documented run messages → measurement, the merge with c_info.json
(figures checked against hand-computed values), the reports, the diff, and bad input."""
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

from n6.errors import N6Error
from n6.profiling import measure, messages, plot, report, steps
from n6.profiling.cinfo import read_c_info
from n6.profiling.measurement import Bursts, Measurement, Phases, PoolTraffic
from n6.profiling.merge import merge

from conftest import MODELS, ROOT

FIXTURE = os.path.join(ROOT, "tests", "fixtures", "profile", "tiny_prebuilt.run.json")
C_INFO = os.path.join(MODELS, "tiny_prebuilt", "network_c_info.json")


def recorded():
    with open(FIXTURE) as f:
        fx = json.load(f)
    clocks = messages.parse_config(fx["config"], FIXTURE)
    return messages.parse_run([(r["request"]["opt"], r["responses"]) for r in fx["runs"]], "network", clocks, FIXTURE)


def sim_messages(epochs, final=(100, 0)):
    """One sample as the simulated board answers: mcu cycles and pool traffic, no NPU counters.
    epochs: [(number, kind code, (pre, core, post), {pool: (reads, writes)})]."""
    out = []
    for num, kind, cycles, mem in epochs:
        out += [f"s:node:evt_pre_start:{num - 1}:{num}:{num}:{num}:00000000:05000002:{messages.EPOCH_KINDS[kind]}",
                f"s:node:evt_post_end:{num - 1}:{num}:{num}:{num}:0", "s:node:mcu_cycles:%d:%d:%d" % cycles]
        out += [f"s:sim:instructions:{cycles[0]}:{cycles[2]}"]
        out += [f"s:sim:mem:{region}:{r // 4}:{r}:{w // 4}:{w}:{REGIONS[region][0]:08X}:{REGIONS[region][1]}"
                if region in REGIONS else f"s:sim:mem:{region}:{r}:{r}:{w}:{w}" for region, (r, w) in mem.items()]
        out.append(SimpleNamespace(name="", type=(5 << 24) | kind, id=num << 16 | num, duration=0.0,
                                   counter_type=1 << 16, counters=list(cycles)))
    out.append(SimpleNamespace(name="network", type=0, id=0, duration=0.0, counter_type=0,
                               counters=[0, 0, 0, 0, 0, 0, final[0], 0, final[1], 0]))
    return out


CLOCKS = {"mcu_freq": 800_000_000, "noc_freq": 400_000_000, "npu_freq": 1_000_000_000, "nic_freq": 900_000_000}
# simulated board memory regions reported with base and size: "xSPI2 flash" holds tiny_prebuilt's octoFlash
# pool, "firmware" no pool; "npuRAM5" comes without base/size (named like the pool already)
REGIONS = {"xSPI2 flash": (0x70000000, 0x8000000), "firmware": (0x34000000, 0x60000)}
SIM_RUN = [(1, 2, (100, 1000, 50), {"npuRAM5": (64, 32), "xSPI2 flash": (2176, 0), "firmware": (40, 40)}),
           (2, 2, (80, 300, 20), {"npuRAM5": (32, 10), "xSPI2 flash": (360, 0)}),
           (3, 2, (60, 200, 40), {"npuRAM5": (10, 10)})]


def test_merge_of_a_recorded_run_matches_hand_computed_figures():
    m = recorded()
    assert m.clocks == CLOCKS and m.options == [0x31, 0x08] and m.run_cycles == 32010   # (32000+32020+32010)/3
    p = merge(m, read_c_info(C_INFO))
    assert [e.name for e in p.epochs] == ["epoch_1", "epoch_2", "epoch_3"]
    e1, e2 = p.epochs[0], p.epochs[1]
    # epoch_1: MCU pre (1200+1201+1200)/3 → 1201, core (20000+20010+20004)/3 → 20005, post (800+800+801)/3 → 801
    assert e1.mcu_cycles == Phases(1201, 20005, 801) and e1.kind == "SW" and e1.unit == "CPU"
    # duration from the mean sample total: (22000+22011+22005)/3 → 22006 cycles / 800 MHz
    assert e1.time_ms == pytest.approx(0.0275075)
    assert e1.npu_cycles == Phases(1501, 25005, 1001)            # two EPOCH_LEN samples, rounded up
    assert e1.npu_clock_cycles == 27507
    assert (e1.ops, e1.compute_cycles, e1.max_cycles) == (2048, 2048, 2048)
    assert e1.ops_per_cycle == pytest.approx(2048 / 27507) and e1.gops == pytest.approx(0.0744538, rel=1e-5)
    assert e1.compiler_memory == {"npuRAM5": PoolTraffic(64, 32), "octoFlash": PoolTraffic(2176, 0)}
    # MB/s counts what the board measured: bus interface 0 read (1+2·2+3·4+4·8)·8 = 392 B, wrote 4·8·8 = 256 B,
    # bus interface 1 wrote 2·8 = 16 B; over 27.5075 µs
    assert e1.measured_memory is None and e1.traffic_source == "bus"
    assert e1.traffic == {"busif0": PoolTraffic(392, 256), "busif1": PoolTraffic(0, 16)}
    assert e1.bandwidth["busif0"] == pytest.approx(648 / 27.5075) and e1.bandwidth["busif1"] == pytest.approx(
        16 / 27.5075)
    # the epoch sum is 22006 + 5502 + 3900 = 31408 cycles
    assert e1.percent == pytest.approx(22006 * 100 / 31408)
    # epoch_2: pre (900+900+903)/3 = 901, core (4000+4002+4000)/3 → 4001, totals (5500+5502+5503)/3 → 5502
    assert e2.mcu_cycles == Phases(901, 4001, 600) and e2.time_ms == pytest.approx(0.0068775)
    assert e2.npu_cycles == Phases(1100, 5001, 700) and e2.ops_per_cycle == pytest.approx(320 / 6801)
    assert e2.compiler_memory["npuRAM5"] == PoolTraffic(32, 10) and e2.bus is None    # its bus record: absent
    assert e2.traffic_source == "compiler" and e2.bandwidth["octoFlash"] == pytest.approx(360 / 1e6 / 6.8775e-6)
    assert e2.percent == pytest.approx(5502 * 100 / 31408)
    # counters kept as the board sent them: busif from the first BUSIF record, cache averaged (floor)
    raw = m.epochs[0]
    assert raw.busif == {"port0": Bursts((1, 2, 3, 4), (0, 0, 0, 4)), "port1": Bursts((0, 0, 0, 0), (2, 0, 0, 0))}
    assert raw.npu_cache["r_miss"] == 11 and raw.npu_cache["w_miss"] == 4
    assert raw.memory is None and raw.absent() == ["streng_active"]      # memory: the simulated board's own
    t = p.totals
    assert t["time_ms"] == pytest.approx(0.03926) and t["mcu_cycles"] == [2602, 27006, 1801]
    assert t["inf_per_s"] == pytest.approx(800e6 / 31409)          # MCU clock / summed phase cycles, as ST
    assert t["run_ms"] == pytest.approx(0.0400125)
    # every epoch runs in software: the compiler's cycles (NPU cycles, ops = max cycles) give no inf/s
    assert t["max_cycles"] == 2368 and t["npu_blocks"] == 0 and t["compiler_inf_per_s"] is None
    assert report.compiler_line(p) == "compiler: 2,368 ops; no inf/s estimate: every epoch runs on the CPU and " \
                                      "the compiler's cycles are NPU cycles"
    # nor an ideal ops/cycle (the compiler's 1.00 of software epochs): core-only 2368/33706, measured 2368/39108
    assert report.counter_lines(p)[0].endswith("of the inference; ops/cycle core-only 0.07, measured 0.06")


def test_simulated_board_counters_memory_measured_npu_absent():
    m = messages.parse_run([(messages.run_opt(0x31, 0), sim_messages(SIM_RUN))], "network", CLOCKS, "sim",
                           simulated=True)
    e = m.epochs[0]
    assert e.npu_cycles is None and e.memory == {"npuRAM5": PoolTraffic(64, 32), "xSPI2 flash": PoolTraffic(2176, 0),
                                                 "firmware": PoolTraffic(40, 40)}
    assert set(e.absent()) == {"npu_cycles", "busif", "npu_cache", "streng_active"}
    p = merge(m, read_c_info(C_INFO))
    # regions are named after the c_info.json pool at their address; others keep the board's name
    assert p.epochs[0].measured_memory == {"npuRAM5": PoolTraffic(64, 32), "octoFlash": PoolTraffic(2176, 0),
                                           "firmware": PoolTraffic(40, 40)}
    assert p.epochs[0].traffic is p.epochs[0].measured_memory
    assert p.epochs[0].bandwidth["firmware"] == pytest.approx(80 / 1e6 / (1150 / 800e6))
    assert p.epochs[1].measured_memory["octoFlash"] == PoolTraffic(360, 0)
    e3 = p.epochs[2]
    # NPU-clock cycles derived from the MCU cycles: 300 × 1000/800
    assert e3.npu_cycles is None and e3.npu_clock_cycles == 375
    # measured traffic wins over the compiler's: epoch_3 moved 20 bytes in 300 cycles = 0.375 µs
    assert e3.measured_memory == {"npuRAM5": PoolTraffic(10, 10)}
    assert e3.bandwidth == {"npuRAM5": pytest.approx(20 / 1e6 / 0.375e-6)}
    assert Measurement.from_dict(json.loads(json.dumps(m.to_dict()))) == m


def test_protobuf_style_payloads_and_other_messages_are_accepted():
    msgs = [SimpleNamespace(log=None, str=s) if isinstance(s, str) else s for s in sim_messages(SIM_RUN[:1])]
    m = messages.parse_run([(0x3101, [{"ack": {"param": 4}}, *msgs, {"tensor": {}}])], "n", CLOCKS, "sim")
    assert m.epochs[0].mcu_cycles == Phases(100, 1000, 50)


def _epochs_c_info(tmp_path, n):
    with open(C_INFO) as f:
        data = json.load(f)
    data["graphs"][0]["nodes"] = data["graphs"][0]["nodes"][:n]
    data["power_estimates"] = [p for p in data["power_estimates"] if p["node_id"] <= n]
    data["memory_accesses"] = [a for a in data["memory_accesses"] if a["node_id"] <= n]
    path = tmp_path / "network_c_info.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize("outputs", [[], [5]])
def test_c_info_nodes_without_outputs_need_no_epoch_block(tmp_path, outputs):
    """ST's c_info.json lists graph nodes no epoch block runs, all without outputs: the params
    (epoch_0), a layout change folded away (epoch_1 of nucleo_mnv1 and blazeface), the final
    return (nucleo_mnv1's epoch_34 of 35 nodes, with 32 blocks run). Such a node does not keep the
    compiler's figures from the blocks that ran; a node with outputs that did not run does."""
    with open(C_INFO) as f:
        data = json.load(f)
    data["graphs"][0]["nodes"].append({"id": 4, "name": "epoch_4", "mapping": "NODE_SW", "inputs": [4],
                                       "outputs": outputs})
    path = tmp_path / "network_c_info.json"
    path.write_text(json.dumps(data))
    folder = str(tmp_path / "profile")
    steps.report_step(_write_measurement(folder, SIM_RUN), str(path), folder, log=lambda line: None)
    profile = json.load(open(os.path.join(folder, "profile.json")))
    if outputs:
        assert profile["compiler_absent"] == f"{path} describes 4 epochs but the image on the board ran 3: " \
            "compiler columns absent"
    else:
        assert profile["c_info"] is not None and profile["epochs"][0]["ops"] is not None


NO_COMPILER = ["ops", "compute_cycles", "max_cycles", "ops_per_cycle", "gops", "compiler_inf_per_s",
               "compiler_ideal_inf_per_s", "compiler_ops_per_cycle", "ideal_ops_per_cycle", "core_ops_per_cycle"]


@pytest.mark.parametrize("c_info, why", [
    ("missing", "no c_info.json at {path}: compiler columns absent"),
    ("other", "{path} describes 2 epochs but the image on the board ran 3: compiler columns absent")])
def test_profile_without_a_matching_c_info_reports_the_measured_figures(tmp_path, c_info, why):
    """As ST's profiler goes on without compiler information: the measured part, one line why."""
    path = str(tmp_path / "network_c_info.json") if c_info == "missing" else _epochs_c_info(tmp_path, 2)
    why = why.format(path=path)
    folder = str(tmp_path / "profile")
    logged = []
    steps.report_step(_write_measurement(folder, SIM_RUN), path, folder, log=logged.append)
    for f in steps.FILES:
        assert os.path.getsize(os.path.join(folder, f)) > 0, f
    data = json.load(open(os.path.join(folder, "profile.json")))
    assert data["c_info"] is None and data["compiler_absent"] == why
    assert [e["name"] for e in data["epochs"]] == ["epoch_1", "epoch_2", "epoch_3"]
    e1 = data["epochs"][0]
    assert e1["mcu_cycles"] == {"pre": 100, "core": 1000, "post": 50} and e1["time_ms"] == pytest.approx(1150 / 800e3)
    assert e1["measured_memory"]["npuRAM5"] == {"reads": 64, "writes": 32}
    assert all(e[k] is None for e in data["epochs"] for k in ("ops", "compute_cycles", "max_cycles", "mapping",
                                                              "ops_per_cycle", "compiler_ops_per_cycle", "gops",
                                                              "compiler_memory"))
    assert all(data["totals"][k] is None for k in NO_COMPILER)
    assert data["totals"]["traffic"]["npuRAM5"]["reads"] == 106 and data["totals"]["inf_per_s"] == pytest.approx(
        800e6 / 1850)
    text = logged[0].splitlines()[1:]
    assert text[0].split() == ["epoch", "unit", "kind", "time", "ms", "%", "pre", "core", "post", "MB/s"]
    assert text[2].split()[:8] == ["epoch_1", "CPU", "SW", "0.0014", "62.2", "100", "1000", "50"]
    assert text[-1] == why and why in open(os.path.join(folder, "profile.html")).read()


def test_board_without_memory_counters_and_no_c_info_has_no_bandwidth_and_still_diffs(tmp_path):
    """Nothing counted the traffic: MB/s is absent (null, an empty cell), never 0, and such a
    profile is a valid baseline."""
    folder, missing = str(tmp_path / "profile"), str(tmp_path / "network_c_info.json")
    os.makedirs(folder)
    path = os.path.join(folder, "measurement.json")
    m = recorded()
    for e in m.epochs:
        e.busif = None
    measure.save_measurement(m, path)
    logged = []
    steps.report_step(path, missing, folder, log=logged.append)
    saved = str(tmp_path / "saved.json")
    shutil.copy(os.path.join(folder, "profile.json"), saved)
    steps.report_step(path, missing, folder, baseline=saved, log=logged.append)
    data = json.load(open(os.path.join(folder, "profile.json")))
    assert all(e["bandwidth"] is None and e["compiler_memory"] is None for e in data["epochs"])
    assert data["totals"]["traffic"] == {}
    # NPU core 25005 cycles at 1 GHz = 25.005 µs of the epoch's 27.5075 µs: 90.9%
    assert logged[0].splitlines()[3].split() == ["epoch_1", "CPU", "SW", "0.0275", "70.1", "1201", "20005", "801",
                                                 "90.9"]
    d = json.load(open(os.path.join(folder, steps.DIFF)))
    assert d["epochs"][0]["mb_per_s"] == {"before": None, "after": None}
    assert "no c_info.json at " + missing + ": compiler columns absent" in logged[1].splitlines()


@pytest.mark.parametrize("change, problem", [
    (lambda msgs: setattr(msgs[-2], "counters", [1, 2]), "counter block of 2 values for epoch 1, expected 3"),
    (lambda msgs: setattr(msgs[-1], "counters", [0] * 8), "counter block of 4 values for the model's final"),
    (lambda msgs: setattr(msgs[-1], "counters", [0] * 9), "64-bit counter block of 9 words"),
    (lambda msgs: msgs.__setitem__(2, "s:node:mcu_cycles:1:2"), "2 values in counter log 's:node:mcu_cycles:1:2'"),
    (lambda msgs: msgs.__setitem__(2, "s:node:mcu_cycles:1:x:3"), "malformed counter log"),
    (lambda msgs: msgs.pop(), "run ended before the model's final operator"),
    (lambda msgs: msgs.__setitem__(4, "s:sim:mem:npuRAM5:1:2"), "2 values in counter log 's:sim:mem:npuRAM5:1:2'"),
])
def test_bad_board_counters_are_one_line_errors(change, problem):
    msgs = sim_messages(SIM_RUN[:1])
    change(msgs)
    with pytest.raises(N6Error) as e:
        messages.parse_run([(0x3101, msgs)], "network", CLOCKS, "/dev/pts/9")
    assert str(e.value).startswith("/dev/pts/9: ") and problem in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("dev_id, problem", [("0x450", "device 0x450 is not supported, expected 0x486 (STM32N6xx)"),
                                             (None, "dev_id None, expected a hex device id")])
def test_a_board_that_is_not_an_stm32n6_is_refused(dev_id, problem):
    """As ST's profiler checks: the device id of the s:config logs must be the STM32N6's."""
    clocks = ["s:config:version:1.0", "s:config:mcu_freq:8", "s:config:noc_freq:4", "s:config:npu_freq:1",
              "s:config:nic_freq:9"]
    with pytest.raises(N6Error, match=re.escape(problem)):
        messages.parse_config(clocks + ([f"s:config:dev_id:{dev_id}"] if dev_id else []), "port")
    assert messages.parse_config(clocks + ["s:config:dev_id:0x486"], "port")["mcu_freq"] == 8


def test_missing_clock_config_is_an_error():
    with pytest.raises(N6Error, match="did not report npu_freq"):
        messages.parse_config(["s:config:version:1.0", "s:config:mcu_freq:8", "s:config:noc_freq:4",
                               "s:config:nic_freq:9"], "port")


def test_picture_one_colour_per_pool_legends_beside_the_bars_time_not_clipped():
    """Measured and estimated traffic of a pool share its colour (the estimate hatched), distinct
    names have distinct colours, no legend covers a bar, the tallest time bar has room above it."""
    # software epochs as the simulated board runs them: all in `pre`, a few `post` cycles on top (under 1e-5 of
    # the bar: matplotlib puts no margin above such a stacked bar), the same MB/s in every epoch (no free corner)
    run = [(n, 2, (pre, 0, 15), {"npuRAM5": (pre // 8, pre // 8), "xSPI2 flash": (pre // 2, 0),
                                 "firmware": (pre * 2, pre)}) for n, pre in ((1, 8_000_000), (2, 2_000_000),
                                                                            (3, 400_000))]
    m = messages.parse_run([(messages.run_opt(0x31, 0), sim_messages(run))], "network", CLOCKS, "sim", simulated=True)
    fig = plot.figure(merge(m, read_c_info(C_INFO)))
    try:
        fig.canvas.draw()
        top, bottom = fig.axes
        series = {c.get_label(): {(tuple(r.get_facecolor()), r.get_hatch()) for r in c.patches}
                  for c in bottom.containers}
        assert sorted(series) == ["estimate: npuRAM5", "estimate: octoFlash", "measured: firmware",
                                  "measured: npuRAM5", "measured: octoFlash"]
        colour = {}
        for label, looks in series.items():
            kind, name = label.split(": ")
            (face, hatch), = looks
            assert hatch == (None if kind == "measured" else "//")
            assert colour.setdefault(name, face) == face                # a pool: one colour, measured or estimated
        assert len(set(colour.values())) == 3                           # distinct names, distinct colours
        for ax in (top, bottom):
            box = ax.get_legend().get_window_extent()
            assert not [r for r in ax.patches if r.get_height() > 0 and box.overlaps(r.get_window_extent())]
            assert fig.bbox.contains(box.x1, box.y0) and fig.bbox.contains(box.x1, box.y1)     # not cut off
        assert [t.get_text() for t in bottom.get_legend().get_texts()] == [*colour, "measured", "compiler's estimate"]
        tallest = max(r.get_y() + r.get_height() for r in top.patches)
        assert top.get_ylim()[1] >= 1.04 * tallest
    finally:
        plot._pyplot().close(fig)


def _write_measurement(folder, runs):
    m = messages.parse_run([(0x3101, sim_messages(runs))], "network", CLOCKS, "sim", simulated=True)
    os.makedirs(folder, exist_ok=True)
    measure.save_measurement(m, os.path.join(folder, "measurement.json"))
    return os.path.join(folder, "measurement.json")


def _check_nesting(events):
    """Every X slice on a track lies inside the slice open before it (or starts after it ends)."""
    by_tid = {}
    for ev in events:
        if ev["ph"] == "X":
            by_tid.setdefault(ev["tid"], []).append(ev)
    for slices in by_tid.values():
        stack = []
        for ev in sorted(slices, key=lambda s: (s["ts"], -s["dur"])):
            while stack and ev["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - 1e-6:
                stack.pop()
            if stack:
                assert ev["ts"] + ev["dur"] <= stack[-1]["ts"] + stack[-1]["dur"] + 1e-6, (ev, stack[-1])
            stack.append(ev)


def test_reports_and_diff(tmp_path):
    folder = str(tmp_path / "profile")
    path = _write_measurement(folder, SIM_RUN)
    logged = []
    steps.report_step(path, C_INFO, folder, name="tiny", log=logged.append)
    for f in steps.FILES:
        assert os.path.getsize(os.path.join(folder, f)) > 0, f
    assert not os.path.exists(os.path.join(folder, steps.DIFF))
    data = json.load(open(os.path.join(folder, "profile.json")))
    assert [e["name"] for e in data["epochs"]] == [n["name"] for n in json.load(open(C_INFO))["graphs"][0]["nodes"]]
    ET.parse(os.path.join(folder, "profile.svg"))
    assert open(os.path.join(folder, "profile.png"), "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    trace = json.load(open(os.path.join(folder, "profile.trace.json")))
    events = trace["traceEvents"]
    assert {e["name"] for e in events if e["ph"] == "X" and e.get("cat") == "CPU"} == {"epoch_1", "epoch_2", "epoch_3"}
    _check_nesting(events)
    assert "epoch_1" in logged[0] and "inf/s on the simulated board" in logged[0]
    # the text report names its model first: the console and a stored profile.txt say whose table it is
    title = "profile of tiny (c-name network) on the board (simulated)"
    assert logged[0].splitlines()[0] == title and open(os.path.join(folder, "profile.txt")).readline() == title + "\n"

    # epoch_2 made slower on purpose: the diff puts it first
    slower = [SIM_RUN[0], (2, 2, (80, 900, 20), SIM_RUN[1][3]), SIM_RUN[2]]
    steps.report_step(_write_measurement(folder, slower), C_INFO, folder, name="tiny", log=logged.append)
    d = json.load(open(os.path.join(folder, steps.DIFF)))
    assert d["epochs"][0]["name"] == "epoch_2" and d["epochs"][0]["time_ms"]["delta"] == pytest.approx(0.00075)
    assert d["total"]["time_ms"]["delta"] == pytest.approx(0.00075)
    compared = logged[-1].index("compared with")
    assert logged[-1].index("epoch_2", compared) < logged[-1].index("epoch_1", compared)
    # any saved profile as the baseline
    saved = str(tmp_path / "saved.json")
    shutil.copy(os.path.join(folder, "profile.json"), saved)
    steps.report_step(path := _write_measurement(folder, SIM_RUN), C_INFO, folder, baseline=saved, name="tiny",
                      log=logged.append)
    assert json.load(open(os.path.join(folder, steps.DIFF)))["baseline"] == saved


def test_a_baseline_of_another_model_is_said_in_one_line(tmp_path):
    """Comparing two models can be meant: the diff goes on and says whose the baseline is."""
    other, folder = str(tmp_path / "other"), str(tmp_path / "profile")
    steps.report_step(_write_measurement(other, SIM_RUN), C_INFO, other, name="digits_mlp", log=print)
    logged = []
    _, d = steps.report_step(_write_measurement(folder, SIM_RUN), C_INFO, folder, name="kws_mlp",
                             baseline=os.path.join(other, "profile.json"), log=logged.append)
    note = "the baseline is a profile of digits_mlp, not of kws_mlp: epochs are matched by name only"
    stored = json.load(open(os.path.join(folder, steps.DIFF)))
    assert stored["note"] == d["note"] == note and stored["baseline_model"] == "digits_mlp"
    lines = logged[0].splitlines()
    assert lines[lines.index(f"compared with {os.path.join(other, 'profile.json')}") + 1] == note
    assert note in open(os.path.join(folder, "profile.html")).read()
    _, same = steps.report_step(_write_measurement(folder, SIM_RUN), C_INFO, folder, name="kws_mlp", log=print)
    assert same["note"] is None and same["baseline_model"] == "kws_mlp"


def test_bad_baseline_is_a_one_line_error_and_keeps_the_previous_report(tmp_path):
    folder = str(tmp_path / "profile")
    bad = tmp_path / "bad.json"
    bad.write_text('{"epochs": 3}')
    steps.report_step(_write_measurement(folder, SIM_RUN), C_INFO, folder, log=print)   # an earlier report
    measurement = _write_measurement(folder, SIM_RUN)

    def files():
        return {f: open(os.path.join(folder, f), "rb").read() for f in sorted(os.listdir(folder))}
    before = files()
    with pytest.raises(N6Error, match="not a profile.json"):
        steps.report_step(measurement, C_INFO, folder, baseline=str(bad), log=print)
    assert files() == before        # refused before any report was written or removed


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
PROBE = """<script>window.addEventListener('load', () => {const s = document.querySelector('svg').getBBox ?
document.querySelector('svg').getBoundingClientRect() : {width: 0}; const broken = [...document.images]
.filter(i => !i.naturalWidth).length; document.body.setAttribute('data-probe', JSON.stringify({svg: s.width,
rows: document.querySelectorAll('#epochs tbody tr').length, broken}));});</script>"""


def render_in_chromium(html_path, tmp_path):
    """Load the page in headless Chromium; → (probe dict, console lines). The probe is added to a
    copy of the page: it reports the laid-out SVG width, table rows and broken images."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium is installed by tools/setup.sh"
    probe_copy = tmp_path / "probe.html"
    text = open(html_path, encoding="utf-8").read()
    probe_copy.write_text(text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    r = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}",
                        "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000", "--dump-dom",
                        probe_copy.as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.search(r"data-probe=\"([^\"]*)\"", r.stdout)
    assert m, r.stdout[:2000]
    console = [line for line in r.stderr.splitlines() if ":CONSOLE" in line]
    return json.loads(m.group(1).replace("&quot;", '"')), console


def test_html_page_renders_in_headless_chromium(tmp_path):
    folder = str(tmp_path / "profile")
    steps.report_step(_write_measurement(folder, SIM_RUN), C_INFO, folder, log=lambda s: None)
    page = os.path.join(folder, "profile.html")
    text = open(page, encoding="utf-8").read()
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", text)           # self-contained
    probe, console = render_in_chromium(page, tmp_path)
    assert console == []
    assert probe["svg"] > 100 and probe["rows"] == 4 and probe["broken"] == 0


class FakeClient:
    """Stands for the host protocol client: records each run request, answers with operators
    (the host library's data class) carrying the logs the board sent before them."""

    def __init__(self, epochs, bad_counters=False, npu=False):
        from n6.aivalidation import Device, ModelInfo, TensorDesc
        self.name, self.requests, self.epochs, self.bad, self.npu = "/dev/pts/7", [], epochs, bad_counters, npu
        self.device = Device((3, 1), 1, 0x10004, config={"version": "1.0", "dev_id": "0x486",
                                                         **{k: str(v) for k, v in CLOCKS.items()}})
        self.device.models = [ModelInfo("network", [TensorDesc("in", "int8", (1, 10))], [], 0, 0, (10, 2, 0), "",
                                        (2, 2, 0), 0, 1)]

    def model(self, name):
        return self.device.models[0]

    def run(self, name, inputs, mode=1, counter_option=0, first=True):
        from n6.aivalidation import Operator, RunResult
        self.requests.append((name, [len(i) for i in inputs], mode, counter_option, first))
        msgs = sim_messages(self.epochs)
        ops, logs = [], []
        for m in msgs:
            if isinstance(m, str):
                logs.append(m[2:])
                if self.npu and m.startswith("s:node:mcu_cycles") and counter_option & messages.EPOCH_LEN:
                    logs.append("node:npu_cycles:1:2:3")
            else:
                ops.append(Operator(m.name, m.type, m.id, 0.0, m.counter_type,
                                    [1, 2] if self.bad and ops == [] else m.counters, logs))
                logs = []
        return RunResult([], ops[:-1], ops[-1], [])


def test_measure_runs_st_passes_through_the_host_client():
    from n6.profiling.measure import measure
    client = FakeClient(SIM_RUN, npu=True)
    m = measure(client, "network", samples=2)
    # ST's profiler: a PERF_ONLY warm-up (IO_ONLY | PERF | CONST_VALUE), then PER_LAYER | PERF_ONLY passes
    assert client.requests == [("network", [10], 1 | 8 | 512, 0, True)] + [
        ("network", [10], 1 | 2 | 8 | 512, opt, first) for opt in (0x31, 0x51, 0x08) for first in (True, False)]
    assert m.options == [0x31, 0x51, 0x08] and m.epochs[0].samples == 6 and m.epochs[0].npu_cycles == Phases(1, 2, 3)
    # a board that sent no NPU counter when asked is not asked again (the simulated board): one pass less
    client = FakeClient(SIM_RUN)
    m = measure(client, "network", samples=2, simulated=True)
    assert [r[3] for r in client.requests] == [0, 0x31, 0x31, 0x08, 0x08]
    assert m.options == [0x31, 0x08] and m.simulated and m.epochs[0].samples == 4
    assert m.epochs[1].memory == {"npuRAM5": PoolTraffic(32, 10), "xSPI2 flash": PoolTraffic(360, 0)}
    assert m.regions == REGIONS
    with pytest.raises(N6Error, match=r"^/dev/pts/7: board sent a counter block of 2 values for epoch 1"):
        measure(FakeClient(SIM_RUN, bad_counters=True), "network")


def test_an_epoch_the_board_reports_twice_keeps_the_compilers_figures_out(tmp_path):
    """Every epoch c_info describes ran, and no other, but one ran twice: not the image c_info
    describes (its figures would be counted twice)."""
    folder = str(tmp_path / "profile")
    steps.report_step(_write_measurement(folder, SIM_RUN[:2] + SIM_RUN[1:]), C_INFO, folder, log=lambda line: None)
    profile = json.load(open(os.path.join(folder, "profile.json")))
    assert profile["compiler_absent"] == f"{C_INFO} describes 3 epochs but the image on the board ran 4: " \
        "compiler columns absent"
