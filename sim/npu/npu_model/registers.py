"""The NPU's register map (aton_map.txt): units at their bases, registers at their offsets with
reset values, fields by name; the interrupt bits and stream-switch link numbers. Reading and
writing that table live here, with the lookups the model and the decoder make (which register an
address is, a register value split into its fields)."""
import os
from dataclasses import dataclass, field
from functools import lru_cache

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "aton_map.txt")
ATON_BASE = 0x480E_0000          # non-secure; the secure alias is 0x580E_0000
BLOCK = 0x1000                    # every unit instance spans one 4 KB block


@dataclass(frozen=True)
class Field:
    name: str
    lsb: int
    width: int
    access: str = "rw"            # "rw", "r" (read-only) or "w" (write-only)

    def get(self, value):
        return value >> self.lsb & ((1 << self.width) - 1)

    def put(self, value, data):
        mask = ((1 << self.width) - 1) << self.lsb
        return value & ~mask | data << self.lsb & mask


@dataclass
class Register:
    name: str
    offset: int
    reset: int
    fields: list = field(default_factory=list)

    def field(self, name):
        return next(f for f in self.fields if f.name == name)

    def split(self, value):
        """{field name: value} of every field."""
        return {f.name: f.get(value) for f in self.fields}


@dataclass
class Unit:
    name: str
    count: int
    base: int                     # offset of instance 0 from ATON_BASE
    stride: int
    registers: dict = field(default_factory=dict)   # name → Register

    def instance_base(self, i):
        return self.base + i * self.stride

    def instance_name(self, i):
        return f"{self.name}{i}" if self.count > 1 else self.name


@dataclass
class AtonMap:
    units: dict                   # name → Unit
    irqs: dict                    # interrupt name → INTREG bit
    links: dict                   # source name → stream-switch link number

    @classmethod
    def parse(cls, text, path="aton_map.txt"):
        units, irqs, links, unit = {}, {}, {}, None
        for number, line in enumerate(text.splitlines(), 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            try:
                if words[0] == "unit":
                    name, count, base, stride = words[1], int(words[2]), int(words[3], 0), int(words[4], 0)
                    unit = units[name] = Unit(name, count, base, stride)
                elif words[0] in ("irq", "link"):
                    table = irqs if words[0] == "irq" else links
                    table.update((n, int(v)) for n, v in (w.split(":") for w in words[1:]))
                else:
                    fields = []
                    for w in words[3:]:
                        parts = w.split(":")
                        access = parts[3] if len(parts) > 3 else "rw"
                        fields.append(Field(parts[0], int(parts[1]), int(parts[2]), access))
                    unit.registers[words[0]] = Register(words[0], int(words[1], 0), int(words[2], 0), fields)
            except (IndexError, ValueError, AttributeError) as e:
                raise ValueError(f"{path}:{number}: cannot read {line.strip()!r} ({e})") from None
        return cls(units, irqs, links)

    def lines(self):
        """The table's lines (without the comment header), as parse reads them."""
        out = []
        for u in self.units.values():
            out.append(f"unit {u.name} {u.count} 0x{u.base:05X} 0x{u.stride:04X}")
            for r in sorted(u.registers.values(), key=lambda r: r.offset):
                fs = " ".join(f"{f.name}:{f.lsb}:{f.width}" + ("" if f.access == "rw" else f":{f.access}")
                              for f in r.fields)
                out.append(f"  {r.name} 0x{r.offset:03X} 0x{r.reset:08X} {fs}".rstrip())
        out.append("irq " + " ".join(f"{n}:{b}" for n, b in self.irqs.items()))
        out.append("link " + " ".join(f"{n}:{b}" for n, b in self.links.items()))
        return out

    # -- lookups --------------------------------------------------------------------------------
    def locate(self, offset):
        """(Unit, instance, Register or None) of an offset from ATON_BASE; (None, None, None) off the map."""
        found = self._blocks().get(offset & ~(BLOCK - 1))
        if found is None:
            return None, None, None
        unit, i = found
        return unit, i, self._by_offset(unit.name).get(offset & (BLOCK - 1))

    def address(self, unit, i, register):
        """Offset from ATON_BASE of a register of unit instance i."""
        u = self.units[unit]
        return u.instance_base(i) + u.registers[register].offset

    def reset_values(self):
        """{offset from ATON_BASE: reset value} of every register of every instance."""
        return {u.instance_base(i) + r.offset: r.reset
                for u in self.units.values() for i in range(u.count) for r in u.registers.values()}

    def source_name(self, link):
        return next((n for n, v in self.links.items() if v == link), f"LINK{link}")

    def _blocks(self):
        if not hasattr(self, "_block_cache"):
            self._block_cache = {u.instance_base(i): (u, i) for u in self.units.values() for i in range(u.count)}
        return self._block_cache

    def _by_offset(self, unit):
        cache = self.__dict__.setdefault("_offset_cache", {})
        if unit not in cache:
            cache[unit] = {r.offset: r for r in self.units[unit].registers.values()}
        return cache[unit]


@lru_cache(maxsize=1)
def aton_map():
    """The table shipped with the model."""
    with open(TABLE, encoding="utf-8") as f:
        return AtonMap.parse(f.read(), TABLE)
