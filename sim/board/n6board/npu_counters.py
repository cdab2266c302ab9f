"""The NPU counters the validation firmware reads around each epoch, as ST's aiValidation firmware
does for a run's counter option (its epoch callback and `_log_counters`): before the epoch starts
it programs the debug-and-trace unit's event counters, after it ends it stops and reads them, and
its report gives one line per stream engine or bus interface (ll_aton_dbgtrc.c's forms):
- STRG_I_ACTIVE / STRG_O_ACTIVE: from counter 1 (counter 0 is the NPU clock counter), every
  engine's source-link (reading) or destination-port (writing) stall signal counted while low;
  the report lists the engines counting more than ACTIVE_MIN cycles, then the busiest;
- STRG_ACTIVE: the same signals for the engines of the epoch block's input and output masks (in
  engine order, for each engine its reading counter then its writing one), each listed, then the
  busiest;
- STRG_HENV: the input engines' source-link handshake counted while high;
- BUSIF_RW_DATA without an engine option: counters 0-15 on the bus interfaces' burst signals
  (interface 0 writes, interface 0 reads, interface 1 writes, interface 1 reads; bursts of 1, 2, 4
  and 8 beats each), counted while high; the report gives the four rows and the bytes read and
  written (8 bytes a beat).
The NPU model counts these signals (simulated: an engine's active cycles, its bursts: npu.py); an
image without debug info has no masks (nothing is counted for STRG_ACTIVE and STRG_HENV). The NPU
clock counter and the NPU cache are not read: the NPU cycles are the time model's, the cache
counts nothing (ST's lines with zeros)."""
from dataclasses import dataclass

from n6.profiling.measurement import BURST_BEATS, Bursts
from n6.profiling.messages import (BUSIF_RW_DATA, EPOCH_LEN, NPU_CACHE, STRG_ACTIVE, STRG_HENV, STRG_I_ACTIVE,
                                   STRG_O_ACTIVE)
from npu_model.npu import (EVENT_HIGH, EVENT_LOW, SIGNAL_HENV_READ, SIGNAL_STALL_READ, SIGNAL_STALL_WRITE,
                           STRENG_LINKS as STRENG_NUM, TRACE_UNIT, burst_signal)

ALL_ENGINES = (1 << STRENG_NUM) - 1
ACTIVE_MIN = 20             # STRG_I_ACTIVE / STRG_O_ACTIVE list the engines counting more cycles
STRG_OPTIONS = STRG_I_ACTIVE | STRG_O_ACTIVE | STRG_ACTIVE | STRG_HENV
BUS_ROWS = ((0, True), (0, False), (1, True), (1, False))     # (bus interface, writing) in ST's order


