"""Measurement + c_info.json → per-epoch figures, computed the way ST's profiler does:
duration = mean MCU cycles / MCU clock, % of the summed epoch time, ops per NPU-clock cycle,
bandwidth = bytes / epoch time, inf/s = MCU clock / summed epoch cycles, compiler inf/s =
NPU clock / summed max_cycles, of the NPU blocks only (ST's sums the software epochs' too, whose
compiler cycles estimate no CPU time); the NPU's counters as `counters` computes them. Without a
c_info.json of the image measured, the compiler's figures are None (absent), as ST's profiler goes
on without them."""
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from . import counters
from ..jsonfile import JsonObject
from .cinfo import CompilerInfo
from .measurement import Measurement, Phases, PoolTraffic

# What the MB/s figures count, best first: the simulated board's memory hooks (every bus master),
# the NPU's bus interfaces, the compiler's estimate.
TRAFFIC_SOURCES = {"memory": "memory traffic the simulated board counted",
                   "bus": "bytes the board counted on the NPU's bus interfaces",
                   "compiler": "the compiler's estimate (the board counted no traffic)"}


@dataclass
class EpochProfile:
    name: str                    # c_info.json name of the block's first epoch
    index: int
    last: int
    epochs: list[str]            # every c_info.json epoch name the block covers
    kind: str                    # HW | SW | EC | HYBRID | EXTRA
    unit: str                    # CPU | NPU
    mapping: str | None          # the compiler's NODE_* mapping (the compiler's figures: None without c_info.json)
    time_ms: float
    percent: float
    mcu_cycles: Phases           # the block's own, without its folded EXTRA epochs'
    extra: int                   # EXTRA epochs folded into this (HYBRID) block, as ST's profiler does
    extra_mcu_cycles: Phases | None   # their MCU cycles (None: none), counted in time_ms and the totals
    npu_cycles: Phases | None    # None when the board did not count them
    npu_clock_cycles: int        # measured NPU cycles, else MCU cycles scaled to the NPU clock
    ops: int | None
    compute_cycles: int | None
    max_cycles: int | None
    ops_per_cycle: float | None  # ops / npu_clock_cycles (measured)
    compiler_ops_per_cycle: float | None   # ops / max_cycles
    ideal_ops_per_cycle: float | None   # ops / compute_cycles
    core_ops_per_cycle: float | None   # ops / core NPU cycles (None: not counted, or 0)
    gops: float | None
    npu_core_percent: float | None   # core NPU time (NPU clock) in % of the block's time (None: not counted)
    compiler_memory: dict[str, PoolTraffic] | None   # c_info.json pool → PoolTraffic (the compiler's memory accesses)
    # pool (or board region) → PoolTraffic, None when the board did not count
    measured_memory: dict[str, PoolTraffic] | None
    bus: dict[str, JsonObject] | None   # counters.bus: busif0/busif1/total → bytes, bursts, GB/s (None: not counted)
    stream_engines: list[JsonObject] | None   # counters.engines, by id (None: not counted)
    busiest_engine: JsonObject | None   # one of stream_engines (None: none active, or not counted)
    npu_cache: dict[str, int] | None   # counters.CACHE_KEYS → count (None: not counted)
    traffic_source: str | None   # what `bandwidth` counts: a TRAFFIC_SOURCES key, None: nothing
    bandwidth: dict[str, float] | None   # pool or bus interface → MB/s of `traffic` over the epoch's time
    absent: list[str]            # counters the board did not report

    @property
    def all_mcu_cycles(self) -> Phases:
        """MCU cycles per phase with the folded EXTRA epochs' (the cycles of time_ms)."""
        return self.mcu_cycles + self.extra_mcu_cycles if self.extra_mcu_cycles else self.mcu_cycles

    @property
    def block(self) -> str:
        """The block's name in tables: its epochs' range when it covers several."""
        return self.name if self.index == self.last else f"{self.name}..{self.epochs[-1]}"

    @property
    def traffic(self) -> dict[str, PoolTraffic] | None:
        """Bytes moved per pool or bus interface, from `traffic_source` (None: nothing counted them)."""
        if self.traffic_source == "bus" and self.bus is not None:
            return {k: PoolTraffic(v["read_bytes"], v["write_bytes"]) for k, v in self.bus.items() if k != "total"}
        return self.measured_memory if self.traffic_source == "memory" else self.compiler_memory


