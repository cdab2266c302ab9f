"""The Neural-ART NPU as a bus device, shared by the simulated board and the DK twin: the register
file of every ATON unit (aton_map.txt: reset values, read-only fields, self-clearing CLR and
CONFCLR, CONFCLR restoring a unit's configuration), unit enable and running, the interrupt
controller (INTREG, INTSET, INTCLR and the four lines' OR and AND masks) and the stream engines'
end-of-frame interrupts the runtime waits for, raised only where an engine's EVENT register
enables them.

A chain starts when it is closed: every enabled unit that the stream switch connects to it is
enabled too, and it writes memory through at least one stream engine. Its program is decoded
then (program.py). A chain of stream engines alone moves its items: the words a reading engine
sends land where the writing engine it feeds puts them (streng.py: addressing, packing, gaps;
the frames the switch's contexts let through, chain.py). A chain of convolution, arithmetic, pooling and
activation units computes (compute.py, chain.py): its inputs are read when it starts, its outputs stored
when it ends, both through streng.py. A chain with a unit or setting not modelled (decompression, the
reconfigurable buffer, the settings the units' modules list) stops the run in one line naming the epoch and what
is not modelled, unless the mode is "control": then the chain runs to its end with the bytes its
output engines write set to zero, and `not_computed` lists them.

Enabling the epoch controller executes the command blob at its ADDR (ecblob.py) through this
same register model; its irq raises the controller's interrupt.

The debug-and-trace unit's event counters (EVENT_<n>: signal SEL, EVENT_TYPE; ll_aton_dbgtrc.h's
signal numbers), counting from the value last written to EVENT_<n>_CNT, simulated by stated models:
- the always-high signal (VDD), counted while high: NPU clocks (ST's validation firmware times each
  epoch so, its `npu_cycles`);
- a bus interface's burst signal (read or write bursts of 1, 2, 4 or 8 beats of 8 bytes, on
  interface 0 or 1), counted while high: the bursts the chains' stream engines make, engines 0-4 on
  interface 0, 5-9 on 1 (n6.profiling.counters), each contiguous run of an engine's accesses
  ceil(bytes / 8) beats in bursts of 8 beats, the rest one burst each of 4, 2, 1 (so ST's byte total
  is the bytes moved, rounded up to beats);
- a stream engine's activity: the stall signal of its switch link (a reading engine's source link,
  a writing engine's destination port) counted while low, or its source link's handshake (HENV)
  counted while high, as ST's profiling counts them: each chain adds, for each of its engines moving
  data that way, the cycles it is active in the time model below, ceil(its bytes / BUS_BYTES) (the
  busiest engine is active for the whole chain but its START_CYCLES).
Every other signal and event type (a stall counted while high, the other units' links, edges,
interrupts) is not modelled: its counter keeps its value.

Time (simulated, a stated model): a chain takes START_CYCLES plus, for its busiest stream engine,
one NPU cycle per BUS_BYTES bytes it moves; a blob COMMAND_CYCLES per command besides its chains;
the NPU clock is NPU_HZ."""
import struct

import numpy as np
from n6.profiling.counters import busif_of
from n6.profiling.measurement import BEAT_BYTES, BURST_BEATS

from . import ecblob
from .chain import NOT_MODELLED, wire
from .compute import chain_writes
from .fixedpoint import NotModelled
from .program import STREAMING_UNITS, decode, register_name, switch_routes
from .registers import ATON_BASE, aton_map
from .streng import read_items, write_items

