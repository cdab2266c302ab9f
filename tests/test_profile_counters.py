"""The NPU's hardware counters in every report: message streams recorded here in the firmware's
documented formats (ST's three counter passes, two samples each) for an epoch-controller block
and a software epoch; every bus, stream-engine, cache and NPU-cycle figure is checked against
values computed by hand with ST's averaging rules (ceiling mean per phase and per engine,
truncated mean for the cache, the first record for the bus counters) in the table, profile.json,
profile.txt, the trace and the HTML page."""
import json
import os
from html.parser import HTMLParser

import pytest

from n6.profiling import console_part, measure, messages, plot, steps
from n6.profiling.cinfo import read_c_info
from n6.profiling.merge import merge
from n6.profiling.steps import load_measurement

from test_profiling import render_in_chromium

CLOCKS = {"mcu_freq": 800_000_000, "noc_freq": 400_000_000, "npu_freq": 1_000_000_000, "nic_freq": 900_000_000}
EC, SW = (1, 2, 4), (3, 3, 2)          # (first epoch, last epoch, kind code): the EC blob covers epochs 1-2

# Per sample, in pass order (pass 1: STRG_I_ACTIVE|EPOCH_LEN|NPU_CACHE, pass 2: STRG_O_ACTIVE|EPOCH_LEN|NPU_CACHE,
# pass 3: BUSIF_RW_DATA; two samples each).
MCU = {EC: [(1000, 8000, 500), (1001, 8000, 500), (1000, 8001, 500), (1000, 8000, 500), (1002, 8000, 500),
            (1000, 8000, 500)],
       SW: [(200, 3000, 100)] * 3 + [(200, 3001, 100)] + [(200, 3000, 100)] * 2}
NPU = {EC: [(1250, 10000, 625), (1251, 10001, 625), (1250, 10002, 625), (1250, 10000, 625)],
       SW: [(250, 3750, 125), (250, 3751, 125), (250, 3750, 125), (250, 3750, 125)]}
ENGINES = {EC: [{0: 7000, 1: 3000, 5: 5000}, {0: 7001, 1: 3000, 5: 5003},       # pass 1: input engines
                {4: 9000, 8: 2000}, {4: 9001, 8: 2001}],                        # pass 2: output engines
           SW: [{}] * 4}                                                        # none active
CACHE = {EC: [((100, 10, 3, 1), (50, 5, 0, 7)), ((101, 11, 3, 2), (50, 6, 0, 7)),
              ((102, 10, 4, 2), (51, 6, 1, 7)), ((104, 10, 4, 2), (51, 6, 0, 8))],
         SW: [((0, 1, 0, 0), (0, 0, 0, 0))] + [((0, 2, 0, 0), (0, 0, 0, 0))] * 3}
# bursts of 1/2/4/8 beats: port0 read, port0 write, port1 read, port1 write
BUS = {EC: [((10, 0, 5, 100), (0, 2, 0, 50), (1, 1, 1, 1), (0, 0, 0, 0)),
            ((99, 99, 99, 99), (0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0))],     # the second record is not used
       SW: [((0, 0, 0, 1), (0, 0, 0, 0), (0, 0, 0, 0), (1, 0, 0, 0)),
            ((0, 0, 0, 2), (0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0))]}
KIND = {4: "EC", 2: "SW"}


def _epoch(block, n, option, bus=True):
    """The board's messages for one epoch block in sample n (0-5) of a pass with counter `option`."""
    first, last, kind = block
    out = [f"s:node:evt_pre_start:{first - 1}:{first}:{first}:{last}:00000000:{(5 << 24) | kind:08X}:{KIND[kind]}",
           f"s:node:evt_post_end:{first - 1}:{first}:{first}:{last}:0", "s:node:mcu_cycles:%d:%d:%d" % MCU[block][n]]
    if option & messages.EPOCH_LEN:
        out.append("s:node:npu_cycles:%d:%d:%d" % NPU[block][n])
        role = "i" if option & messages.STRG_I_ACTIVE else "o"
        engines = ENGINES[block][n]
        out += [f"s:node:streng_active:{role}:{i}:{c}:{NPU[block][n][1]}" for i, c in engines.items()]
        top = max(engines, key=engines.get) if engines else -1
        out.append(f"s:node:streng_active:max:{role}:{top}:{engines.get(top, 0)}")
        r, w = CACHE[block][n]
        out += ["s:node:npu_cache:r:%d:%d:%d:%d" % r, "s:node:npu_cache:w:%d:%d:%d:%d" % w]
    if option & messages.BUSIF_RW_DATA and bus:
        p0r, p0w, p1r, p1w = BUS[block][n - 4]
        out += ["s:node:port0:burst:r:%d:%d:%d:%d" % p0r, "s:node:port0:burst:w:%d:%d:%d:%d" % p0w,
                "s:node:port1:burst:r:%d:%d:%d:%d" % p1r, "s:node:port1:burst:w:%d:%d:%d:%d" % p1w,
                "s:node:portx:burst:rw:0:0:0:0"]
    msgs = [{"log": {"level": 1, "str": s}} for s in out]
    return msgs + [{"op": {"name": "", "type": (5 << 24) | kind, "id": last << 16 | first, "duration": 0.0,
                           "counter_type": 1 << 16, "counters": list(MCU[block][n])}}]