@dataclass
class Profile:
    model: str                   # the project's name for the model (its folder), else the c-name
    c_name: str                  # the name the board knows the model by
    c_info: str | None           # None: the compiler's figures are absent, `compiler_absent` says why
    simulated: bool
    board: str
    clocks: dict[str, int]
    options: list[int]
    epochs: list[EpochProfile]
    totals: JsonObject
    compiler_absent: str | None = None

    def to_dict(self) -> JsonObject:
        return asdict(self)


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def _bandwidth(nbytes: int, ms: float) -> float:
    """MB/s (10^6 bytes, like ST's profiler)."""
    return _ratio(nbytes / 1e6, ms / 1e3)


def _sum_traffic(items: Iterable[tuple[str, PoolTraffic]]) -> dict[str, PoolTraffic]:
    out: dict[str, PoolTraffic] = {}
    for pool, t in items:
        out[pool] = out.get(pool, PoolTraffic(0, 0)) + t
    return out


def _pool_at(info: CompilerInfo, base: int, size: int) -> str | None:
    """The one c_info.json pool inside a board memory region (None: no single one)."""
    inside = [name for addr, name in info.addresses.items() if base <= addr < base + size]
    return inside[0] if len(inside) == 1 else None


def _sum(values: Sequence[int | None]) -> int | None:
    return None if None in values else sum(values)


def _ops_per(ops: int | None, cycles: float | None) -> float | None:
    return ops / cycles if ops is not None and cycles else None


def merge(measurement: Measurement, info: CompilerInfo | None, name: str | None = None,
          why: str | None = None) -> Profile:
    """Join each measured block with the c_info.json epochs it covers. `info` None (`why` says
    why) or describing other epochs (not the image's c_info.json): the measured figures alone."""
    ran = [n for e in measurement.epochs for n in e.numbers]
    if info is not None and (len(set(ran)) != len(ran) or set(ran) - set(info.epochs)
                             or any(e.runs for n, e in info.epochs.items() if n not in ran)):
        why = f"{info.path} describes {len(info.epochs)} epochs but the image on the board ran {len(ran)}" + \
            ("" if len(ran) != len(info.epochs) else " with other numbers")
        info = None
    clk = measurement.clocks
    mcu_hz, npu_hz = clk["mcu_freq"], clk["npu_freq"]
    total_ms = sum(e.mcu_total for e in measurement.epochs) * 1e3 / mcu_hz
    pool_of = {region: _pool_at(info, *where) for region, where in measurement.regions.items()} if info else {}
    rows = []
    for m in measurement.epochs:
        covered = [info.epochs[n] for n in m.numbers] if info else []
        names = [c.name for c in covered] or [f"epoch_{n}" for n in m.numbers]
        ms = m.mcu_total * 1e3 / mcu_hz
        npu_cycles = m.npu_cycles.total if m.npu_cycles else round(m.mcu_total * npu_hz / mcu_hz)
        ops, max_cycles = (sum(c.ops for c in covered), sum(c.max_cycles for c in covered)) if info else (None, None)
        compiler = _sum_traffic((pool, t) for c in covered for pool, t in c.memory.items()) if info else None
        measured = None if m.memory is None else _sum_traffic((pool_of.get(r) or r, t) for r, t in m.memory.items())
        core = m.npu_cycles.core if m.npu_cycles else None
        compute_cycles = sum(c.compute_cycles for c in covered) if info else None
        engines, busiest = counters.engines(m.streng_active, core)
        row = EpochProfile(
            names[0], m.index, m.last, names, m.kind, m.unit,
            "+".join(dict.fromkeys(c.mapping for c in covered)) if info else None, ms, _ratio(ms * 100, total_ms),
            m.mcu_cycles, m.extra, m.extra_mcu_cycles, m.npu_cycles, npu_cycles, ops, compute_cycles, max_cycles,
            ops_per_cycle=info and _ratio(ops, npu_cycles), compiler_ops_per_cycle=info and _ratio(ops, max_cycles),
            ideal_ops_per_cycle=info and _ratio(ops, compute_cycles), core_ops_per_cycle=_ops_per(ops, core),
            gops=info and _ratio(npu_hz * ops, npu_cycles * 1e9),
            npu_core_percent=None if core is None else _ratio(core * 1e5 / npu_hz, ms),   # core ms · 100 / ms
            compiler_memory=compiler, measured_memory=measured, bus=counters.bus(m.busif, core, npu_hz),
            stream_engines=engines, busiest_engine=busiest, npu_cache=m.npu_cache,
            traffic_source="memory" if measured is not None else "bus" if m.busif is not None else
            "compiler" if compiler is not None else None, bandwidth=None, absent=m.absent())
        row.bandwidth = None if row.traffic is None else {p: _bandwidth(t.total, ms) for p, t in row.traffic.items()}
        rows.append(row)
    return Profile(name or measurement.model, measurement.model, info and info.path, measurement.simulated,
                   measurement.board, dict(clk), list(measurement.options), rows, _totals(measurement, rows, total_ms),
                   why and f"{why}: compiler columns absent")


