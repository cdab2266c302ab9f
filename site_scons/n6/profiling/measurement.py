"""What a board measured in a per-layer profile run, per epoch block: the one data class the
run side hands to the profiler (and that profile reports are regenerated from)."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Self, TypeVar

from ..errors import N6Error
from ..jsonfile import JsonObject

K = TypeVar("K")
Counter = TypeVar("Counter", int, "Phases", "PoolTraffic", "Bursts")   # counts that add up

@dataclass(frozen=True)
class Phases:
    """Cycles of one epoch block split like the firmware's counters: PRE_START → POST_START (pre),
    POST_START → PRE_END (core, the NPU runs), PRE_END → POST_END (post)."""
    pre: int
    core: int
    post: int

    @property
    def total(self) -> int:
        return self.pre + self.core + self.post

    def as_list(self) -> list[int]:
        return [self.pre, self.core, self.post]

    def __add__(self, other: Phases) -> Phases:
        return Phases(self.pre + other.pre, self.core + other.core, self.post + other.post)


@dataclass(frozen=True)
class PoolTraffic:
    """Bytes read and written in one memory pool during one epoch block."""
    reads: int
    writes: int

    @property
    def total(self) -> int:
        return self.reads + self.writes

    def __add__(self, other: PoolTraffic) -> PoolTraffic:
        return PoolTraffic(self.reads + other.reads, self.writes + other.writes)


BURST_BEATS = (1, 2, 4, 8)        # the burst lengths the NPU's bus interfaces count
BEAT_BYTES = 8                    # what one beat moves


@dataclass(frozen=True)
class Bursts:
    """One bus interface's bursts during one epoch block, as the NPU counts them: per direction,
    the number of bursts of 1, 2, 4 and 8 beats; every beat moves 8 bytes."""
    reads: tuple[int, ...]       # (1-beat, 2-beat, 4-beat, 8-beat bursts)
    writes: tuple[int, ...]

    @staticmethod
    def nbytes(bursts: Sequence[int]) -> int:
        return BEAT_BYTES * sum(n * beats for n, beats in zip(bursts, BURST_BEATS))

    @property
    def read_bytes(self) -> int:
        return self.nbytes(self.reads)

    @property
    def write_bytes(self) -> int:
        return self.nbytes(self.writes)

    def __add__(self, other: Bursts) -> Bursts:
        return Bursts(tuple(a + b for a, b in zip(self.reads, other.reads)),
                      tuple(a + b for a, b in zip(self.writes, other.writes)))


@dataclass(frozen=True)
class StreamEngine:
    """One stream engine's activity in one epoch block."""
    role: str                    # "i" (reads into the NPU) or "o" (writes out), as the firmware reports it
    cycles: int                  # active NPU cycles


@dataclass
class EpochMeasurement:
    """One epoch block as measured (averaged over every sample of every pass). A counter the
    board did not send is None (absent), never zero."""
    index: int                   # epoch number as the compiler numbers it (c_info.json node `epoch_<index>`)
    last: int                    # last epoch number the block covers (an epoch-controller blob covers several)
    kind: str                    # HW | SW | EC | HYBRID | EXTRA
    mcu_cycles: Phases           # MCU cycles per phase (mean, rounded up, like ST's profiler)
    mcu_total: int               # mean of the per-sample totals, rounded up (the duration's basis)
    samples: int = 1
    npu_cycles: Phases | None = None    # EPOCH_LEN
    # memory region → PoolTraffic (the simulated board's memory hooks)
    memory: dict[str, PoolTraffic] | None = None
    busif: dict[str, Bursts] | None = None   # "port0"/"port1" → Bursts (BUSIF_RW_DATA)
    # r_hit, r_miss, r_alloc_miss, evict, w_hit, w_miss, w_alloc_miss, w_through
    npu_cache: dict[str, int] | None = None
    # stream-engine id → StreamEngine, in the order the board first reported them
    streng_active: dict[int, StreamEngine] | None = None
    extra: int = 0               # EXTRA epochs folded into this (HYBRID) block
    extra_mcu_cycles: Phases | None = None   # their MCU cycles per phase, summed (None: none folded)

    @property
    def name(self) -> str:
        return f"epoch_{self.index}"

    @property
    def numbers(self) -> range:
        return range(self.index, self.last + 1)

    @property
    def unit(self) -> str:
        """Where the block's work runs: CPU for software epochs, NPU otherwise."""
        return "CPU" if self.kind == "SW" else "NPU"

    def absent(self) -> list[str]:
        """Names of the NPU counters the board did not report for this block (`memory` is the
        simulated board's own count, never expected from a real one)."""
        return [k for k in ("npu_cycles", "busif", "npu_cache", "streng_active") if getattr(self, k) is None]

    def fold(self, extra: EpochMeasurement) -> None:
        """Take in the EXTRA epoch that follows this block, as ST's profiler merges it into the
        HYBRID epoch before it: its MCU cycles kept apart but in the block's time, its NPU cycles,
        bus-interface bursts (and simulated memory traffic) summed; cache and stream engines not."""
        self.last = extra.last
        self.extra += 1
        self.extra_mcu_cycles = _add(self.extra_mcu_cycles, extra.mcu_cycles)
        self.mcu_total += extra.mcu_cycles.total      # ST: the extra time from the summed phase means
        self.npu_cycles = _add(self.npu_cycles, extra.npu_cycles)
        self.busif = _add_each(self.busif, extra.busif)
        self.memory = _add_each(self.memory, extra.memory)