def recording(bus=True):
    """[(opt, messages)] of ST's three passes, two samples each."""
    runs = []
    for p, option in enumerate(messages.ST_PASSES):
        for sample in range(2):
            n = 2 * p + sample
            final = sum(sum(MCU[b][n]) for b in (EC, SW))
            msgs = [m for b in (EC, SW) for m in _epoch(b, n, option, bus)]
            msgs.append({"op": {"name": "network", "type": 0, "id": 0, "duration": 0.0, "counter_type": 0,
                                "counters": [0, 0, 0, 0, 0, 0, final, 0, 0, 0]}})
            runs.append((messages.run_opt(option, sample), msgs))
    return runs


def c_info(path):
    """epoch_1, epoch_2 (the EC blob's) and epoch_3 (software) with their ops and cycles."""
    nodes = [(1, "NODE_HW", 20000, 5000, 6000, 4000, 2000), (2, "NODE_HW", 10000, 2500, 3000, 1000, 500),
             (3, "NODE_SW", 3000, 3000, 3000, 300, 100)]
    data = {"json_schema_version": "2.0",
            "graphs": [{"nodes": [{"id": n, "name": f"epoch_{n}", "mapping": m} for n, m, *_ in nodes]}],
            "memory_pools": [{"id": 1, "name": "npuRAM5", "address": "875429888", "subpools": []}],
            "power_estimates": [{"node_id": n, "ops": o, "compute_cycles": c, "max_cycles": x}
                                for n, _, o, c, x, _, _ in nodes],
            "memory_accesses": [{"node_id": n, "mpool_id": 1, "reads": r, "writes": w} for n, *_, r, w in nodes]}
    path.write_text(json.dumps(data))
    return str(path)


@pytest.fixture
def reports(tmp_path):
    folder = str(tmp_path / "profile")
    os.makedirs(folder)
    m = messages.parse_run(recording(), "network", CLOCKS, "recording")
    path = os.path.join(folder, "measurement.json")
    measure.save_measurement(m, path)
    logged = []
    steps.report_step(path, c_info(tmp_path / "network_c_info.json"), folder, log=logged.append)
    return folder, logged[0]


def _read(folder, name):
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        return f.read()


# Hand-computed figures. EC block: MCU pre (1000+1001+1000+1000+1002+1000)/6 = 1000.5 → 1001, core 48001/6 → 8001,
# post 500; sample totals (9500+9501+9501+9500+9502+9500)/6 = 9500.67 → 9501 cycles = 11.87625 µs at 800 MHz.
# NPU (EPOCH_LEN passes, 4 samples): pre 5001/4 → 1251, core 40003/4 = 10000.75 → 10001, post 625.
# SW epoch: MCU core 18001/6 → 3001, totals 19801/6 → 3301 cycles = 4.12625 µs; NPU core 15001/4 → 3751.
EC_BUS = {"busif0": {"read_bytes": 6640,                     # (10·1 + 0·2 + 5·4 + 100·8)·8, first record only
                     "write_bytes": 3232,                    # (2·2 + 50·8)·8
                     "read_bursts": [10, 0, 5, 100], "write_bursts": [0, 2, 0, 50],
                     "gb_per_s": pytest.approx(9872 / 10001)},     # bytes · 1 GHz / 10001 core NPU cycles
          "busif1": {"read_bytes": 120, "write_bytes": 0,     # (1 + 2 + 4 + 8)·8
                     "read_bursts": [1, 1, 1, 1], "write_bursts": [0, 0, 0, 0], "gb_per_s": pytest.approx(120 / 10001)},
          "total": {"read_bytes": 6760, "write_bytes": 3232, "gb_per_s": pytest.approx(9992 / 10001)}}
SW_BUS = {"busif0": {"read_bytes": 64, "write_bytes": 0, "read_bursts": [0, 0, 0, 1], "write_bursts": [0, 0, 0, 0],
                     "gb_per_s": pytest.approx(64 / 3751)},
          "busif1": {"read_bytes": 0, "write_bytes": 8, "read_bursts": [0, 0, 0, 0], "write_bursts": [1, 0, 0, 0],
                     "gb_per_s": pytest.approx(8 / 3751)},
          "total": {"read_bytes": 64, "write_bytes": 8, "gb_per_s": pytest.approx(72 / 3751)}}
# engines: ceiling mean per engine; 0-4 on bus interface 0 (here 0, 1, 4), 5-9 on 1 (5, 8);
#   % of the block's 10001 core NPU cycles
EC_ENGINES = [{"id": 0, "role": "input", "busif": 0, "cycles": 7001, "percent": pytest.approx(700100 / 10001)},
              {"id": 1, "role": "input", "busif": 0, "cycles": 3000, "percent": pytest.approx(300000 / 10001)},
              {"id": 4, "role": "output", "busif": 0, "cycles": 9001, "percent": pytest.approx(900100 / 10001)},
              {"id": 5, "role": "input", "busif": 1, "cycles": 5002, "percent": pytest.approx(500200 / 10001)},
              {"id": 8, "role": "output", "busif": 1, "cycles": 2001, "percent": pytest.approx(200100 / 10001)}]
