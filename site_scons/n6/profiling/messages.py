"""The documented per-layer run messages → a Measurement.

A profile is several PER_LAYER runs ("passes"), each asking the firmware for other hardware
counters through the run request's `opt` (counter options << 8 | first-sample flag). Per epoch
block the board sends `s:node:` logs (the host acks each), then an `aiOperatorMsg` whose `type`
has the INTERNAL flag, `id` = last_epoch << 16 | epoch, `counters` = [pre, core, post] MCU cycles;
a sample ends with the model's final op (no INTERNAL flag, 5 × u64 counters).

Messages are taken as the host library decodes them: protobuf `respMsg` objects, their payloads
(`aiOperatorMsg`, `logMsg`), dicts with the same field names, or plain log strings.

Besides ST's counter logs the simulated board sends, per memory region its hooks saw touched
during the epoch, `s:sim:mem:<region>:<reads>:<read bytes>:<writes>:<write bytes>`, optionally
followed by `:<region base, hex>:<region size>` so that the merge can name the region after the
c_info.json pool it holds. A counter the board does not send is absent, never zero.

Records are averaged as ST's profiler does: phases and stream-engine cycles by their mean rounded
up, cache counters rounded down; the bus-interface bursts of the first record are kept as sent,
and each stream engine keeps the role (input/output) it was first reported with. Each EXTRA
epoch is then folded into the block before it, as ST's profiler does (EpochMeasurement.fold).
"""
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn

from ..aivalidation.messages import COUNTER_32B, COUNTER_64B, DEVID_N6, EPOCH_KINDS
from ..aivalidation.messages import OP_INTERNAL as OPERATOR_INTERNAL
from ..errors import N6Error
from .measurement import Bursts, EpochMeasurement, Measurement, Phases, PoolTraffic, StreamEngine, fold_extra

EpochKey = tuple[int, int, str]   # (epoch number, last epoch number, kind) of a block
Records = dict[str, Any]          # one block's counter logs of one sample, by kind

# Counter options (bits of `reqMsg.opt >> 8`).
EPOCH_LEN, STRG_ACTIVE, STRG_HENV, BUSIF_RW_DATA, NPU_CACHE, STRG_I_ACTIVE, STRG_O_ACTIVE = \
    0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40
# The passes of ST's profiler after its warm-up run (HENV pass disabled there too).
ST_PASSES = (STRG_I_ACTIVE | EPOCH_LEN | NPU_CACHE, STRG_O_ACTIVE | EPOCH_LEN | NPU_CACHE, BUSIF_RW_DATA)
CONFIG_KEYS = ("mcu_freq", "noc_freq", "npu_freq", "nic_freq")
_FIELDS = {"evt_pre_start": 8, "evt_post_end": 6, "mcu_cycles": 4, "npu_cycles": 4,
           "npu_cache": 6, "streng_active": 5, "port0": 7, "port1": 7}


def run_opt(counters: int, sample: int) -> int:
    """`reqMsg.opt` of one sample's run request."""
    return counters << 8 | (1 if sample == 0 else 0)


