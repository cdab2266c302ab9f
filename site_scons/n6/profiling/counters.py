"""The NPU's hardware counters of one epoch block (or of the whole inference) as report figures,
computed the way ST's profiler does: bus-interface bandwidth and stream-engine shares over the
block's core NPU cycles, the busiest engine the first one with the most active cycles, engines 0-4
on bus interface 0 and 5-9 on bus interface 1. A counter the board did not report stays None."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..jsonfile import JsonObject
from .measurement import Bursts, StreamEngine

if TYPE_CHECKING:
    from .merge import EpochProfile   # merge reads its figures from here

ROLES = {"i": "input", "o": "output"}
CACHE_KEYS = ("r_hit", "r_miss", "r_alloc_miss", "evict", "w_hit", "w_miss", "w_alloc_miss", "w_through")


def busif_of(engine: int) -> int:
    """The bus interface a stream engine moves its data through (fixed by the NPU's design)."""
    return 0 if engine < 5 else 1


def shown(value: float | None, fmt: str = "") -> str:
    """A figure as the reports print it: `-` for one that is not known (None)."""
    return "-" if value is None else format(value, fmt)


def percent(part: float, whole: float | None) -> float | None:
    return part * 100 / whole if whole else None


def gb_per_s(nbytes: int, cycles: int | None, hz: float) -> float | None:
    """10^9 bytes per second of `nbytes` moved in `cycles` of a `hz` clock (None: no time counted)."""
    return nbytes * hz / cycles / 1e9 if cycles else None


def bus(busif: dict[str, Bursts] | None, core_cycles: int | None, npu_hz: float) -> dict[str, JsonObject] | None:
    """port → Bursts of one block → "busif0"/"busif1"/"total" → bytes, bursts and GB/s over the core NPU
    cycles (None: the board did not count bursts)."""
    if busif is None:
        return None
    out: dict[str, JsonObject] = {}
    for port, b in sorted(busif.items()):
        out["busif" + port[-1]] = {"read_bytes": b.read_bytes, "write_bytes": b.write_bytes,
                                   "read_bursts": list(b.reads), "write_bursts": list(b.writes)}
    return _with_bandwidth(out, core_cycles, npu_hz)


def _with_bandwidth(out: dict[str, JsonObject], core_cycles: int | None, npu_hz: float) -> dict[str, JsonObject]:
    reads = sum(v["read_bytes"] for v in out.values())
    writes = sum(v["write_bytes"] for v in out.values())
    out["total"] = {"read_bytes": reads, "write_bytes": writes}
    for v in out.values():
        v["gb_per_s"] = None if core_cycles is None else gb_per_s(v["read_bytes"] + v["write_bytes"], core_cycles,
                                                                   npu_hz)
    return out


def engines(streng: dict[int, StreamEngine] | None,
            core_cycles: int | None) -> tuple[list[JsonObject], JsonObject | None] | tuple[None, None]:
    """id → StreamEngine of one block → ([engine figures by id], the busiest engine or None)."""
    if streng is None:
        return None, None
    rows: list[JsonObject]
    busiest: JsonObject | None
    rows, busiest = [], None
    for i, s in streng.items():
        row: JsonObject = {"id": i, "role": ROLES[s.role], "busif": busif_of(i), "cycles": s.cycles,
               "percent": percent(s.cycles, core_cycles)}
        rows.append(row)
        if s.cycles > (busiest["cycles"] if busiest else 0):
            busiest = row
    return sorted(rows, key=lambda r: r["id"]), busiest


def _all(rows: Sequence[EpochProfile], key: str) -> list | None:
    values = [getattr(r, key) for r in rows]
    return None if not values or None in values else values


def totals(rows: Sequence[EpochProfile], clocks: dict[str, int], mcu_cycles: int) -> JsonObject:
    """Every block's counters summed; None for a counter some block lacks."""
    out: JsonObject = {}
    cycles = _all(rows, "npu_cycles")
    for phase in ("pre", "core", "post"):
        out[f"npu_{phase}_cycles"] = sum(getattr(c, phase) for c in cycles) if cycles else None
    core = out["npu_core_cycles"]
    bus_rows = _all(rows, "bus")
    if bus_rows:
        summed: dict = {}
        for b in bus_rows:
            for k, v in b.items():
                if k == "total":
                    continue
                s = summed.setdefault(k, {"read_bytes": 0, "write_bytes": 0, "read_bursts": [0] * 4,
                                          "write_bursts": [0] * 4})
                for f in ("read_bytes", "write_bytes"):
                    s[f] += v[f]
                for f in ("read_bursts", "write_bursts"):
                    s[f] = [a + n for a, n in zip(s[f], v[f])]
        out["bus"] = _with_bandwidth(summed, core, clocks["npu_freq"])
        t = out["bus"]["total"]
        t["average_gb_per_s"] = gb_per_s(t["read_bytes"] + t["write_bytes"], mcu_cycles, clocks["mcu_freq"])
    else:
        out["bus"] = None
    engine_rows = _all(rows, "stream_engines")
    if engine_rows:
        summed = {}
        for r in engine_rows:
            for e in r:
                summed.setdefault(e["id"], {**e, "cycles": 0})["cycles"] += e["cycles"]
        ordered = sorted(summed.values(), key=lambda e: e["id"])
        for e in ordered:
            e["percent"] = percent(e["cycles"], core)
        out["stream_engines"] = ordered
        out["busiest_engine"] = max(ordered, key=lambda e: e["cycles"]) if any(e["cycles"] for e in ordered) else None
    else:
        out["stream_engines"] = out["busiest_engine"] = None
    caches = _all(rows, "npu_cache")
    out["npu_cache"] = {k: sum(c[k] for c in caches) for k in CACHE_KEYS} if caches else None
    return out
