"""The NPU counters the validation firmware reads around each epoch, as ST's aiValidation firmware
does for a run's counter option (its epoch callback and `_log_counters`): before the epoch starts
it programs the debug-and-trace unit's event counters, after it ends it stops and reads them, and
its report gives one line per stream engine. Counter 0 is the NPU clock counter; the engines'
counters follow from counter 1, in engine order, for each engine its reading counter then its
writing one (ll_aton_dbgtrc.c's StrengActive/StrengHENV forms):
- STRG_I_ACTIVE / STRG_O_ACTIVE: every engine's source-link (reading) or destination-port
  (writing) stall signal counted while low; the report lists the engines counting more than
  ACTIVE_MIN cycles, then the busiest;
- STRG_ACTIVE: the same signals for the engines of the epoch block's input and output masks, each
  listed, then the busiest;
- STRG_HENV: the input engines' source-link handshake counted while high.
The NPU model counts these signals (simulated: an engine's active cycles, npu.py); an image
without debug info has no masks (nothing is counted for STRG_ACTIVE and STRG_HENV). The NPU clock
counter, the bus interfaces' bursts and the NPU cache are not read: the NPU cycles are the time
model's, the bursts and the cache count nothing (ST's lines with zeros)."""
from dataclasses import dataclass

from n6.profiling.messages import (BUSIF_RW_DATA, EPOCH_LEN, NPU_CACHE, STRG_ACTIVE, STRG_HENV, STRG_I_ACTIVE,
                                   STRG_O_ACTIVE)
from npu_model.npu import (EVENT_HIGH, EVENT_LOW, SIGNAL_HENV_READ, SIGNAL_STALL_READ, SIGNAL_STALL_WRITE,
                           STRENG_LINKS as STRENG_NUM, TRACE_UNIT)

ALL_ENGINES = (1 << STRENG_NUM) - 1
FIRST_COUNTER = 1           # counter 0: the NPU clock counter
ACTIVE_MIN = 20             # STRG_I_ACTIVE / STRG_O_ACTIVE list the engines counting more cycles
STRG_OPTIONS = STRG_I_ACTIVE | STRG_O_ACTIVE | STRG_ACTIVE | STRG_HENV


@dataclass(frozen=True)
class EngineCounters:
    """The engine counters one epoch uses: the option in force (the first of I_ACTIVE, O_ACTIVE,
    ACTIVE, HENV the run asks for; 0: none) and each counter's (engine, signal, event type)."""
    option: int
    counters: tuple
    read_mask: int          # the engines whose counters the firmware reads back, in engine order

    @classmethod
    def for_epoch(cls, option, in_mask, out_mask):
        option = next((o for o in (STRG_I_ACTIVE, STRG_O_ACTIVE, STRG_ACTIVE, STRG_HENV) if option & o), 0)
        reading, writing, signals = {STRG_I_ACTIVE: (ALL_ENGINES, 0, SIGNAL_STALL_READ),
                                     STRG_O_ACTIVE: (0, ALL_ENGINES, SIGNAL_STALL_READ),
                                     STRG_ACTIVE: (in_mask, out_mask, SIGNAL_STALL_READ),
                                     STRG_HENV: (in_mask, 0, SIGNAL_HENV_READ)}.get(option, (0, 0, 0))
        counters = []
        for i in range(STRENG_NUM):
            if reading >> i & 1:
                counters.append((i, signals + i, EVENT_HIGH if option == STRG_HENV else EVENT_LOW))
            if writing >> i & 1:
                counters.append((i, SIGNAL_STALL_WRITE + i, EVENT_LOW))
        return cls(option, tuple(counters), reading | writing)

    def start(self, npu):
        """Program and start the counters (ST's PRE_START): signal, event type, count 0, then enabled."""
        unit = npu.aton.units[TRACE_UNIT]
        for n, (_, signal, event_type) in enumerate(self.counters, FIRST_COUNTER):
            event, count = unit.registers[f"EVENT_{n}"], unit.registers[f"EVENT_{n}_CNT"]
            value = event.field("SEL").put(0, signal)
            value = event.field("EVENT_TYPE").put(value, event_type)
            value = event.field("INT_DISABLE").put(value, 1)
            npu.write(unit.base + event.offset, value)
            npu.write(unit.base + count.offset, 0)
            npu.write(unit.base + event.offset, event.field("EN").put(value, 1))

    def stop_and_read(self, npu):
        """Stop the counters and read one a read engine (ST's POST_END): [count]."""
        unit = npu.aton.units[TRACE_UNIT]
        for n in range(FIRST_COUNTER, FIRST_COUNTER + len(self.counters)):
            event = unit.registers[f"EVENT_{n}"]
            npu.write(unit.base + event.offset, event.field("EN").put(npu.read(unit.base + event.offset), 0))
        read = bin(self.read_mask).count("1")
        return [npu.read(unit.base + unit.registers[f"EVENT_{n}_CNT"].offset)
                for n in range(FIRST_COUNTER, FIRST_COUNTER + read)]


def log_lines(option, npu_counts, engines, counts, in_mask, out_mask):
    """The NPU counter logs of one epoch (ST's `_log_counters` after the MCU cycles): `npu_counts`
    the NPU cycles of its start, core and end, `engines` its EngineCounters, `counts` what they
    read. EPOCH_LEN with any stream-engine option, or alone unless BUSIF_RW_DATA is asked; the
    bus-interface counters only without a stream-engine option."""
    strg = option & STRG_OPTIONS
    out = []
    if strg or option & EPOCH_LEN and not option & BUSIF_RW_DATA:
        out.append("s:node:npu_cycles:{}:{}:{}".format(*npu_counts))
    core = npu_counts[1]
    if engines.option in (STRG_I_ACTIVE, STRG_O_ACTIVE):
        kind = "i" if engines.option == STRG_I_ACTIVE else "o"
        listed = [(i, c) for i, c in zip(range(STRENG_NUM), counts) if c > ACTIVE_MIN]
        out += [f"s:node:streng_active:{kind}:{i}:{c}:{core - c}" for i, c in listed]
        out.append(_busiest(kind, [(kind, i, c) for i, c in listed]))
    elif engines.option == STRG_ACTIVE:
        sides = [(kind, i) for i in range(STRENG_NUM) for kind, mask in (("i", in_mask), ("o", out_mask))
                 if mask >> i & 1]
        listed = [(kind, i, c) for (kind, i), c in zip(sides, counts)]
        out += [f"s:node:streng_active:{kind}:{i}:{c}:{core - c}" for kind, i, c in listed]
        out.append(_busiest("i", listed))
    elif engines.option == STRG_HENV:
        inputs = [i for i in range(STRENG_NUM) if in_mask >> i & 1]
        out += [f"s:node:streng_henv:i:{i}:{c}:{core - c}" for i, c in zip(inputs, counts)]
    elif option & BUSIF_RW_DATA:
        out += [f"s:node:{port}:burst:{rw}:0:0:0:0" for port in ("port0", "port1") for rw in "wr"]
        out.append("s:node:portx:burst:rw:0:0:0:0")
    if option & NPU_CACHE:
        out += ["s:node:npu_cache:r:0:0:0:0", "s:node:npu_cache:w:0:0:0:0"]
    return out


def _busiest(kind, listed):
    """ST's closing line: the kind, engine and count of the first engine counting the most
    (`kind`, -1 and 0 when none counts)."""
    best = (kind, -1, 0)
    for entry in listed:
        if entry[2] > best[2]:
            best = entry
    return "s:node:streng_active:max:{}:{}:{}".format(*best)