# cache: truncated mean of 4 records: r_hit 407/4 → 101, r_miss 41/4 → 10, r_alloc_miss 14/4 → 3, evict 7/4 → 1,
# w_hit 202/4 → 50, w_miss 23/4 → 5, w_alloc_miss 1/4 → 0, w_through 29/4 → 7
EC_CACHE = {"r_hit": 101, "r_miss": 10, "r_alloc_miss": 3, "evict": 1, "w_hit": 50, "w_miss": 5, "w_alloc_miss": 0,
            "w_through": 7}
SW_CACHE = {"r_hit": 0, "r_miss": 1, "r_alloc_miss": 0, "evict": 0, "w_hit": 0, "w_miss": 0, "w_alloc_miss": 0,
            "w_through": 0}                                   # r_miss (1+2+2+2)/4 = 1.75 → 1


def test_counters_in_profile_json(reports):
    folder, _ = reports
    data = json.loads(_read(folder, "profile.json"))
    ec, sw = data["epochs"]
    assert (ec["name"], ec["epochs"], ec["kind"], sw["name"], sw["kind"]) == ("epoch_1", ["epoch_1", "epoch_2"], "EC",
                                                                              "epoch_3", "SW")
    assert ec["mcu_cycles"] == {"pre": 1001, "core": 8001, "post": 500}
    assert ec["npu_cycles"] == {"pre": 1251, "core": 10001, "post": 625}
    assert sw["mcu_cycles"] == {"pre": 200, "core": 3001, "post": 100}
    assert sw["npu_cycles"] == {"pre": 250, "core": 3751, "post": 125}
    assert ec["bus"] == EC_BUS and sw["bus"] == SW_BUS
    assert ec["stream_engines"] == EC_ENGINES and ec["busiest_engine"] == EC_ENGINES[2]
    assert sw["stream_engines"] == [] and sw["busiest_engine"] is None          # reported, none active
    assert ec["npu_cache"] == EC_CACHE and sw["npu_cache"] == SW_CACHE
    # core NPU time in % of the block's time: 10.001 µs of 11.87625 µs; 3.751 µs of 4.12625 µs
    assert ec["npu_core_percent"] == pytest.approx(10.001 * 100 / 11.87625)
    assert sw["npu_core_percent"] == pytest.approx(3.751 * 100 / 4.12625)
    # ops/cycle: EC ops 20000+10000 over compute 5000+2500 (ideal), max 6000+3000 (compiler), 10001 core NPU
    # cycles (core-only), 1251+10001+625 = 11877 NPU cycles (measured); SW 3000 ops, 3751 core, 4126 NPU cycles
    assert (ec["ideal_ops_per_cycle"], ec["compiler_ops_per_cycle"], ec["core_ops_per_cycle"], ec["ops_per_cycle"]) \
        == (4.0, pytest.approx(30000 / 9000), pytest.approx(30000 / 10001), pytest.approx(30000 / 11877))
    assert (sw["ideal_ops_per_cycle"], sw["core_ops_per_cycle"], sw["ops_per_cycle"]) == (
        1.0, pytest.approx(3000 / 3751), pytest.approx(3000 / 4126))
    # MB/s counts the bus bytes the board measured over the block's time, not the compiler's 7500 B
    assert ec["traffic_source"] == "bus" and ec["bandwidth"] == {"busif0": pytest.approx(9872 / 11.87625),
                                                                 "busif1": pytest.approx(120 / 11.87625)}
    assert sw["bandwidth"] == {"busif0": pytest.approx(64 / 4.12625), "busif1": pytest.approx(8 / 4.12625)}
    assert ec["absent"] == [] and sw["absent"] == []
    t = data["totals"]
    assert t["npu_core_cycles"] == 13752                                   # 10001 + 3751
    assert (t["npu_pre_cycles"], t["npu_post_cycles"]) == (1501, 750)     # 1251 + 250, 625 + 125
    assert t["npu_core_percent"] == pytest.approx(13.752 * 100 / 16.0025)  # of (9501 + 3301) cycles at 800 MHz
    assert t["npu_core_ms"] == pytest.approx(13752 / 1e6)                  # 13752 NPU cycles at 1 GHz
    assert t["bus"] == {
        "busif0": {"read_bytes": 6704, "write_bytes": 3232,
                   "read_bursts": [10, 0, 5, 101], "write_bursts": [0, 2, 0, 50],
                   "gb_per_s": pytest.approx(9936 / 13752)},
        "busif1": {"read_bytes": 120, "write_bytes": 8, "read_bursts": [1, 1, 1, 1], "write_bursts": [1, 0, 0, 0],
                   "gb_per_s": pytest.approx(128 / 13752)},
        # over the summed phase cycles, as ST: 1001+8001+500 + 200+3001+100 = 12803 MCU cycles
        "total": {"read_bytes": 6824, "write_bytes": 3240, "gb_per_s": pytest.approx(10064 / 13752),
                  "average_gb_per_s": pytest.approx(10064 * 0.8 / 12803)}}
    assert [(e["id"], e["cycles"]) for e in t["stream_engines"]] == [(0, 7001), (1, 3000), (4, 9001), (5, 5002),
                                                                      (8, 2001)]
    assert t["busiest_engine"] == {"id": 4, "role": "output", "busif": 0, "cycles": 9001,
                                   "percent": pytest.approx(900100 / 13752)}
    assert t["npu_cache"] == {"r_hit": 101, "r_miss": 11, "r_alloc_miss": 3, "evict": 1, "w_hit": 50, "w_miss": 5,
                              "w_alloc_miss": 0, "w_through": 7}
    # 33000 ops over compute 5000+2500+3000, max 6000+3000+3000, core NPU 13752 cycles
    assert (t["ideal_ops_per_cycle"], t["compiler_ops_per_cycle"], t["core_ops_per_cycle"]) == (
        pytest.approx(33000 / 10500), 2.75, pytest.approx(33000 / 13752))


