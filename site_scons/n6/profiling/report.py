"""The profile as a console table (tabulate) with its summary lines, and as profile.json. The
table keeps one column per figure an engineer scans for; `details` has every counter."""
import json
from collections.abc import Sequence
from typing import TypeVar

from tabulate import tabulate

from ..atomic import write_text
from .counters import shown
from ..jsonfile import JsonObject
from .merge import TRAFFIC_SOURCES, Profile

T = TypeVar("T")
HEADERS = ["epoch", "unit", "kind", "time ms", "%", "pre", "core", "post", "NPU core %", "ops", "ops/cycle", "MB/s",
           "busiest engine"]
COMPILER_COLUMNS = ("ops", "ops/cycle")
# what the board did not report, by EpochMeasurement.absent() name
ABSENT = {"npu_cycles": "NPU cycles (pre/core/post)",
          "busif": "bus-interface 0/1 read and write bytes and bursts",
          "streng_active": "stream-engine active cycles",
          "npu_cache": "NPU cache hits, misses, allocation misses, evictions and write-through"}


def _kept(profile: Profile) -> list[bool]:
    """HEADERS without the compiler's columns when there is no c_info.json, and without a counter's
    column when no block reported the counter."""
    drop = set() if profile.c_info else set(COMPILER_COLUMNS)
    if all(e.npu_core_percent is None for e in profile.epochs):
        drop.add("NPU core %")
    if all(e.stream_engines is None for e in profile.epochs):
        drop.add("busiest engine")
    return [h not in drop for h in HEADERS]


def _keep(profile: Profile, row: Sequence[T]) -> list[T]:
    return [v for v, keep in zip(row, _kept(profile)) if keep]


def headers(profile: Profile) -> list[str]:
    return _keep(profile, HEADERS)


def _busiest(engine: JsonObject | None, reported: bool) -> str:
    if engine is None:
        return "none" if reported else ""
    share = "" if engine["percent"] is None else f" {engine['percent']:.1f}%"
    return f"#{engine['id']} {engine['role'][0]}{share}"


def rows(profile: Profile) -> list[list[object]]:
    """One list per epoch block (shared by the console and the HTML page)."""
    out: list[list[object]] = []
    for e in profile.epochs:
        out.append(_keep(profile, [e.block, e.unit, e.kind, f"{e.time_ms:.4f}", f"{e.percent:.1f}",
                                   *e.all_mcu_cycles.as_list(),
                                   shown(e.npu_core_percent, ".1f"),
                                   e.ops, profile.c_info and f"{e.ops_per_cycle:.2f}",
                                   "" if e.bandwidth is None else f"{sum(e.bandwidth.values()):.1f}",
                                   _busiest(e.busiest_engine, e.stream_engines is not None)]))
    return out


def _absent_line(profile: Profile) -> str | None:
    parts: list[str] = []
    for key, what in ABSENT.items():
        missing = [e.name for e in profile.epochs if key in e.absent]
        if missing:
            parts.append(what if len(missing) == len(profile.epochs) else f"{what} ({', '.join(missing)})")
    return "not reported by the board: " + "; ".join(parts) if parts else None


def _gb(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f} GB/s"


def counter_lines(profile: Profile) -> list[str]:
    """The NPU counters of the whole inference, one line each."""
    lines: list[str]
    t, lines = profile.totals, []
    if t["npu_core_cycles"] is not None:
        line = (f"NPU core {t['npu_core_cycles']:,} cycles, {t['npu_core_ms']:.4f} ms = "
                f"{t['npu_core_percent']:.1f}% of the inference")
        if t["ops"] is not None:        # the compiler's ideal: of NPU work, none in an all-software model
            ideal = f"ideal {t['ideal_ops_per_cycle']:.2f}, " if t["npu_blocks"] else ""
            line += (f"; ops/cycle {ideal}core-only "
                     f"{shown(t['core_ops_per_cycle'], '.2f')}, "
                     f"measured {t['ops_per_cycle']:.2f}")
        lines.append(line)
    if t["bus"]:
        b = t["bus"]
        lines += [f"bus interface {k[-1]}: read {v['read_bytes']:,} B, write {v['write_bytes']:,} B, "
                  f"{_gb(v['gb_per_s'])}" for k, v in b.items() if k != "total"]
        lines.append(f"bus total: {_gb(b['total']['gb_per_s'])} over the NPU core time, "
                     f"{_gb(b['total']['average_gb_per_s'])} over the inference")
    if t["stream_engines"] is not None:
        e = t["busiest_engine"]
        lines.append("busiest stream engine: none active" if e is None else
                     f"busiest stream engine: #{e['id']} ({e['role']}, busif {e['busif']}) {e['cycles']:,} active "
                     f"cycles" + ("" if e["percent"] is None else f" = {e['percent']:.1f}% of the NPU core time"))
    if t["npu_cache"] is not None:
        c = t["npu_cache"]
        lines.append(f"NPU cache: read hit {c['r_hit']:,} miss {c['r_miss']:,} alloc miss {c['r_alloc_miss']:,} "
                     f"evict {c['evict']:,}; write hit {c['w_hit']:,} miss {c['w_miss']:,} alloc miss "
                     f"{c['w_alloc_miss']:,} write-through {c['w_through']:,}")
    return lines