NPU_HZ = 1_000_000_000
BUS_BYTES = 8                   # one 64-bit bus beat per NPU cycle per stream engine
START_CYCLES = 64               # configuration latch and pipeline fill of a chain
MODES = ("stop", "control")
COMMAND_CYCLES = 1             # an epoch-controller command word, besides the chains it starts
TRACE_UNIT, EVENT_LOW, EVENT_HIGH = "DEBUG_TRACE", 0, 1    # the trace unit; EVENT_TYPE: count while low / high
SIGNAL_VDD, SIGNAL_BURSTS = 1, 276              # ll_aton_dbgtrc.h: always high; BUS_INTERFACE_READ1X8B
BURST_SIGNALS = 16                              # reads then writes, 1/2/4/8 beats, each for interfaces 0 and 1
STRENG_LINKS = 10                               # switch source links and destination ports 0-9: the stream engines
# ll_aton_dbgtrc.h's first signals: SWITCH_OSTRX_STALL, DBGTRC_SWITCH_OSTRX_HENV (+ source link),
# SWITCH_ISTRX_STALL (+ destination port)
SIGNAL_STALL_READ, SIGNAL_HENV_READ, SIGNAL_STALL_WRITE = 2, 56, 83
# (first signal, event type counted) → the engines' activity it gives, per direction moved
ACTIVITY_SIGNALS = {(SIGNAL_STALL_READ, EVENT_LOW): "read", (SIGNAL_HENV_READ, EVENT_HIGH): "read",
                    (SIGNAL_STALL_WRITE, EVENT_LOW): "write"}


def burst_signal(busif, write, beats):
    """The burst signal of bus interface `busif`'s reads or writes of `beats` beats (counted_event's
    "bursts" key back to its signal: reads then writes, 1/2/4/8 beats, interfaces 0 and 1 alternating)."""
    return SIGNAL_BURSTS + 8 * write + 2 * (beats.bit_length() - 1) + busif