def _totals(measurement: Measurement, rows: list[EpochProfile], total_ms: float) -> JsonObject:
    clk = measurement.clocks
    mcu = Phases(*(sum(getattr(r.all_mcu_cycles, k) for r in rows) for k in ("pre", "core", "post")))
    ops = _sum([r.ops for r in rows])
    max_cycles, compute_cycles = _sum([r.max_cycles for r in rows]), _sum([r.compute_cycles for r in rows])
    compiler = ops is not None         # False: no c_info.json figures
    npu_measured = all(r.npu_cycles for r in rows)
    npu_cycles = sum(r.npu_clock_cycles for r in rows)
    traffic = _sum_traffic(item for r in rows for item in (r.traffic or {}).items())
    hw = counters.totals(rows, clk, mcu.total)
    npu = [r for r in rows if r.unit == "NPU"]     # the compiler's cycles estimate NPU work only
    npu_max, npu_compute = (sum(r.max_cycles for r in npu), sum(r.compute_cycles for r in npu)) if compiler else \
        (None, None)
    core = hw["npu_core_cycles"]
    return {
        "epochs": len(rows),
        "extra": sum(r.extra for r in rows),
        "time_ms": total_ms,
        "run_ms": measurement.run_cycles * 1e3 / clk["mcu_freq"] if measurement.run_cycles else None,
        "inf_per_s": _ratio(clk["mcu_freq"], mcu.total),
        "mcu_cycles": mcu.as_list(),
        "phase_percent": [_ratio(v * 100, mcu.total) for v in mcu.as_list()],
        "cpu_ms": sum(r.time_ms for r in rows if r.unit == "CPU"),
        "npu_ms": sum(r.time_ms for r in rows if r.unit == "NPU"),
        "npu_cycles": npu_cycles,
        "npu_cycles_measured": npu_measured,
        "ops": ops,
        "compute_cycles": compute_cycles,
        "max_cycles": max_cycles,
        "ops_per_cycle": _ratio(ops, npu_cycles) if compiler else None,
        "gops": _ratio(clk["npu_freq"] * ops, npu_cycles * 1e9) if compiler else None,
        "npu_blocks": len(npu),
        "npu_ops": sum(r.ops for r in npu) if compiler else None,
        "npu_max_cycles": npu_max,
        "npu_compute_cycles": npu_compute,
        # the compiler's inf/s: of the NPU blocks alone (None: no NPU block, or no c_info.json)
        "compiler_inf_per_s": _ratio(clk["npu_freq"], npu_max) if npu_max else None,
        "compiler_ideal_inf_per_s": _ratio(clk["npu_freq"], npu_compute) if npu_compute else None,
        "compiler_ops_per_cycle": _ratio(ops, max_cycles) if compiler else None,
        "ideal_ops_per_cycle": _ratio(ops, compute_cycles) if compiler else None,
        "core_ops_per_cycle": _ops_per(ops, core),
        "npu_core_ms": None if core is None else core * 1e3 / clk["npu_freq"],
        "npu_core_percent": None if core is None else _ratio(core * 1e5 / clk["npu_freq"], total_ms),
        **hw,
        "traffic_source": _source(rows),
        "traffic": {p: {"reads": t.reads, "writes": t.writes,
                        "mb_per_s": _ratio(t.total * clk["mcu_freq"], mcu.total) / 1e6} for p, t in traffic.items()},
    }


def _source(rows: list[EpochProfile]) -> str | None:
    """The one source of every block's traffic figures, "mixed" when they differ, None: nothing counted."""
    sources = {r.traffic_source for r in rows} - {None}
    return sources.pop() if len(sources) == 1 else "mixed" if sources else None
