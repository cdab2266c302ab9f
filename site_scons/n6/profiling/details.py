"""The NPU counters of every epoch block as detail tables (profile.txt and the HTML page; the
console keeps the one summary table): NPU cycles and ops per cycle, bus-interface bytes, GB/s
and bursts, stream engines, NPU cache. A table is left out when no block reported its counters,
and a block without them shows "-"."""
from collections.abc import Sequence

from tabulate import tabulate

from ..jsonfile import JsonObject
from .counters import CACHE_KEYS, shown
from .merge import Profile

Cells = list[object]                            # one table row's cells
Section = tuple[str, list[str], list[Cells]]   # (title, headers, rows)


def _bursts(counts: Sequence[int]) -> str:
    return "/".join(str(n) for n in counts)


def _npu(profile: Profile) -> Section:
    headers = ["epoch", "NPU pre", "NPU core", "NPU post", "core % of epoch", "ideal ops/cycle",
               "compiler ops/cycle", "core-only ops/cycle", "measured ops/cycle"]
    rows = [[e.block, *(e.npu_cycles.as_list() if e.npu_cycles else ["-"] * 3), shown(e.npu_core_percent, ".1f"),
             shown(e.ideal_ops_per_cycle, ".2f"), shown(e.compiler_ops_per_cycle, ".2f"),
             shown(e.core_ops_per_cycle, ".2f"),
             shown(e.ops_per_cycle, ".2f")] for e in profile.epochs]
    t = profile.totals
    rows.append(["total", shown(t["npu_pre_cycles"]), shown(t["npu_core_cycles"]), shown(t["npu_post_cycles"]),
                 shown(t["npu_core_percent"], ".1f"),
                 shown(t["ideal_ops_per_cycle"], ".2f"), shown(t["compiler_ops_per_cycle"], ".2f"),
                 shown(t["core_ops_per_cycle"], ".2f"), shown(t["ops_per_cycle"], ".2f")])
    if not profile.c_info:
        headers, rows = headers[:5], [r[:5] for r in rows]
    return "NPU cycles and ops per cycle", headers, rows


def _bus_cells(bus: dict[str, JsonObject] | None) -> Cells:
    if bus is None:
        return ["-"] * 7
    cells: Cells = []
    for k in ("busif0", "busif1"):
        v = bus.get(k)
        cells += ["-"] * 3 if v is None else [v["read_bytes"], v["write_bytes"], shown(v["gb_per_s"], ".3f")]
    return cells + [shown(bus["total"]["gb_per_s"], ".3f")]


def _bus(profile: Profile) -> Section:
    headers = ["epoch", "busif 0 read B", "busif 0 write B", "busif 0 GB/s", "busif 1 read B", "busif 1 write B",
               "busif 1 GB/s", "total GB/s"]
    rows = [[e.block, *_bus_cells(e.bus)] for e in profile.epochs] + [["total", *_bus_cells(profile.totals["bus"])]]
    return "Bus interfaces (GB/s over the core NPU cycles, as ST's profiler)", headers, rows


def _burst_cells(bus: dict[str, JsonObject] | None) -> Cells:
    if bus is None:
        return ["-"] * 4
    return [_bursts(bus[k][f]) if k in bus else "-" for k in ("busif0", "busif1")
            for f in ("read_bursts", "write_bursts")]


def _burst_table(profile: Profile) -> Section:
    headers = ["epoch", "busif 0 read", "busif 0 write", "busif 1 read", "busif 1 write"]
    rows = [[e.block, *_burst_cells(e.bus)] for e in profile.epochs] + [["total", *_burst_cells(profile.totals["bus"])]]
    return "Bus bursts of 1/2/4/8 beats of 8 bytes", headers, rows


def _engine_rows(name: str, engines: list[JsonObject] | None, busiest: JsonObject | None) -> list[Cells]:
    if engines is None:
        return [[name, "-", "-", "-", "-", "-", ""]]
    if not engines:
        return [[name, "none", "", "", "", "", ""]]
    return [[name if i == 0 else "", e["id"], e["role"], e["busif"], e["cycles"], shown(e["percent"], ".1f"),
             "*" if busiest and e["id"] == busiest["id"] else ""] for i, e in enumerate(engines)]


def _engines(profile: Profile) -> Section:
    headers = ["epoch", "engine", "role", "busif", "active cycles", "% of NPU core", "busiest"]
    rows = [r for e in profile.epochs for r in _engine_rows(e.block, e.stream_engines, e.busiest_engine)]
    t = profile.totals
    return "Stream engines", headers, rows + _engine_rows("total", t["stream_engines"], t["busiest_engine"])


def _cache(profile: Profile) -> Section:
    headers = ["epoch", "read hit", "read miss", "read alloc miss", "evict", "write hit", "write miss",
               "write alloc miss", "write-through"]
    named = [(e.block, e.npu_cache) for e in profile.epochs] + [("total", profile.totals["npu_cache"])]
    return "NPU cache", headers, [[name, *([c[k] for k in CACHE_KEYS] if c else ["-"] * 8)] for name, c in named]


def sections(profile: Profile) -> list[Section]:
    """[(title, headers, rows)] of the counters some block reported."""
    has = {k: any(getattr(e, k) is not None for e in profile.epochs)
           for k in ("npu_cycles", "bus", "stream_engines", "npu_cache")}
    out: list[Section] = []
    if has["npu_cycles"] or profile.c_info:
        out.append(_npu(profile))
    if has["bus"]:
        out += [_bus(profile), _burst_table(profile)]
    if has["stream_engines"]:
        out.append(_engines(profile))
    if has["npu_cache"]:
        out.append(_cache(profile))
    return out


def text(profile: Profile) -> str:
    return "\n\n".join(f"{title}\n" + tabulate(rows, headers=headers, disable_numparse=True,
                                                 colalign=("left",) + ("right",) * (len(headers) - 1))
                       for title, headers, rows in sections(profile))