def counted_event(signal, event_type):
    """What a counter on `signal` counting `event_type` adds up over the chains, a key of
    chain_events ("bursts", interface, direction, beats) or ("active", engine, direction); None:
    not modelled."""
    if event_type == EVENT_HIGH and 0 <= signal - SIGNAL_BURSTS < BURST_SIGNALS:
        k = signal - SIGNAL_BURSTS
        return "bursts", k % 2, "write" if k >= 8 else "read", 1 << (k % 8 // 2)
    for (first, counted), direction in ACTIVITY_SIGNALS.items():
        if event_type == counted and 0 <= signal - first < STRENG_LINKS:
            return "active", signal - first, direction
    return None


def chain_events(program):
    """{counted_event key: count} of one chain: its stream engines' bursts and active cycles."""
    events = {}
    add = lambda key, n: events.__setitem__(key, events.get(key, 0) + n)
    for f in program.footprints:
        sizes = [n for _, n in f.segments]
        if not sizes:
            continue
        engine = int(f.engine[len("STRENG"):])
        beats = -(-np.asarray(sizes, dtype=np.int64) // BEAT_BYTES)
        for size in reversed(BURST_BEATS):          # the longest bursts first
            add(("bursts", busif_of(engine), f.direction, size), int((beats // size).sum()))
            beats = beats % size
        add(("active", engine, f.direction), -(-f.nbytes // BUS_BYTES))
    return events


def write_one_to_clear(unit, register):
    """The bits of a status register a write of 1 clears (stream engines' and the epoch
    controller's IRQ registers: their event and error flags, not the step-mode setting)."""
    if register.name != "IRQ" or unit.name not in ("STRENG", "EPOCHCTRL"):
        return 0
    return sum(((1 << f.width) - 1) << f.lsb for f in register.fields
               if f.name == "IRQ" or f.name.startswith(("RAW_", "ERR_")))


class NpuStop(Exception):
    """The run cannot go on: an unmodelled unit, a blob; one line."""


class Npu:
    name = "NPU"
    size = 0x2_0000

    def __init__(self, write_memory=None, mode="stop", base=ATON_BASE, aton=None):
        if mode not in MODES:
            raise ValueError(f"NPU_MODEL={mode!r}: expected one of {', '.join(MODES)}")
        self.aton = aton or aton_map()
        self.base = base
        self.write_memory = write_memory     # write_memory(address, bytes): the outputs of control mode
        self.read_memory = None              # read_memory(address, n) → bytes: the epoch controller's blobs
        self.mode = mode
        self.regs = self.aton.reset_values()
        self.intreg = 0
        self.lines = [lambda asserted: None] * 4     # the NPU's four interrupt lines (NPU0..3)
        self._line_state = [False] * 4
        self.schedule = None            # schedule(npu_cycles, callback): the board lets time pass; None: at once
        self.epoch_label = self._count_label
        self.stop = self._raise         # how the board stops its run with one line
        self.stopped = None             # the line it stopped with
        self.enabled = set()            # (unit, index) with CTRL.EN
        self.running = set()            # ... started, not yet done
        self.in_chain = set()           # ... part of a started chain
        self.programs = []              # EpochProgram of every chain started
        self.not_computed = []          # {"epoch", "units", "engine", "first", "end", "bytes", "location"}
        self.cycles = 0                 # NPU cycles of every chain, simulated
        self.bytes_moved = 0
        self.writes_since = 0
        self.locate = None              # locate(address) → pool/buffer name, for the programs
        self.npu_now = None             # npu_now() → NPU cycles so far on the board; None: counters hold
        self.counting = {}              # EVENT_<n>_CNT offset → npu_now() its stored count refers to
        self.event_counters = {}        # EVENT_<n>_CNT offset → the chain_events key it adds up
        self._chains_started = 0

    def begin_inference(self):
        """Forget what the last inference left: its stop line, programs and outputs not computed
        (a board serves many inferences; registers and time go on as on the silicon)."""
        self.stopped = None
        self.programs.clear()
        self.not_computed.clear()

    # -- the bus's side --------------------------------------------------------------------------
    def read(self, offset):
        unit, i, reg = self.aton.locate(offset)
        if unit is None:
            return 0
        if unit.name == "INTCTRL" and reg is not None and reg.name in ("INTREG", "INTSET"):
            return self.intreg
        if offset in self.counting:
            return self._count(offset)
        value = self.regs.get(offset, 0)
        if reg is not None and reg.name == "CTRL" and unit.name in STREAMING_UNITS + ("EPOCHCTRL",):
            running = reg.field("RUNNING") if any(f.name == "RUNNING" for f in reg.fields) else None
            if running is not None:
                value = running.put(value, int((unit.name, i) in self.running))
        return value

    def stored(self, offset):
        return self.regs.get(offset, 0)

    def write(self, offset, value):
        unit, i, reg = self.aton.locate(offset)
        self.writes_since += 1
        if unit is None or reg is None:
            self.regs[offset] = value
            return
        old = self.regs.get(offset, reg.reset)
        w1c = write_one_to_clear(unit, reg)
        value = value & ~w1c | old & ~value & w1c
        keep = sum(((1 << f.width) - 1) << f.lsb for f in reg.fields if f.access == "r")
        value = value & ~keep | old & keep
        if unit.name == "INTCTRL":
            self._write_intctrl(reg.name, value)
            return
        if unit.name == TRACE_UNIT:
            self._write_trace(unit, reg, offset, value)
        if reg.name != "CTRL":
            self.regs[offset] = value
            return
        self._write_ctrl(unit, i, reg, offset, value)

    # -- control ---------------------------------------------------------------------------------
    def _write_ctrl(self, unit, i, reg, offset, value):
        f = reg.split(value)
        key = (unit.name, i)
        for name in ("CLR", "CONFCLR"):
            if f.get(name):
                value = reg.field(name).put(value, 0)
        self.regs[offset] = value
        if f.get("CLR") or not f.get("EN"):
            self.enabled.discard(key)
            self.running.discard(key)
            self.in_chain.discard(key)
        if f.get("CONFCLR"):
            for r in unit.registers.values():
                self.regs[unit.instance_base(i) + r.offset] = r.reset
        if f.get("EN") and key not in self.enabled:
            self.enabled.add(key)
            if unit.name == "EPOCHCTRL":
                self._run_blob(i)
                return
            if unit.name in STREAMING_UNITS:
                self.running.add(key)
                self._start_closed_chains()

    def _write_trace(self, unit, reg, offset, value):
        """An event counter's configuration or count: from now on it counts clocks (VDD), the
        chains' events (counted_event) or nothing."""
        if offset in self.counting:                     # EVENT_<n>_CNT written while counting
            self.counting[offset] = self.npu_now()
            return
        cnt = unit.registers.get(reg.name + "_CNT")
        if cnt is None:
            return
        cnt_offset = offset - reg.offset + cnt.offset
        if cnt_offset in self.counting:                 # reconfigured: the count so far is kept
            self.regs[cnt_offset] = self._count(cnt_offset)
            del self.counting[cnt_offset]
        self.event_counters.pop(cnt_offset, None)
        if not reg.field("EN").get(value):
            return
        signal, event_type = reg.field("SEL").get(value), reg.field("EVENT_TYPE").get(value)
        if (signal, event_type) == (SIGNAL_VDD, EVENT_HIGH) and self.npu_now:
            self.counting[cnt_offset] = self.npu_now()
        elif (event := counted_event(signal, event_type)) is not None:
            self.event_counters[cnt_offset] = event

    def _count_events(self, program):
        """Add a chain's events to the counters counting them."""
        events = chain_events(program)
        for cnt_offset, key in self.event_counters.items():
            self.regs[cnt_offset] = (self.regs.get(cnt_offset, 0) + events.get(key, 0)) & 0xFFFF_FFFF

    def _count(self, cnt_offset):
        return (self.regs.get(cnt_offset, 0) + self.npu_now() - self.counting[cnt_offset]) & 0xFFFF_FFFF

    def _write_intctrl(self, register, value):
        base = self.aton.units["INTCTRL"].base
        if register == "INTSET":
            self.intreg |= value
        elif register == "INTCLR":
            self.intreg &= ~value
        elif register == "CTRL":
            ctrl = self.aton.units["INTCTRL"].registers["CTRL"]
            f = ctrl.split(value)
            if f["CLR"]:
                self.intreg = 0
            value = ctrl.field("CONFCLR").put(ctrl.field("CLR").put(value, 0), 0)
            if f["CONFCLR"]:
                for r in self.aton.units["INTCTRL"].registers.values():
                    self.regs[base + r.offset] = r.reset
            self.regs[base] = value
        else:
            self.regs[base + self.aton.units["INTCTRL"].registers[register].offset] = value
        self._update_lines()

    def _update_lines(self):
        unit = self.aton.units["INTCTRL"]
        value = lambda name: self.regs.get(unit.base + unit.registers[name].offset, unit.registers[name].reset)
        enabled = value("CTRL") & 1
        for k in range(4):
            or_hit = self.intreg & ~value(f"INTORMSK{k}") & 0xFFFFFFFF
            wanted = ~value(f"INTANDMSK{k}") & 0xFFFFFFFF
            and_hit = wanted and self.intreg & wanted == wanted
            asserted = bool(enabled and (or_hit or and_hit))
            if asserted != self._line_state[k]:
                self._line_state[k] = asserted
                self.lines[k](asserted)

    def acknowledge(self, bits):
        """Clear INTREG `bits` (INTCLR), as the runtime's interrupt handler does."""
        self.intreg &= ~bits
        self._update_lines()

    # -- chains ----------------------------------------------------------------------------------
    def _start_closed_chains(self):
        routes = self._routes()
        by_name = {self.aton.units[u].instance_name(i): (u, i) for u, i in self.running - self.in_chain}
        neighbours = {name: set() for name in by_name}
        for dest, source in routes:
            if dest in neighbours and source in neighbours:
                neighbours[dest].add(source)
                neighbours[source].add(dest)
        connected = {name: {d for d, s in routes if s == name} | {s for d, s in routes if d == name}
                     for name in by_name}
        seen = set()
        for name in sorted(by_name):
            if name in seen:
                continue
            chain, todo = set(), [name]
            while todo:
                n = todo.pop()
                if n not in chain:
                    chain.add(n)
                    todo.extend(neighbours[n] - chain)
            seen |= chain
            closed = all(connected[n] <= chain for n in chain)
            writes_memory = any(by_name[n][0] == "STRENG" and self._streng_writes(by_name[n][1]) for n in chain)
            if closed and writes_memory and len(chain) > 1:
                self._start([by_name[n] for n in sorted(chain, key=_unit_order)])

    def _routes(self):
        """(dest unit instance, source unit instance) of every enabled switch route (both contexts)."""
        out = []
        for r in switch_routes(self.aton, self.regs):
            out.append((r.dest, "RECBUF" if r.source.startswith("RECBUF") else r.source))   # RECBUF00..02: its ports
        return out

    def _streng_writes(self, i):
        unit = self.aton.units["STRENG"]
        ctrl = unit.registers["CTRL"]
        return ctrl.field("DIR").get(self.regs.get(unit.instance_base(i) + ctrl.offset, 0))

    def _start(self, chain):
        self._chains_started += 1
        label = self.epoch_label()
        program = decode(self.aton, self.regs, chain, label, self.writes_since, self.locate)
        self.writes_since = 0
        self.programs.append(program)
        self.in_chain |= set(chain)
        stops = [u for u in program.units if u.kind in NOT_MODELLED]
        why = f"{stops[0].name} is not modelled: {NOT_MODELLED[stops[0].kind]}" if stops else None
        unmodelled = [u.name for u in stops]
        copies, computed = [], []
        if not unmodelled and all(u.kind == "STRENG" for u in program.units):      # a copy
            copies, reason = self._copies(program)
            if reason:
                unmodelled = [f"{f.engine} (data movement: {reason})" for f in program.footprints
                              if f.direction == "write"]
                why = f"{unmodelled[0]} is not modelled"
        elif not unmodelled:                                  # compute units: chain.py
            try:
                if self.read_memory is None or self.write_memory is None:
                    raise NotModelled("no memory given to the model")
                computed = chain_writes(program, self.aton, self.regs, self.read_memory)
            except NotModelled as e:
                why = str(e)
                unmodelled = [why]
        if unmodelled and self.mode != "control":
            self._halt(f"{label}: {why} (NPU_MODEL=control runs on with its outputs zeroed)")
            return
        moved = sum(f.nbytes for f in program.footprints)
        busiest = max((f.nbytes for f in program.footprints), default=0)
        cycles = program.cycles = START_CYCLES + -(-busiest // BUS_BYTES)
        self.cycles += cycles
        self.bytes_moved += moved
        if self.event_counters:
            self._count_events(program)
        done = lambda: self._finish(chain, program, unmodelled, copies, computed)
        if self.schedule is None:
            done()
        else:
            self.schedule(cycles, done)

    def _copies(self, program):
        """([(reading engine, writing engine, the writer's chain.Port)], None) of a chain of
        stream engines whose data movement is modelled (streng.py; the switch's contexts as
        chain.py states them): each writing engine fed by one reading engine that sends at least
        as many items as it writes; else ([], what is not modelled)."""
        engines = {f.engine: f.addressing for f in program.footprints}
        try:
            units = wire(dict.fromkeys(engines), program.routes)
        except NotModelled as error:
            return [], str(error)
        copies = []
        for name, unit in units.items():
            if 0 not in unit.inputs:
                continue
            source, dest = engines.get(unit.inputs[0].source), engines[name]
            if source is None or source.writes:
                return [], f"{name} fed by {unit.inputs[0].source}"
            for e in (source, dest):
                try:
                    e.check()
                except NotModelled as error:
                    return [], str(error)
            passing = sum(unit.inputs[0].passes(source.frames))
            if passing * source.count < dest.frames * dest.count:
                return [], f"{dest.frames * dest.count} items written, {passing * source.count} read"
            if self.read_memory is None or self.write_memory is None:
                return [], "no memory given to the model"
            copies.append((source, dest, unit.inputs[0]))
        return copies, None

    def _move(self, source, dest, port):
        """Copy the frames of `source` that reach the port of `dest` (chain.Port)."""
        frames = port.select(np.split(read_items(source, self.read_memory), source.frames))
        write_items(dest, np.concatenate(frames), self.read_memory, self.write_memory)

    def _finish(self, chain, program, unmodelled, copies=(), computed=()):
        for source, dest, port in copies:
            self._move(source, dest, port)
        for dest, words in computed:
            write_items(dest, words, self.read_memory, self.write_memory)
        for f in program.footprints:
            if f.direction != "write":
                continue
            if unmodelled:
                for address, n in f.segments:
                    if self.write_memory is not None:
                        self.write_memory(address, bytes(n))
                lo, hi = f.span
                self.not_computed.append({"epoch": program.label, "units": unmodelled, "engine": f.engine,
                                          "first": lo, "end": hi, "bytes": f.nbytes, "location": f.location})
        for unit, i in chain:
            self.running.discard((unit, i))
            if unit == "STRENG":
                self._frame_end(i)
        self._update_lines()

    def _frame_end(self, i):
        """Stream engine `i` reached its frame limit: IRQ.RAW_OFLOW_FRM is set and, only if its
        EVENT.EN_OFLOW_FRM enables it, the engine's INTREG bit (ATON.h; ST's runtime enables it
        for writing engines alone, ST's blobs for none)."""
        unit = self.aton.units["STRENG"]
        base = unit.instance_base(i)
        irq, event = unit.registers["IRQ"], unit.registers["EVENT"]
        self.regs[base + irq.offset] = irq.field("RAW_OFLOW_FRM").put(self.regs.get(base + irq.offset, 0), 1)
        if event.field("EN_OFLOW_FRM").get(self.regs.get(base + event.offset, event.reset)):
            self.intreg |= 1 << self.aton.irqs[f"STRENG{i}"]

    # -- epoch-controller blobs ------------------------------------------------------------------
    def _run_blob(self, i):
        """Execute the blob at the controller's ADDR through this register model: its chains run to
        their end as it starts them (its polls find them done), then its irq raises the
        controller's interrupt after the blob's simulated time."""
        unit = self.aton.units["EPOCHCTRL"]
        base = unit.instance_base(i)
        address = self.regs.get(base + unit.registers["ADDR"].offset, 0)
        label = self.epoch_label()
        if self.read_memory is None:
            self._halt(f"{label}: EPOCHCTRL{i}: this board gives the NPU model no memory to read the blob from")
            return
        try:
            size = struct.unpack("<I", self.read_memory(address + 4, 4))[0]
            commands = ecblob.decode(ecblob.blob_words(self.read_memory(address, 8 + 4 * size)))
        except ecblob.BlobError as e:
            self._halt(f"{label}: the epoch-controller blob at 0x{address:08X}: {e}")
            return
        scheduled, self.schedule = self.schedule, None
        cycles = self.cycles
        try:
            for c in commands:
                self._execute(c, label)
                if self.stopped:
                    return
        finally:
            self.schedule = scheduled
        self.cycles += len(commands) * COMMAND_CYCLES
        key = ("EPOCHCTRL", i)
        self.running.add(key)

        def done():
            self.running.discard(key)
            irq = unit.registers["IRQ"]
            self.regs[base + irq.offset] = irq.field("IRQ").put(self.regs.get(base + irq.offset, 0), 1)
            self.intreg |= 1 << self.aton.irqs[f"EPOCHCTRL{i}"]
            self._update_lines()
        if self.schedule is None:
            done()
        else:
            self.schedule(self.cycles - cycles, done)

    def _execute(self, c, label):
        """Carry out one blob command."""
        block = c.unit << 12
        for _, register, value in c.writes():
            if isinstance(value, tuple):                      # writefield: one bit, read-modify-write
                lsb, bit = value
                value = self.regs.get(block + 4 * register, 0) & ~(1 << lsb) | bit << lsb
            self.write(block + 4 * register, value)
        if c.op == ecblob.POLL:
            width = c.msb - c.lsb + 1
            if self.read(block + 4 * c.register) >> c.lsb & ((1 << width) - 1) != c.values[0]:
                self._halt(f"{label}: the blob polls {register_name(self.aton, block + 4 * c.register)} "
                          f"[{c.msb}:{c.lsb}] for 0x{c.values[0]:x}, which nothing the model runs sets")
        elif c.op == ecblob.LABEL:
            unit = self.aton.units["EPOCHCTRL"]
            self.regs[unit.base + unit.registers["LABEL"].offset] = c.number

    # -- helpers ---------------------------------------------------------------------------------
    def _halt(self, message):
        self.stopped = message
        self.stop(message)

    def _count_label(self):
        return f"hardware chain {self._chains_started}"

    @staticmethod
    def _raise(message):
        raise NpuStop(message)


def _unit_order(name):
    kinds = ["STRENG", "CONVACC", "DECUN", "ACTIV", "ARITH", "POOL", "RECBUF"]
    kind = next(k for k in kinds if name.startswith(k))
    return kinds.index(kind), int(name[len(kind):] or 0)


def not_computed_line(entry):
    """One line saying which output of an inference in control mode was not computed (a
    `not_computed` entry), for the board's log."""
    where = f"0x{entry['first']:08X}..0x{entry['end']:08X} ({entry['bytes']} bytes)" if entry["engine"] else ""
    what = " ".join(x for x in (entry["engine"], where, entry["location"]) if x)
    return f"NPU model (simulated, NPU_MODEL=control): {entry['epoch']}: {what} not computed: " \
           f"{', '.join(entry['units'])}"