def compiler_line(profile: Profile) -> str | None:
    """The compiler's estimate: its cycles are NPU cycles, so its inf/s covers the NPU blocks only
    (ST's profiler divides by every epoch's max_cycles, software ones too) and is left out
    for a model whose every epoch runs on the CPU. None: no c_info.json."""
    t = profile.totals
    if t["ops"] is None:
        return None
    if not t["npu_blocks"]:
        return (f"compiler: {t['ops']:,} ops; no inf/s estimate: every epoch runs on the CPU and the compiler's "
                f"cycles are NPU cycles")
    if not t["npu_max_cycles"]:
        return f"compiler: {t['ops']:,} ops; no inf/s estimate: no max cycles for the NPU blocks"
    n, npu_ms = t["npu_blocks"], sum(e.time_ms for e in profile.epochs if e.unit == "NPU")
    which = "" if n == len(profile.epochs) else f", NPU blocks only ({n} of {len(profile.epochs)})"
    est_ms = t["npu_max_cycles"] * 1e3 / profile.clocks["npu_freq"]
    return (f"compiler{which}: {t['npu_ops']:,} ops, {t['npu_max_cycles']:,} max cycles = {est_ms:.4f} ms "
            f"(measured {npu_ms:.4f} ms) → {t['compiler_inf_per_s']:.1f} inf/s, ideal "
            f"{shown(t['compiler_ideal_inf_per_s'], '.1f')} inf/s" + ("" if not which else " for them alone"))


def summary_lines(profile: Profile) -> list[str]:
    t = profile.totals
    pre, core, post = t["mcu_cycles"]
    board = "simulated board" if profile.simulated else "board"
    lines = [f"total {t['time_ms']:.4f} ms [{pre:,} {core:,} {post:,}] MCU cycles "
             f"[{t['phase_percent'][0]:.1f}% {t['phase_percent'][1]:.1f}% {t['phase_percent'][2]:.1f}%]",
             f"{t['inf_per_s']:.2f} inf/s on the {board} (CPU {t['cpu_ms']:.4f} ms, NPU {t['npu_ms']:.4f} ms)"]
    line = compiler_line(profile)
    if line:
        lines.append(line)
    lines += counter_lines(profile)
    sources = [TRAFFIC_SOURCES[s] for s in dict.fromkeys(e.traffic_source for e in profile.epochs) if s]
    if sources:
        lines.append("MB/s: " + "; ".join(sources))
    absent = _absent_line(profile)
    if absent:
        lines.append(absent)
    if profile.compiler_absent:
        lines.append(profile.compiler_absent)
    return lines


def total_row(profile: Profile) -> list[object]:
    t = profile.totals
    return _keep(profile, ["total", "", "", f"{t['time_ms']:.4f}", "100.0", *t["mcu_cycles"],
                           shown(t["npu_core_percent"], ".1f"), t["ops"],
                           profile.c_info and f"{t['ops_per_cycle']:.2f}",
                           f"{sum(v['mb_per_s'] for v in t['traffic'].values()):.1f}" if t["traffic"] else "",
                           _busiest(t["busiest_engine"], t["stream_engines"] is not None)])


def title(profile: Profile) -> str:
    """The report's first line: which model, under which c-name, on which board (the console
    prints several models' reports in the order their steps end, and a stored one alone)."""
    where = profile.board or "the board"
    return f"profile of {profile.model} (c-name {profile.c_name}) on {where}" + \
        (" (simulated)" if profile.simulated else "")


def table(profile: Profile) -> str:
    columns = headers(profile)
    text = tabulate(rows(profile) + [total_row(profile)], headers=columns, disable_numparse=True,
                    colalign=("left", "left", "left") + ("right",) * (len(columns) - 3))
    return "\n".join([title(profile), text, *summary_lines(profile)])


def write_json(path: str, data: JsonObject) -> None:
    write_text(path, json.dumps(data, indent=1, sort_keys=False) + "\n")