def test_counters_in_the_table_and_profile_txt(reports):
    folder, console = reports
    title, *lines = console.splitlines()
    assert title == "profile of network (c-name network) on the board"      # which model, before any figure
    assert lines[0].split() == ["epoch", "unit", "kind", "time", "ms", "%", "pre", "core", "post", "NPU", "core", "%",
                                "ops", "ops/cycle", "MB/s", "busiest", "engine"]
    # EC: 9501 of 12802 cycles = 74.2%; MB/s 9992 B / 11.87625 µs = 841.3; engine 4 (output) 9001/10001 = 90.0%
    assert lines[2].split() == ["epoch_1..epoch_2", "NPU", "EC", "0.0119", "74.2", "1001", "8001", "500", "84.2",
                                "30000", "2.53", "841.3", "#4", "o", "90.0%"]
    # SW: 72 B / 4.12625 µs = 17.4 MB/s; 3000 ops / 4126 NPU cycles = 0.73
    assert lines[3].split() == ["epoch_3", "CPU", "SW", "0.0041", "25.8", "200", "3001", "100", "90.9", "3000",
                                "0.73", "17.4", "none"]
    # totals: 13.752 µs NPU core of 16.0025 µs; 33000 ops / 16003 NPU cycles; 10064 B · 800 MHz / 12803 cycles
    assert lines[4].split() == ["total", "0.0160", "100.0", "1201", "11002", "600", "85.9", "33000", "2.06", "628.9",
                                "#4", "o", "65.5%"]
    # bus: (6640+64) + 3232 B over 13752 core NPU cycles at 1 GHz; (120 + 8) B; 10064 B, and over 12803 MCU cycles
    assert lines[9:12] == ["bus interface 0: read 6,704 B, write 3,232 B, 0.723 GB/s",
                           "bus interface 1: read 120 B, write 8 B, 0.009 GB/s",
                           "bus total: 0.732 GB/s over the NPU core time, 0.629 GB/s over the inference"]
    assert "busiest stream engine: #4 (output, busif 0) 9,001 active cycles = 65.5% of the NPU core time" in lines
    assert "NPU cache: read hit 101 miss 11 alloc miss 3 evict 1; write hit 50 miss 5 alloc miss 0 " \
           "write-through 7" in lines
    assert "MB/s: bytes the board counted on the NPU's bus interfaces" in lines
    # the compiler's estimate covers the NPU block alone: 30000 ops, 9000 max cycles at 1 GHz against its measured
    # 11.87625 µs; 1e9/9000 and 1e9/7500 inf/s
    assert "compiler, NPU blocks only (1 of 2): 30,000 ops, 9,000 max cycles = 0.0090 ms (measured 0.0119 ms) → " \
           "111111.1 inf/s, ideal 133333.3 inf/s for them alone" in lines
    assert not [line for line in lines if line.startswith("not reported")]
    text = _read(folder, "profile.txt")
    assert console_part(text) == console + "\n"          # what `scons profile` prints: no counter tables
    tables = _text_tables(text)
    assert tables["Bus interfaces"] == [["epoch_1..epoch_2", "6640", "3232", "0.987", "120", "0", "0.012", "0.999"],
                                        ["epoch_3", "64", "0", "0.017", "0", "8", "0.002", "0.019"],
                                        ["total", "6704", "3232", "0.723", "120", "8", "0.009", "0.732"]]
    assert tables["Bus bursts"] == BURST_ROWS
    assert tables["NPU cache"] == CACHE_ROWS
    assert tables["Stream engines"][:5] == [[c for c in r if c] for r in ENGINE_ROWS]
    assert tables["NPU cycles"] == [r for r in NPU_ROWS]


BURST_ROWS = [["epoch_1..epoch_2", "10/0/5/100", "0/2/0/50", "1/1/1/1", "0/0/0/0"],
              ["epoch_3", "0/0/0/1", "0/0/0/0", "0/0/0/0", "1/0/0/0"],
              ["total", "10/0/5/101", "0/2/0/50", "1/1/1/1", "1/0/0/0"]]
CACHE_ROWS = [["epoch_1..epoch_2", "101", "10", "3", "1", "50", "5", "0", "7"],
              ["epoch_3", "0", "1", "0", "0", "0", "0", "0", "0"],
              ["total", "101", "11", "3", "1", "50", "5", "0", "7"]]
# 7001/10001 = 70.0%, 3000/10001 = 30.0%, 9001/10001 = 90.0%, 5002/10001 = 50.0%, 2001/10001 = 20.0%
ENGINE_ROWS = [["epoch_1..epoch_2", "0", "input", "0", "7001", "70.0", ""], ["", "1", "input", "0", "3000", "30.0", ""],
               ["", "4", "output", "0", "9001", "90.0", "*"], ["", "5", "input", "1", "5002", "50.0", ""],
               ["", "8", "output", "1", "2001", "20.0", ""]]
