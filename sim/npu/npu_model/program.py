"""An epoch program: what a hardware epoch's register writes configure, decoded from the register
file when its units start. The units used with their fields by ATON.h name, the stream-switch
graph (which source feeds which unit port, in which of the two contexts), and each stream
engine's memory footprint (the bytes it reads or writes, in which pool or buffer).

Footprints follow streng.py's addressing model (items rounded up to whole bytes)."""
from dataclasses import dataclass
from functools import cached_property

from .registers import ATON_BASE
from .streng import configured_engine

PROCESSING_UNITS = ("CONVACC", "DECUN", "ACTIV", "ARITH", "POOL", "RECBUF")
STREAMING_UNITS = ("STRENG",) + PROCESSING_UNITS        # the units an epoch enables and the switch connects


@dataclass
class UnitConfig:
    name: str                       # instance name: STRENG3, CONVACC0
    kind: str                       # unit name in the map: STRENG
    index: int
    registers: dict                 # register → {field: value} (registers with fields) or value

    def as_dict(self):
        return {"unit": self.name, "registers": self.registers}


@dataclass(frozen=True)
class Route:
    """The switch feeds `dest` (unit instance) input port `port` from `source` in `context`."""
    dest: str
    port: int
    context: int
    source: str
    switch: tuple = (0, 0)          # the port's FNR0, FNR1 (both contexts, enabled or not)
    pixel_ticks: bool = False       # TICKTYPE 1: the contexts tick on pixels, not frames

    @property
    def frames(self):
        """This context's FNR: its frames before the switch to the other context (0: no switch)."""
        return self.switch[self.context]

    def as_dict(self):
        return {**self.__dict__, "switch": list(self.switch), "frames": self.frames}


@dataclass
class Footprint:
    """What one stream engine of a chain touches, as its addressing (streng.StreamEngine) says."""
    addressing: object              # the streng.StreamEngine
    location: str = ""              # the pool/buffer the first byte lies in, when known

    engine = property(lambda self: self.addressing.name)
    direction = property(lambda self: "write" if self.addressing.writes else "read")   # "read": memory → switch
    mode = property(lambda self: "raw" if self.addressing.raw else "raster")
    item_bits = property(lambda self: self.addressing.item_bits)
    frames = property(lambda self: self.addressing.frames)

    @property
    def nbytes(self):
        return self.addressing.item_addresses.size * self.addressing.item_bytes

    @property
    def span(self):
        return self.addressing.span if self.nbytes else (0, 0)

    @cached_property
    def segments(self):
        """[(address, bytes)] in access order, contiguous runs merged."""
        return self.addressing.segments()

    def as_dict(self):
        lo, hi = self.span
        return {"engine": self.engine, "direction": self.direction, "mode": self.mode, "item_bits": self.item_bits,
                "frames": self.frames, "bytes": self.nbytes, "first": lo, "end": hi, "location": self.location,
                "segments": len(self.segments)}


@dataclass
class EpochProgram:
    label: str
    units: list                     # [UnitConfig] of the units started
    routes: list                    # [Route] into those units
    footprints: list                # [Footprint] of the stream engines started
    writes: int = 0                 # register writes since the previous program started
    cycles: int = 0                 # NPU cycles the chain takes (simulated: npu.py's stated model)

    def unit(self, name):
        return next(u for u in self.units if u.name == name)

    def as_dict(self):
        return {"epoch": self.label, "writes": self.writes, "simulated_npu_cycles": self.cycles,
                "units": [u.as_dict() for u in self.units],
                "routes": [r.as_dict() for r in self.routes], "streams": [f.as_dict() for f in self.footprints]}

    def text(self):
        """A readable dump: one line per unit (non-reset fields), route and stream."""
        lines = [f"{self.label}: {len(self.units)} units, {self.writes} register writes, "
                 f"{self.cycles:,} NPU cycles (simulated)"]
        for u in self.units:
            parts = []
            for reg, fields in u.registers.items():
                if isinstance(fields, dict):
                    shown = " ".join(f"{k}=0x{v:08X}" if k == "REG" else f"{k}={v}" for k, v in fields.items() if v)
                    parts.append(f"{reg}[{shown}]")
                else:
                    parts.append(f"{reg}=0x{fields:08X}")
            lines.append(f"  {u.name:<10} " + " ".join(parts))
        for r in self.routes:
            ctx = f" ctx{r.context}" + (f" frames={r.frames}" if r.frames else "")
            lines.append(f"  route      {r.source} -> {r.dest}.in{r.port}{ctx}")
        for f in self.footprints:
            lo, hi = f.span
            where = f" in {f.location}" if f.location else ""
            lines.append(f"  stream     {f.engine} {f.direction} {f.mode} {f.item_bits}-bit x{f.frames} frames: "
                         f"{f.nbytes} bytes in 0x{lo:08X}..0x{hi:08X}{where}")
        return "\n".join(lines)