@dataclass(frozen=True)
class EpochCounters:
    """The counters one epoch uses: the option in force (the first of I_ACTIVE, O_ACTIVE, ACTIVE,
    HENV the run asks for, else BUSIF_RW_DATA; 0: none), each counter's (signal, event type) from
    counter `first`, how many the firmware reads back and, for the stream-engine options, what
    each count read back is: ("i" reading or "o" writing, engine)."""
    option: int = 0
    counters: tuple = ()
    read: int = 0
    labels: tuple = ()

    @property
    def first(self):
        """The first counter: 0 for the bus interfaces, else 1 (counter 0 is the NPU clock's)."""
        return 0 if self.option == BUSIF_RW_DATA else 1

    @property
    def int_disable(self):
        """ST disables the stream-engine counters' interrupt, not the bus interfaces'."""
        return self.option != BUSIF_RW_DATA

    @classmethod
    def for_epoch(cls, option, in_mask, out_mask):
        strg = next((o for o in (STRG_I_ACTIVE, STRG_O_ACTIVE, STRG_ACTIVE, STRG_HENV) if option & o), 0)
        if not strg:
            if not option & BUSIF_RW_DATA:
                return cls()
            counters = [(burst_signal(busif, write, beats), EVENT_HIGH)
                        for busif, write in BUS_ROWS for beats in BURST_BEATS]
            return cls(BUSIF_RW_DATA, tuple(counters), len(counters))
        reading, writing = {STRG_I_ACTIVE: (ALL_ENGINES, 0), STRG_O_ACTIVE: (0, ALL_ENGINES),
                            STRG_ACTIVE: (in_mask, out_mask), STRG_HENV: (in_mask, 0)}[strg]
        counters, labels = [], []
        for i in range(STRENG_NUM):
            if reading >> i & 1:
                counters.append((SIGNAL_HENV_READ + i, EVENT_HIGH) if strg == STRG_HENV else
                                (SIGNAL_STALL_READ + i, EVENT_LOW))
                labels.append(("i", i))
            if writing >> i & 1:
                counters.append((SIGNAL_STALL_WRITE + i, EVENT_LOW))
                labels.append(("o", i))
        read = bin(reading | writing).count("1")        # ST reads one count an engine from counter 1
        return cls(strg, tuple(counters), read, tuple(labels[:read]))

    def start(self, npu):
        """Program and start the counters (ST's PRE_START): signal, event type, count 0, then enabled."""
        unit = npu.aton.units[TRACE_UNIT]
        for n, (signal, event_type) in enumerate(self.counters, self.first):
            event, count = unit.registers[f"EVENT_{n}"], unit.registers[f"EVENT_{n}_CNT"]
            value = event.field("SEL").put(0, signal)
            value = event.field("EVENT_TYPE").put(value, event_type)
            value = event.field("INT_DISABLE").put(value, int(self.int_disable))
            npu.write(unit.base + event.offset, value)
            npu.write(unit.base + count.offset, 0)
            npu.write(unit.base + event.offset, event.field("EN").put(value, 1))

    def stop_and_read(self, npu):
        """Stop the counters and read back those ST's POST_END reads: [count]."""
        unit = npu.aton.units[TRACE_UNIT]
        for n in range(self.first, self.first + len(self.counters)):
            event = unit.registers[f"EVENT_{n}"]
            npu.write(unit.base + event.offset, event.field("EN").put(npu.read(unit.base + event.offset), 0))
        return [npu.read(unit.base + unit.registers[f"EVENT_{n}_CNT"].offset)
                for n in range(self.first, self.first + self.read)]


def log_lines(option, npu_counts, trace, counts):
    """The NPU counter logs of one epoch (ST's `_log_counters` after the MCU cycles): `npu_counts`
    the NPU cycles of its start, core and end, `trace` its EpochCounters, `counts` what they
    read. EPOCH_LEN with any stream-engine option, or alone unless BUSIF_RW_DATA is asked; the
    bus-interface counters only without a stream-engine option."""
    strg = option & STRG_OPTIONS
    out = []
    if strg or option & EPOCH_LEN and not option & BUSIF_RW_DATA:
        out.append("s:node:npu_cycles:{}:{}:{}".format(*npu_counts))
    core = npu_counts[1]
    counted = [(kind, i, c) for (kind, i), c in zip(trace.labels, counts)]
    if trace.option in (STRG_I_ACTIVE, STRG_O_ACTIVE, STRG_ACTIVE):
        listed = [e for e in counted if trace.option == STRG_ACTIVE or e[2] > ACTIVE_MIN]
        out += [f"s:node:streng_active:{kind}:{i}:{c}:{core - c}" for kind, i, c in listed]
        out.append(_busiest("o" if trace.option == STRG_O_ACTIVE else "i", listed))
    elif trace.option == STRG_HENV:
        out += [f"s:node:streng_henv:{kind}:{i}:{c}:{core - c}" for kind, i, c in counted]
    elif trace.option == BUSIF_RW_DATA:
        rows = [counts[k:k + len(BURST_BEATS)] for k in range(0, len(counts), len(BURST_BEATS))]
        out += ["s:node:port{}:burst:{}:{}:{}:{}:{}".format(busif, "w" if write else "r", *row)
                for (busif, write), row in zip(BUS_ROWS, rows)]
        moved = {write: sum(Bursts.nbytes(row) for (_, w), row in zip(BUS_ROWS, rows) if w == write)
                 for write in (False, True)}
        out.append(f"s:node:portx:burst:rw:{moved[False]}:{moved[True]}:{moved[False] + moved[True]}:0")
    if option & NPU_CACHE:
        out += ["s:node:npu_cache:r:0:0:0:0", "s:node:npu_cache:w:0:0:0:0"]
    return out


def _busiest(kind, listed):
    """ST's closing line: the kind, engine and count of the first engine counting the most
    (`kind`, -1 and 0 when none counts)."""
    best = max([(kind, -1, 0), *listed], key=lambda entry: entry[2])     # max keeps the first on ties
    return "s:node:streng_active:max:{}:{}:{}".format(*best)
