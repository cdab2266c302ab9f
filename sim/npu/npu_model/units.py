"""What the compute units share: a decoded unit's registers with every field (the program lists
only the registers off their reset values)."""
from .registers import aton_map


def unit_fields(kind, registers):
    """{register: {field: value}} of every register of a unit of `kind`: the decoded ones (a field
    dict or a raw value) over the reset values."""
    unit = aton_map().units[kind]
    out = {}
    for r in unit.registers.values():
        value = registers.get(r.name, r.reset)
        out[r.name] = {**r.split(r.reset), **value} if isinstance(value, dict) else r.split(value)
    return out