def parse_config(config: Mapping[str, str] | Iterable[str], source: str) -> dict[str, int]:
    """The `s:config:` logs of NETWORK_INFO (strings, or a key → value mapping of them) → clocks
    in Hz (all four are needed, like ST's profiler)."""
    values = dict(config) if isinstance(config, dict) else {}
    for s in () if isinstance(config, dict) else config:
        parts = s.split(":")
        if len(parts) >= 4 and parts[0] == "s" and parts[1] == "config":
            values[parts[2]] = parts[3]
    if values.get("version") != "1.0":
        raise N6Error(source, f"board reports s:config version {values.get('version')!r}, expected '1.0'",
                      "use the aiValidation firmware of ST Edge AI 2.2 or newer")
    try:
        clocks = {k: int(values[k]) for k in CONFIG_KEYS}
    except KeyError as e:
        raise N6Error(source, f"board did not report {e.args[0]} in its s:config logs",
                      "use the aiValidation firmware of ST Edge AI 2.2 or newer") from None
    except ValueError as e:
        raise N6Error(source, f"malformed s:config clock value ({e})") from None
    if not all(clocks.values()):
        raise N6Error(source, "board reports a clock of 0 Hz", "check the firmware's clock configuration")
    try:
        dev_id = int(values.get("dev_id", ""), 16)
    except ValueError:
        raise N6Error(source, f"board reports s:config dev_id {values.get('dev_id')!r}, expected a hex device id",
                      "use the aiValidation firmware of ST Edge AI 2.2 or newer") from None
    if dev_id != DEVID_N6:       # as ST's profiler checks: the counters are the STM32N6's NPU's
        raise N6Error(source, f"device 0x{dev_id:x} is not supported, expected 0x{DEVID_N6:x} (STM32N6xx)",
                      "profile on an STM32N6 board (PORT= names its port)")
    return clocks


def _get(obj: object, name: str, default: object = None) -> Any:
    return obj.get(name, default) if isinstance(obj, dict) else getattr(obj, name, default)


def _payload(msg: Any) -> tuple[str | None, Any]:
    """(kind, payload) of one decoded board message: ("log", str), ("op", op) or (None, None)."""
    if isinstance(msg, str):
        return "log", msg
    if isinstance(msg, dict):
        for kind in ("log", "op"):
            if kind in msg:
                return (kind, _get(msg[kind], "str")) if kind == "log" else (kind, msg[kind])
        if "counter_type" in msg:
            return "op", msg
        return ("log", msg["str"]) if "str" in msg else (None, None)
    if hasattr(msg, "WhichOneof"):
        which = msg.WhichOneof("payload") if "payload" in type(msg).DESCRIPTOR.oneofs_by_name else None
        if which == "log":
            return "log", msg.log.str
        if which == "op":
            return "op", msg.op
        if which is not None:
            return None, None
    if hasattr(msg, "counter_type"):
        return "op", msg
    if hasattr(msg, "str"):
        return "log", msg.str
    return None, None


def _ceil_mean(values: Sequence[float]) -> int:
    return math.ceil(sum(values) / len(values))