def _add(a: Counter | None, b: Counter | None) -> Counter | None:
    """a + b where None is an absent counter (absent in both: None)."""
    return b if a is None else a if b is None else a + b


def _add_each(a: dict[K, Counter] | None, b: dict[K, Counter] | None) -> dict[K, Counter] | None:
    """Two dicts of counters summed key by key (None: absent)."""
    if a is None or b is None:
        return b if a is None else a
    return {k: _add(a.get(k), b.get(k)) for k in {**a, **b}}   # type: ignore[misc]  # k in a or b: not None


def fold_extra(epochs: Iterable[EpochMeasurement]) -> list[EpochMeasurement]:
    """Blocks with each EXTRA epoch folded into the block before it (one that comes first stays)."""
    out: list[EpochMeasurement] = []
    for e in epochs:
        if e.kind == "EXTRA" and out:
            out[-1].fold(e)
        else:
            out.append(e)
    return out


@dataclass
class Measurement:
    """One profile run of one model on one board."""
    model: str                   # the c-name the board knows the model by
    clocks: dict[str, int]       # mcu_freq, noc_freq, npu_freq, nic_freq in Hz (from `s:config:` logs)
    epochs: list[EpochMeasurement]   # EpochMeasurement in execution order
    run_cycles: int | None = None   # MCU cycles of a whole inference (the final op's cpu_all), mean
    options: list[int] = field(default_factory=list)   # counter options of the passes, in order
    simulated: bool = False
    board: str = ""
    # memory region (`memory` keys) → (base, size), when known
    regions: dict[str, tuple[int, int]] = field(default_factory=dict)

    def to_dict(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: JsonObject, path: str | None = None) -> Self:
        """The inverse of to_dict; a malformed dict is an N6Error naming `path`."""
        try:
            epochs = []
            for e in d["epochs"]:
                e = dict(e)
                e["mcu_cycles"] = Phases(**e["mcu_cycles"])
                e["npu_cycles"] = Phases(**e["npu_cycles"]) if e.get("npu_cycles") else None
                e["extra_mcu_cycles"] = Phases(**e["extra_mcu_cycles"]) if e.get("extra_mcu_cycles") else None
                if e.get("memory") is not None:
                    e["memory"] = {k: PoolTraffic(**v) for k, v in e["memory"].items()}
                if e.get("busif") is not None:
                    e["busif"] = {k: Bursts(tuple(v["reads"]), tuple(v["writes"])) for k, v in e["busif"].items()}
                if e.get("streng_active") is not None:
                    e["streng_active"] = {int(k): StreamEngine(**v) for k, v in e["streng_active"].items()}
                epochs.append(EpochMeasurement(**e))
            regions = {k: tuple(v) for k, v in d.get("regions", {}).items()}
            return cls(**{**d, "epochs": fold_extra(epochs), "regions": regions})
        except (KeyError, TypeError, ValueError) as e:
            raise N6Error(path, f"not a stored measurement ({type(e).__name__}: {e})",
                          "delete it and profile again (FORCE=1)") from None