def decode(aton, regs, started, label, writes=0, locate=None):
    """The program of the unit instances `started` ([(unit, index)]) from the register file `regs`
    ({offset from ATON_BASE: value}); `locate(address)` names the pool/buffer of an address."""
    units = []
    for kind, i in started:
        unit = aton.units[kind]
        registers = {}
        for r in sorted(unit.registers.values(), key=lambda r: r.offset):
            if r.fields and all(f.access == "r" or f.name.startswith("RAW_") for f in r.fields):
                continue                                    # status and raw interrupt flags, not configuration
            value = regs.get(unit.instance_base(i) + r.offset, r.reset)
            if value == r.reset and r.name != "CTRL":
                continue
            registers[r.name] = r.split(value) if r.fields else value
        units.append(UnitConfig(unit.instance_name(i), kind, i, registers))
    names = {u.name for u in units}
    routes = [r for r in switch_routes(aton, regs) if r.dest in names]
    footprints = [footprint(aton, regs, i, locate) for kind, i in started if kind == "STRENG"]
    return EpochProgram(label, units, routes, footprints, writes)


def switch_routes(aton, regs):
    """Every enabled route of the stream switch (both contexts)."""
    routes = []
    for address, register, enables, dest, port in _switch_ports(aton):
        value = regs.get(address, register.reset)
        if not value & enables:                     # neither context enabled: the common case, decided at once
            continue
        f = register.split(value)
        for ctx in (0, 1):
            if f[f"EN{ctx}"]:
                routes.append(Route(dest, port, ctx, aton.source_name(f[f"LINK{ctx}"]), (f["FNR0"], f["FNR1"]),
                                    bool(f["TICKTYPE"])))
    return routes


def _switch_ports(aton):
    """[(address, DST register, mask of its EN bits, unit instance, port)] of the switch, by
    address (computed once)."""
    if "_switch_ports" not in aton.__dict__:
        switch = aton.units["STRSWITCH"]
        aton.__dict__["_switch_ports"] = [
            (switch.base + r.offset, r, r.field("EN0").put(0, 1) | r.field("EN1").put(0, 1))
            + _destination(aton, r.name[3:])
            for r in sorted(switch.registers.values(), key=lambda r: r.offset) if r.name.startswith("DST")]
    return aton.__dict__["_switch_ports"]


def _destination(aton, suffix):
    """DST register suffix → (unit instance, port): one digit is the instance (STRENG3, POOL1: port
    0), two are instance and port (CONVACC12: CONVACC1 port 2)."""
    kind = next(k for k in sorted(aton.units, key=len, reverse=True) if suffix.startswith(k))
    digits = suffix[len(kind):]
    return aton.units[kind].instance_name(int(digits[0])), int(digits[1:] or 0)


def footprint(aton, regs, i, locate=None):
    """The bytes stream engine i reads or writes, from its registers (streng.py's addressing)."""
    e = configured_engine(aton, regs, i)
    fp = Footprint(e)
    if locate and fp.nbytes:
        fp.location = locate(fp.span[0]) or ""
    return fp


def register_name(aton, offset):
    """`UNIT.REGISTER` of an offset from ATON_BASE (or its address when it is none)."""
    unit, i, reg = aton.locate(offset)
    if unit is None or reg is None:
        return f"0x{ATON_BASE + offset:08X}"
    return f"{unit.instance_name(i)}.{reg.name}"