class _Epoch:
    """Records of one epoch block gathered over all samples and passes."""

    def __init__(self, index: int, last: int, kind: str) -> None:
        self.index, self.last, self.kind = index, last, kind
        self.mcu: list[list[int]] = []
        self.npu: list[list[int]] = []
        self.cache: list[list[int]] = []
        self.busif: list[dict[str, Bursts]] = []
        self.memory: dict[str, list[tuple[int, int]]] = {}
        # streng: id → (role, [cycles]); None until reported
        self.streng: dict[int, tuple[str, list[int]]] | None = None

    def measurement(self) -> EpochMeasurement:
        mcu = Phases(*(_ceil_mean([p[i] for p in self.mcu]) for i in range(3)))
        npu = Phases(*(_ceil_mean([p[i] for p in self.npu]) for i in range(3))) if self.npu else None
        memory = {pool: PoolTraffic(_ceil_mean([r for r, _ in recs]), _ceil_mean([w for _, w in recs]))
                  for pool, recs in self.memory.items()} if self.memory else None
        cache = None
        if self.cache:
            keys = ("r_hit", "r_miss", "r_alloc_miss", "evict", "w_hit", "w_miss", "w_alloc_miss", "w_through")
            cache = {k: sum(rec[i] for rec in self.cache) // len(self.cache) for i, k in enumerate(keys)}
        return EpochMeasurement(
            self.index, self.last, self.kind, mcu, _ceil_mean([sum(p) for p in self.mcu]), len(self.mcu),
            npu_cycles=npu, memory=memory,
            busif=self.busif[0] if self.busif else None,                       # ST keeps the first record
            npu_cache=cache,
            streng_active={i: StreamEngine(role, _ceil_mean(c)) for i, (role, c) in self.streng.items()}
            if self.streng is not None else None)


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.order: list[EpochKey] | None = None   # epoch keys of the first sample
        self.epochs: dict[EpochKey, _Epoch] = {}
        self.run_cycles: list[int] = []
        self.regions: dict[str, tuple[int, int]] = {}            # memory region name → (base, size) (simulated board)

    def fail(self, problem: str,
             fix: str = "check the board connection and firmware, then profile again") -> NoReturn:
        raise N6Error(self.source, problem, fix)

    def _ints(self, text: str, fields: Sequence[str], start: int) -> list[int]:
        try:
            return [int(v) for v in fields[start:]]
        except ValueError:
            self.fail(f"board sent a malformed counter log {text!r}")

    def sim_log(self, text: str, rec: Records) -> None:
        """`s:sim:mem:` (the simulated board's memory counters) → rec."""
        f = text.split(":")[2:]
        if not f or f[0] != "mem":
            return
        if len(f) not in (6, 8):
            self.fail(f"board sent {len(f) - 2} values in counter log {text!r}, expected 4 or 6")
        _, rbytes, _, wbytes = self._ints(text, f[:6], 2)
        rec.setdefault("mem", {})[f[1]] = (rbytes, wbytes)
        if len(f) == 8:
            try:
                self.regions[f[1]] = (int(f[6], 16), int(f[7]))
            except ValueError:
                self.fail(f"board sent a malformed counter log {text!r}")

    def node_log(self, text: str, rec: Records) -> None:
        """One `s:node:` log of the current epoch → rec (a dict of this epoch's records)."""
        f = text.split(":")[2:]
        if not f or f[0] not in _FIELDS:
            return
        if len(f) != _FIELDS[f[0]] and not (f[0] == "streng_active" and f[1] == "max"):
            self.fail(f"board sent {len(f) - 1} values in counter log {text!r}, expected {_FIELDS[f[0]] - 1}")
        cat = f[0]
        if cat == "evt_pre_start":       # the current epoch, as the operator message names it (an
            #                                 internal epoch's own number is negative)
            rec["pre_start"] = (self._ints(text, f[:4], 1)[1], f[7])
        elif cat in ("mcu_cycles", "npu_cycles"):
            rec[cat] = self._ints(text, f, 1)
        elif cat == "npu_cache":
            rec.setdefault("cache", {})[f[1]] = self._ints(text, f, 2)
        elif cat == "streng_active":        # the "max" line alone: reported, no engine was active
            engines = rec.setdefault("streng", {})
            if f[1] != "max":
                if f[1] not in ("i", "o"):
                    self.fail(f"board sent stream-engine role {f[1]!r} in counter log {text!r}, expected i or o")
                i, cycles = self._ints(text, f, 2)[:2]
                engines[i] = (f[1], cycles)
        elif cat in ("port0", "port1"):
            if f[2] not in ("r", "w"):
                self.fail(f"board sent bus direction {f[2]!r} in counter log {text!r}, expected r or w")
            rec.setdefault("busif", {}).setdefault(cat, {})[f[2]] = tuple(self._ints(text, f, 3))

    def counters(self, op: object, expected: int, what: str) -> list[int]:
        words = [int(w) for w in _get(op, "counters", [])]
        fmt = int(_get(op, "counter_type", 0)) >> 16
        if fmt == COUNTER_64B:
            if len(words) % 2:
                self.fail(f"board sent a 64-bit counter block of {len(words)} words for {what} (odd count)")
            words = [words[i] | words[i + 1] << 32 for i in range(0, len(words), 2)]
        elif fmt != COUNTER_32B:
            self.fail(f"board sent counter format {fmt} for {what}, expected 0 (64-bit) or 1 (32-bit)")
        if len(words) != expected:
            self.fail(f"board sent a counter block of {len(words)} values for {what}, expected {expected}")
        return words

    def sample(self, epochs: Sequence[tuple[EpochKey, Records]], final: Sequence[int]) -> None:
        keys = [key for key, _ in epochs]
        if not keys:
            self.fail("board sent no per-epoch messages in a PER_LAYER run",
                      "use a validation firmware with the OBSERVER capability")
        if self.order is None:
            self.order = keys
            self.epochs = {key: _Epoch(*key) for key in keys}
        elif keys != self.order:
            self.fail(f"board ran epochs {_names(keys)} in one sample but {_names(self.order)} in another",
                      "flash the image again, then profile again")
        for key, rec in epochs:
            e = self.epochs[key]
            e.mcu.append(rec["mcu_cycles"])
            if "npu_cycles" in rec:
                e.npu.append(rec["npu_cycles"])
            if "cache" in rec and {"r", "w"} <= set(rec["cache"]):
                e.cache.append(rec["cache"]["r"] + rec["cache"]["w"])
            if "busif" in rec:
                e.busif.append({p: Bursts(v["r"], v["w"]) for p, v in sorted(rec["busif"].items())
                                if {"r", "w"} <= set(v)})
            for pool, rw in rec.get("mem", {}).items():
                e.memory.setdefault(pool, []).append(rw)
            if "streng" in rec:
                e.streng = e.streng if e.streng is not None else {}
                for i, (role, cycles) in rec["streng"].items():
                    e.streng.setdefault(i, (role, []))[1].append(cycles)     # grouped by id, as ST's profiler
        self.run_cycles.append(final[3])

    def run(self, messages: Iterable[object]) -> None:
        """One pass: any number of samples, each ending with the model's final op."""
        logs: Records = {}
        epochs: list[tuple[EpochKey, Records]] = []
        for msg in messages:
            kind, payload = _payload(msg)
            if kind == "log":
                if payload.startswith("s:node:"):
                    self.node_log(payload, logs)
                elif payload.startswith("s:sim:"):
                    self.sim_log(payload, logs)
                continue
            if kind != "op":
                continue
            op_type, op_id = int(_get(payload, "type", 0)), int(_get(payload, "id", 0))
            if (op_type >> 24) & OPERATOR_INTERNAL:
                # last_epoch_num is an int16: an internal epoch's is negative
                index, last = op_id & 0xFFFF, ((op_id >> 16 & 0xFFFF) ^ 0x8000) - 0x8000
                kind_name = logs["pre_start"][1] if "pre_start" in logs else EPOCH_KINDS.get(op_type & 0xF, "HW")
                what = f"epoch {index}"
                cycles = self.counters(payload, 3, what)
                if "pre_start" in logs and logs["pre_start"][0] != index:
                    self.fail(f"board's s:node:evt_pre_start names epoch {logs['pre_start'][0]} but its "
                              f"operator message names epoch {index}")
                logs.setdefault("mcu_cycles", cycles)
                epochs.append(((index, max(last, index), kind_name), logs))
                logs = {}
            else:
                self.sample(epochs, self.counters(payload, 5, "the model's final operator"))
                logs, epochs = {}, []
        if epochs or logs:
            self.fail("board's run ended before the model's final operator message")


def _names(keys: Sequence[EpochKey]) -> str:
    return "[" + ", ".join(f"epoch_{i}" for i, _, _ in keys) + "]"


def parse_run(runs: Iterable[tuple[int, Iterable[object]]], model: str, clocks: Mapping[str, int], source: str,
              simulated: bool = False, board: str = "") -> Measurement:
    """runs: [(the run request's `opt`, [decoded board messages of that run in arrival order])]."""
    p = _Parser(source)
    options: list[int] = []
    for opt, messages in runs:
        if opt >> 8 not in options:
            options.append(opt >> 8)
        p.run(messages)
    if p.order is None:
        p.fail("no profile run was recorded")
    return Measurement(model, dict(clocks), fold_extra([p.epochs[k].measurement() for k in p.order]),
                       run_cycles=_ceil_mean(p.run_cycles), options=options, simulated=simulated, board=board,
                       regions=p.regions)
