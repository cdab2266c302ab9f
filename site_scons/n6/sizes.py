"""Byte sizes as people write them for memories: `655360`, `0xA0000`, `640K`, `8M`, `1G`
(K/M/G are powers of 1024, as in linker scripts). A size is a positive number of bytes; `none`
(where the caller allows it) switches a budget off. Zero or negative sizes are errors, never
"no limit"."""
import re

from .errors import N6Error

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_SIZE = re.compile(r"(?i)\s*(0x[0-9a-f]+|[0-9]+)\s*(k|m|g)?(?:i?b)?\s*")
FIX = "write a positive byte count: 655360, 0xA0000, 640K or 8M"


def parse_size(value: object, where: str, allow_none: bool = False) -> int | None:
    """`value` (int or text) as a byte count. `where` names the variable or the file and key
    for the error. Returns None for `none` when `allow_none`."""
    if isinstance(value, bool):
        raise N6Error(where, f"size {value!r} is a boolean", FIX)
    if isinstance(value, int):
        n = value
    elif isinstance(value, str):
        if value.strip().lower() == "none":
            if allow_none:
                return None
            raise N6Error(where, "size 'none' is not allowed here", FIX)
        m = _SIZE.fullmatch(value)
        if m is None:
            if re.fullmatch(r"\s*-\s*\S+", value):
                raise N6Error(where, f"size {value.strip()!r} is negative",
                              FIX + (", or none to switch the gate off" if allow_none else ""))
            raise N6Error(where, f"size {value!r} is not a byte count",
                          FIX + (", or none to switch the gate off" if allow_none else ""))
        n = int(m.group(1), 0) * _UNITS[(m.group(2) or "").lower()]
    else:
        raise N6Error(where, f"size {value!r} is a {type(value).__name__}, not a byte count", FIX)
    if n <= 0:
        raise N6Error(where, f"size {value!r} is {'zero' if n == 0 else 'negative'}",
                      FIX + (", or none to switch the gate off" if allow_none else ""))
    return n


def format_size(n: int | None) -> str:
    """The shortest exact spelling: 640K, 8M, 0x1234 → '4660'."""
    if n is None:
        return "none"
    for suffix, unit in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)