# ops/cycle ideal 30000/7500, compiler 30000/9000, core-only 30000/10001, measured 30000/11877 (SW: 3000/3751, /4126);
# total: NPU pre 1251+250, post 625+125, 33000 ops over 10500, 12000, 13752, 16003
NPU_ROWS = [["epoch_1..epoch_2", "1251", "10001", "625", "84.2", "4.00", "3.33", "3.00", "2.53"],
            ["epoch_3", "250", "3751", "125", "90.9", "1.00", "1.00", "0.80", "0.73"],
            ["total", "1501", "13752", "750", "85.9", "3.14", "2.75", "2.40", "2.06"]]


def _text_tables(text):
    """profile.txt's detail tables: first word(s) of the title → rows split on whitespace."""
    out, title = {}, None
    for block in text.split("\n\n"):
        lines = block.splitlines()
        if len(lines) > 3 and set(lines[2]) <= {"-", " "}:
            title = next(t for t in ("Bus interfaces", "Bus bursts", "NPU cache", "Stream engines", "NPU cycles",
                                     "profile of", "compared") if lines[0].startswith(t))
            out[title] = [line.split() for line in lines[3:]]
    return out


class _Tables(HTMLParser):
    """Every <table> of a page: [(headers, rows)], cell text as shown."""

    def __init__(self):
        super().__init__()
        self.tables, self.cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append(([], []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            headers, rows = self.tables[-1]
            (headers if tag == "th" else rows[-1]).append(self.cell)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def test_counters_in_the_html_page(reports, tmp_path):
    folder, _ = reports
    probe, console = render_in_chromium(os.path.join(folder, "profile.html"), tmp_path)
    assert console == [] and probe["svg"] > 100 and probe["rows"] == 3 and probe["broken"] == 0
    page = _Tables()
    page.feed(_read(folder, "profile.html"))
    tables = {tuple(h): [r for r in rows if r] for h, rows in page.tables}
    by_first = {h[1]: rows for h, rows in tables.items()}
    assert by_first["unit"][0] == ["epoch_1..epoch_2", "NPU", "EC", "0.0119", "74.2", "1001", "8001", "500", "84.2",
                                   "30000", "2.53", "841.3", "#4 o 90.0%"]
    assert by_first["unit"][1][-2:] == ["17.4", "none"] and by_first["unit"][2][-2:] == ["628.9", "#4 o 65.5%"]
    assert by_first["busif 0 read B"] == [["epoch_1..epoch_2", "6640", "3232", "0.987", "120", "0", "0.012", "0.999"],
                                          ["epoch_3", "64", "0", "0.017", "0", "8", "0.002", "0.019"],
                                          ["total", "6704", "3232", "0.723", "120", "8", "0.009", "0.732"]]
    assert by_first["busif 0 read"] == BURST_ROWS
    assert by_first["read hit"] == CACHE_ROWS
    assert by_first["engine"][:6] == ENGINE_ROWS + [["epoch_3", "none", "", "", "", "", ""]]
    assert by_first["NPU pre"] == NPU_ROWS


def test_counters_in_the_trace(reports):
    folder, _ = reports
    events = json.loads(_read(folder, "profile.trace.json"))["traceEvents"]
    tracks = {}
    for e in events:
        if e["ph"] == "C":
            tracks.setdefault(e["name"], []).append((e["ts"], e["args"]))
    # epoch_1 starts at 0, epoch_3 at 1001+8001+500 = 9502 MCU cycles (µs at 800 MHz: cycles / 800), the inference
    # ends at 9502 + 3301 = 12803; the trace keeps µs to 3 decimals
    starts = [0, pytest.approx(9502 / 800, abs=5e-4), pytest.approx(12803 / 800, abs=5e-4)]
    assert tracks["bus interface 0 (bytes)"] == list(zip(starts, [{"read": 6640, "write": 3232},
                                                                  {"read": 64, "write": 0}, {"read": 0, "write": 0}]))
    assert tracks["bus interface 1 (bytes)"] == list(zip(starts, [{"read": 120, "write": 0}, {"read": 0, "write": 8},
                                                                  {"read": 0, "write": 0}]))
    (_, ec_bw), (_, sw_bw), _ = tracks["bus bandwidth (GB/s)"]
    assert ec_bw == {"busif0": pytest.approx(9872 / 10001), "busif1": pytest.approx(120 / 10001)}
    assert sw_bw == {"busif0": pytest.approx(64 / 3751), "busif1": pytest.approx(8 / 3751)}
    slices = {e["name"]: e["args"] for e in events if e["ph"] == "X" and e["cat"] in ("CPU", "NPU") and e["tid"] == 1}
    assert slices["epoch_1"]["bus"] == EC_BUS and slices["epoch_3"]["bus"] == SW_BUS
    assert slices["epoch_1"]["npu_cache"] == EC_CACHE and slices["epoch_3"]["npu_cache"] == SW_CACHE
    assert slices["epoch_1"]["busiest_engine"] == EC_ENGINES[2] and slices["epoch_1"]["npu_cycles"] == [1251, 10001,
                                                                                                         625]
    assert slices["epoch_3"]["stream_engines"] == [] and "busiest_engine" not in slices["epoch_3"]


def test_picture_puts_the_measured_bandwidth_per_interface_beside_the_estimate(reports, tmp_path):
    folder, _ = reports
    profile = merge(load_measurement(os.path.join(folder, "measurement.json")),
                    read_c_info(c_info(tmp_path / "network_c_info.json")))
    # MB/s over the block's time: EC bus 0 moved 6640+3232 B, bus 1 120 B, the compiler expects 4000+2000+1000+500
    # B in 11.87625 µs; SW: 64 and 8 B measured, 300+100 B expected in 4.12625 µs
    assert plot.bandwidth_bars(profile) == [
        ("measured", [{"busif 0": pytest.approx(9872 / 11.87625), "busif 1": pytest.approx(120 / 11.87625)},
                      {"busif 0": pytest.approx(64 / 4.12625), "busif 1": pytest.approx(8 / 4.12625)}]),
        ("estimate", [{"npuRAM5": pytest.approx(7500 / 11.87625)}, {"npuRAM5": pytest.approx(400 / 4.12625)}])]
    svg = _read(folder, "profile.svg")
    assert all(f"<!-- {label} -->" in svg for label in ("busif 0", "busif 1", "npuRAM5", "measured",   # the legend
                                                        "compiler's estimate"))


def test_counters_the_board_did_not_send_are_named_absent(tmp_path):
    """A board without bus-interface counters: the bus figures are absent (never 0), the line names
    them, MB/s falls back to the compiler's estimate and says so."""
    folder = str(tmp_path / "profile")
    os.makedirs(folder)
    path = os.path.join(folder, "measurement.json")
    measure.save_measurement(messages.parse_run(recording(bus=False), "network", CLOCKS, "recording"), path)
    logged = []
    steps.report_step(path, c_info(tmp_path / "network_c_info.json"), folder, log=logged.append)
    lines = logged[0].splitlines()[1:]
    assert "not reported by the board: bus-interface 0/1 read and write bytes and bursts" in lines
    assert "MB/s: the compiler's estimate (the board counted no traffic)" in lines
    assert lines[2].split()[11] == "631.5"          # the compiler's 4000+2000+1000+500 B / 11.87625 µs
    data = json.loads(_read(folder, "profile.json"))
    assert all(e["bus"] is None and e["absent"] == ["busif"] for e in data["epochs"]) and data["totals"]["bus"] is None
    assert "Bus interfaces" not in _read(folder, "profile.txt")
    assert not any(e["name"].startswith("bus") for e in json.loads(_read(folder, "profile.trace.json"))["traceEvents"])


def test_diff_covers_the_counters(tmp_path, reports):
    folder, _ = reports
    faster = recording()
    for _, msgs in faster:          # every sample: engine 4 busier by 1000 cycles
        for m in msgs:
            s = m.get("log", {}).get("str", "")
            if s.startswith("s:node:streng_active:o:4:"):
                m["log"]["str"] = s.replace(":o:4:900", ":o:4:1000")
    path = os.path.join(folder, "measurement.json")
    measure.save_measurement(messages.parse_run(faster, "network", CLOCKS, "recording"), path)
    logged = []
    steps.report_step(path, c_info(tmp_path / "network_c_info.json"), folder, log=logged.append)
    d = json.loads(_read(folder, steps.DIFF))
    ec = next(e for e in d["epochs"] if e["name"] == "epoch_1")
    # engine 4: (10000+10001)/2 → 10001 cycles = 100.0% of 10001, before 90.0%
    assert ec["busiest_engine_percent"]["delta"] == pytest.approx(100 - 900100 / 10001)
    assert ec["bus_bytes"] == {"before": 9992, "after": 9992, "delta": 0, "percent": 0.0}
    assert ec["cache_misses"]["after"] == 15 and d["total"]["npu_core_cycles"]["delta"] == 0
    assert "Δ busiest engine %" in logged[0] and "+10.0" in logged[0]


@pytest.mark.parametrize("key, old", [("busif", {"port0": {"reads": 392, "writes": 256}}),
                                      ("streng_active", {"3": 9001})])
def test_a_measurement_stored_before_bursts_and_engine_roles_is_a_profile_again_error(tmp_path, key, old):
    """Bus bytes without their bursts, engine cycles without their role: the reports cannot be
    made from it; one line says to profile again."""
    data = messages.parse_run(recording(), "network", CLOCKS, "recording").to_dict()
    data["epochs"][0][key] = old
    path = tmp_path / "measurement.json"
    path.write_text(json.dumps(data))
    with pytest.raises(steps.N6Error) as e:
        steps.load_measurement(str(path))
    assert str(e.value).startswith(f"{path}: not a stored measurement") and "profile again" in str(e.value)
    assert "\n" not in str(e.value)


# A software epoch, then a HYBRID epoch and the EXTRA epoch that follows it, one sample in one pass
# with every counter. Per epoch: kind code, MCU and NPU (pre, core, post) cycles, bursts of 1/2/4/8
# beats (port0 read, port0 write, port1 read, port1 write), NPU cache read/write records, active
# input engines (id → cycles), and the compiler's ops.
FOLD = {4: (2, (40, 320, 40), (50, 400, 50), ((0, 0, 0, 1), (0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0)),
            ((0, 0, 0, 0), (0, 0, 0, 0)), {}, 400),
        5: (3, (100, 2000, 300), (120, 2400, 360), ((1, 0, 0, 10), (0, 0, 0, 5), (0, 0, 0, 0), (0, 0, 0, 0)),
            ((10, 1, 0, 0), (5, 0, 0, 0)), {0: 1500}, 7000),
        6: (1, (50, 1000, 150), (60, 1100, 180), ((0, 0, 0, 20), (0, 0, 0, 0), (2, 0, 0, 0), (0, 0, 0, 1)),
            ((99, 9, 0, 0), (7, 0, 0, 0)), {3: 900}, 1000)}


def _fold_recording():
    """[(opt, messages)] of one pass, one sample, in the firmware's log format."""
    option = messages.STRG_I_ACTIVE | messages.EPOCH_LEN | messages.NPU_CACHE | messages.BUSIF_RW_DATA
    msgs = []
    for n, (code, mcu, npu, bus, cache, engines, _) in FOLD.items():
        kind = {1: "EXTRA", 2: "SW", 3: "HYBRID"}[code]
        logs = [f"s:node:evt_pre_start:{n - 1}:{n}:{n}:{n}:00000000:{(5 << 24) | code:08X}:{kind}",
                "s:node:mcu_cycles:%d:%d:%d" % mcu, "s:node:npu_cycles:%d:%d:%d" % npu,
                *(f"s:node:streng_active:i:{i}:{c}:{npu[1]}" for i, c in engines.items()),
                "s:node:streng_active:max:i:%d:%d" % max([(i, c) for i, c in engines.items()] or [(-1, 0)],
                                                         key=lambda ic: ic[1]),
                "s:node:npu_cache:r:%d:%d:%d:%d" % cache[0], "s:node:npu_cache:w:%d:%d:%d:%d" % cache[1],
                *(f"s:node:{port}:burst:{rw}:%d:%d:%d:%d" % b
                  for (port, rw), b in zip((("port0", "r"), ("port0", "w"), ("port1", "r"), ("port1", "w")), bus))]
        msgs += [{"log": {"level": 1, "str": s}} for s in logs]
        msgs.append({"op": {"name": "", "type": (5 << 24) | code, "id": n << 16 | n, "duration": 0.0,
                            "counter_type": 1 << 16, "counters": list(mcu)}})
    final = sum(sum(e[1]) for e in FOLD.values())
    msgs.append({"op": {"name": "network", "type": 0, "id": 0, "duration": 0.0, "counter_type": 0,
                        "counters": [0, 0, 0, 0, 0, 0, final, 0, 0, 0]}})
    return [(messages.run_opt(option, 0), msgs)]


def _fold_c_info(path):
    nodes = [(n, "NODE_SW" if FOLD[n][0] == 2 else "NODE_HW", FOLD[n][6]) for n in FOLD]
    data = {"json_schema_version": "2.0",
            "graphs": [{"nodes": [{"id": n, "name": f"epoch_{n}", "mapping": m} for n, m, _ in nodes]}],
            "memory_pools": [],
            "power_estimates": [{"node_id": n, "ops": o, "compute_cycles": o, "max_cycles": o} for n, _, o in nodes],
            "memory_accesses": []}
    path.write_text(json.dumps(data))
    return str(path)


def test_an_extra_epoch_is_folded_into_the_hybrid_epoch_before_it(tmp_path):
    """As ST's profiler: the EXTRA epoch's MCU cycles are kept apart yet counted in the HYBRID
    block's time and the totals, its NPU cycles and bus bursts are added, its cache and stream
    engines are not; the row names both epochs."""
    folder = str(tmp_path / "profile")
    os.makedirs(folder)
    path = os.path.join(folder, "measurement.json")
    measure.save_measurement(messages.parse_run(_fold_recording(), "network", CLOCKS, "recording"), path)
    logged = []
    steps.report_step(path, _fold_c_info(tmp_path / "network_c_info.json"), folder, log=logged.append)
    data = json.loads(_read(folder, "profile.json"))
    sw, hybrid = data["epochs"]                                   # no row of its own for the EXTRA epoch
    assert (hybrid["name"], hybrid["epochs"], hybrid["kind"], hybrid["extra"]) == (
        "epoch_5", ["epoch_5", "epoch_6"], "HYBRID", 1)
    assert hybrid["mcu_cycles"] == {"pre": 100, "core": 2000, "post": 300}          # the HYBRID epoch's own
    assert hybrid["extra_mcu_cycles"] == {"pre": 50, "core": 1000, "post": 150}
    assert (sw["extra"], sw["extra_mcu_cycles"]) == (0, None)
    # time: 2400 + 1200 MCU cycles at 800 MHz = 4.5 µs of 4.5 + 0.5 µs (the SW epoch's 400 cycles)
    assert hybrid["time_ms"] == pytest.approx(0.0045) and hybrid["percent"] == pytest.approx(90.0)
    assert hybrid["npu_cycles"] == {"pre": 180, "core": 3500, "post": 540}          # 120+60, 2400+1100, 360+180
    assert hybrid["npu_clock_cycles"] == 4220
    # bursts added: port0 read (1·1 + 30·8 beats)·8 = 1928 B, write 5·8·8 = 320 B; port1 read 2·1·8 = 16 B,
    # write 1·8·8 = 64 B
    bus = hybrid["bus"]
    assert (bus["busif0"]["read_bursts"], bus["busif0"]["write_bursts"]) == ([1, 0, 0, 30], [0, 0, 0, 5])
    assert (bus["busif1"]["read_bursts"], bus["busif1"]["write_bursts"]) == ([2, 0, 0, 0], [0, 0, 0, 1])
    assert (bus["total"]["read_bytes"], bus["total"]["write_bytes"]) == (1944, 384)
    # cache and stream engines: the HYBRID epoch's alone (engine 0, 1500 of 3500 core NPU cycles)
    assert hybrid["npu_cache"]["r_hit"] == 10 and hybrid["npu_cache"]["w_hit"] == 5
    assert [e["id"] for e in hybrid["stream_engines"]] == [0]
    assert hybrid["busiest_engine"]["percent"] == pytest.approx(150000 / 3500)
    # the compiler's figures of both epochs: 7000 + 1000 ops over 4220 NPU cycles
    assert hybrid["ops"] == 8000 and hybrid["ops_per_cycle"] == pytest.approx(8000 / 4220)
    t = data["totals"]
    assert (t["epochs"], t["extra"]) == (2, 1)
    assert t["mcu_cycles"] == [190, 3320, 490]              # 40+100+50, 320+2000+1000, 40+300+150: 4000 cycles
    assert t["time_ms"] == pytest.approx(0.005) and t["inf_per_s"] == pytest.approx(200000.0)
    assert (t["npu_pre_cycles"], t["npu_core_cycles"], t["npu_post_cycles"]) == (230, 3900, 590)
    lines = logged[0].splitlines()[1:]
    # SW: 400 cycles = 0.5 µs = 10%, NPU core 0.4 µs = 80%, 400 ops / 500 NPU cycles, 64 B / 0.5 µs = 128 MB/s
    assert lines[2].split() == ["epoch_4", "CPU", "SW", "0.0005", "10.0", "40", "320", "40", "80.0", "400", "0.80",
                                "128.0", "none"]
    # HYBRID + EXTRA: phases 100+50, 2000+1000, 300+150; NPU core 3.5 µs of 4.5 µs = 77.8%; 8000 ops / 4220 = 1.90;
    # (1944 + 384) B / 4.5 µs = 517.3 MB/s; engine 0 1500/3500 = 42.9%
    assert lines[3].split() == ["epoch_5..epoch_6", "NPU", "HYBRID", "0.0045", "90.0", "150", "3000", "450", "77.8",
                                "8000", "1.90", "517.3", "#0", "i", "42.9%"]
    # total: NPU core 3.9 µs of 5 µs = 78.0%; 8400 ops / 4720 NPU cycles = 1.78; 2392 B / 5 µs = 478.4 MB/s;
    # engine 0 1500/3900 = 38.5%
    assert lines[4].split() == ["total", "0.0050", "100.0", "190", "3320", "490", "78.0", "8400", "1.78", "478.4",
                                "#0", "i", "38.5%"]


def test_a_measurement_stored_before_the_fold_loads_folded(tmp_path, monkeypatch):
    """measurement.json written before EXTRA epochs were folded: its EXTRA block is folded on load."""
    monkeypatch.setattr(messages, "fold_extra", list)             # the blocks as stored then
    data = messages.parse_run(_fold_recording(), "network", CLOCKS, "recording").to_dict()
    for e in data["epochs"]:
        del e["extra"], e["extra_mcu_cycles"]
    assert [e["kind"] for e in data["epochs"]] == ["SW", "HYBRID", "EXTRA"]
    path = tmp_path / "measurement.json"
    path.write_text(json.dumps(data))
    sw, hybrid = steps.load_measurement(str(path)).epochs
    assert (hybrid.index, hybrid.last, hybrid.extra, hybrid.mcu_total) == (5, 6, 1, 3600)
    assert hybrid.extra_mcu_cycles.as_list() == [50, 1000, 150] and hybrid.npu_cycles.as_list() == [180, 3500, 540]


def test_an_extra_epoch_numbered_as_st_firmware_numbers_it_folds_into_its_hybrid_epoch():
    """ST's aiValidation firmware: an internal epoch's own epoch_num and last_epoch_num are
    negative (evt_pre_start's fourth and fifth values, the operator id's int16 high half), its
    current epoch and the operator id's low half those of the epoch it belongs to."""
    (opt, msgs), = _fold_recording()
    for m in msgs:
        log = m.get("log", {}).get("str", "")
        if log.startswith("s:node:evt_pre_start:5:6:6:6:"):
            m["log"]["str"] = log.replace(":5:6:6:6:", ":5:5:-10:-10:")
        elif m.get("op", {}).get("id") == 6 << 16 | 6:
            m["op"]["id"] = (-10 & 0xFFFF) << 16 | 5
    epochs = messages.parse_run([(opt, msgs)], "network", CLOCKS, "recording").epochs
    assert [(e.index, e.last, e.kind, e.extra) for e in epochs] == [(4, 4, "SW", 0), (5, 5, "HYBRID", 1)]
