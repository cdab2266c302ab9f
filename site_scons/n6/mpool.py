"""The `.mpool` memory-pool file of the Neural-ART compiler (input form).

ST writes two spellings of the same keys: snake_case in the 2.x files (`mem_file_prefix`,
`read_power`, `constants_preferred`) and camelCase in the 3.x ones (`memFilePrefix`, `readPower`,
`constantsPreferred`, a JSON boolean); both are read. A pool of size 0 is a memory the compiler
must not use (ST's files list every memory of the chip that way); a FORMAT_C pool holds C arrays,
not memory at an address."""
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .errors import N6Error
from .jsonfile import read_json
from .paths import StrPath

Number = TypeVar("Number", int, float)

_MAGNITUDE = {"BYTES": 1, "KBYTES": 1024, "MBYTES": 1024 * 1024}
EXTERNAL_BASE = 0x6000_0000
# Read-only external memory: the DK's xSPI2 NOR, memory-mapped (relocatable images live there too).
EXTERNAL_FLASH = (0x7000_0000, 0x8000_0000)


@dataclass(frozen=True)
class MemPool:
    fname: str                 # file postfix, e.g. "xSPI2"
    name: str                  # pool name, e.g. "octoFlash"
    offset: int                # base address
    size: int                  # bytes
    rights: str = "ACC_WRITE"  # ACC_READ | ACC_WRITE
    mode: str = "USEMODE_ABSOLUTE"
    fformat: str = "FORMAT_RAW"
    cacheable: bool = False
    constants_preferred: bool = False
    throughput: str = "MID"
    latency: str = "MID"
    byte_width: int = 8
    freq_ratio: float = 1.0
    read_power: float = 0.0
    write_power: float = 0.0
    burst_max_length: int = 0xFFFF_FFFF
    burst_penalty: int = 0
    pipelined: bool = True

    @property
    def usable(self) -> bool:
        """A memory the compiler may place buffers in: raw memory with a size."""
        return self.size > 0 and self.fformat == "FORMAT_RAW"

    @property
    def relative(self) -> bool:
        return self.mode == "USEMODE_RELATIVE"

    @property
    def read_only(self) -> bool:
        return self.rights == "ACC_READ"

    @property
    def external(self) -> bool:
        return self.offset >= EXTERNAL_BASE


@dataclass
class MpoolFile:
    path: str
    mem_file_prefix: str
    pools: list[MemPool] = field(default_factory=list)

    def pool(self, fname: str) -> MemPool | None:
        return next((p for p in self.pools if p.fname == fname), None)


def _quantity(path: StrPath, pool: str, key: str, obj: object) -> int:
    if not isinstance(obj, dict) or "value" not in obj:
        raise N6Error(path, f"pool '{pool}': '{key}' must be an object with 'value' and 'magnitude'",
                      f'write "{key}": {{"value": "...", "magnitude": "BYTES"}}')
    magnitude = obj.get("magnitude", "BYTES")
    if not isinstance(magnitude, str) or magnitude not in _MAGNITUDE:
        raise N6Error(path, f"pool '{pool}': unknown magnitude {magnitude!r} in '{key}'",
                      "use BYTES, KBYTES or MBYTES")
    try:
        value = int(str(obj["value"]), 0)
    except ValueError:
        raise N6Error(path, f"pool '{pool}': '{key}' value {obj['value']!r} is not a number",
                      "write a decimal or 0x-prefixed hex string") from None
    return value * _MAGNITUDE[magnitude]


_FLAGS = {True: True, False: False, "true": True, "false": False, "cacheable_on": True, "cacheable_off": False,
          "pipelined_on": True, "pipelined_off": False}
_FLAG_WORDS = {"cacheable": '"CACHEABLE_ON" or "CACHEABLE_OFF"', "pipelined": '"PIPELINED_ON" or "PIPELINED_OFF"'}


def _flag(path: StrPath, pool: str, key: str, value: object) -> bool:
    """ST writes these as strings ("true", "CACHEABLE_ON"); anything else is a typo, not "false"."""
    if value == "" or value is None:
        return False
    flag = _FLAGS.get(value.lower() if isinstance(value, str) else value) if isinstance(value, (str, bool)) else None
    if flag is None:
        raise N6Error(path, f"pool '{pool}': '{key}' is {value!r}",
                      f"write \"{key}\": " + _FLAG_WORDS.get(key, '"true" or "false"'))
    return flag


def _number(path: StrPath, pool: str, key: str, value: object, kind: type[Number]) -> Number:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise N6Error(path, f"pool '{pool}': '{key}' is {value!r}, not a number", f"write a number for {key}")
    try:
        return kind(value)
    except ValueError:
        raise N6Error(path, f"pool '{pool}': '{key}' is {value!r}, not a number", f"write a number for {key}") from None


def _either(obj: dict[str, Any], snake: str, camel: str, default: object) -> Any:
    """A key as ST 2.x (snake_case) or 3.x (camelCase) spells it."""
    return obj.get(snake, obj.get(camel, default))


def _check_layout(path: StrPath, pools: list[MemPool]) -> None:
    """Every usable pool within the 32-bit address space, no two sharing an address."""
    for p in pools:
        if p.size < 0:
            raise N6Error(path, f"pool '{p.fname}': size is {p.size}", "give the pool a size of 0 (unused) or more")
    pools = [p for p in pools if p.usable]
    for p in pools:
        if p.offset + p.size > 1 << 32:
            raise N6Error(path, f"pool '{p.fname}': 0x{p.offset:X} + {p.size} bytes ends beyond the 32-bit "
                          "address space", "fix its offset or size")
    ordered = sorted(pools, key=lambda p: p.offset)
    for a, b in zip(ordered, ordered[1:]):
        if b.offset < a.offset + a.size:
            raise N6Error(path, f"pools '{a.fname}' (0x{a.offset:08X}, {a.size} bytes) and '{b.fname}' "
                          f"(0x{b.offset:08X}) overlap", "fix the offsets or sizes so the pools are disjoint")


def parse_mpool(data: object, path: StrPath) -> MpoolFile:
    memory = data.get("memory") if isinstance(data, dict) else None
    if not isinstance(memory, dict) or not isinstance(memory.get("mempools"), list):
        raise N6Error(path, "malformed .mpool: no 'memory.mempools' list",
                      "start from an ST .mpool file (memory.mempools[] of pool objects)")
    pools = []
    for i, p in enumerate(memory["mempools"]):
        if not isinstance(p, dict):
            raise N6Error(path, f"malformed .mpool: mempools[{i}] is not an object")
        missing = [k for k in ("fname", "name", "offset", "size") if k not in p]
        if missing:
            raise N6Error(path, f"malformed .mpool: mempools[{i}] lacks {', '.join(missing)}",
                          "every pool needs fname, name, offset and size")
        prop = p.get("prop", {}) or {}
        if not isinstance(prop, dict):
            raise N6Error(path, f"pool '{p['fname']}': 'prop' is not an object", 'write "prop": {...}')
        for key in ("fname", "name"):
            if not isinstance(p[key], str) or not p[key]:
                raise N6Error(path, f"malformed .mpool: mempools[{i}].{key} is {p[key]!r}", f"write {key} as a string")
        mode = p.get("mode", "USEMODE_ABSOLUTE")
        if mode not in ("USEMODE_ABSOLUTE", "USEMODE_RELATIVE"):
            raise N6Error(path, f"pool '{p['fname']}': unknown mode '{mode}'",
                          "use USEMODE_ABSOLUTE or USEMODE_RELATIVE")
        rights = prop.get("rights", "ACC_WRITE")
        if rights not in ("ACC_READ", "ACC_WRITE"):
            raise N6Error(path, f"pool '{p['fname']}': unknown rights '{rights}'", "use ACC_READ or ACC_WRITE")
        pid = p["fname"]
        pools.append(MemPool(
            fname=str(p["fname"]), name=str(p["name"]),
            offset=_quantity(path, pid, "offset", p["offset"]),
            size=_quantity(path, pid, "size", p["size"]),
            rights=rights, mode=mode, fformat=p.get("fformat", "FORMAT_RAW"),
            cacheable=_flag(path, pid, "cacheable", prop.get("cacheable", "")),
            constants_preferred=_flag(path, pid, "constants_preferred",
                                      _either(prop, "constants_preferred", "constantsPreferred", "")),
            throughput=prop.get("throughput", "MID"), latency=prop.get("latency", "MID"),
            byte_width=_number(path, pid, "byteWidth", prop.get("byteWidth", 8), int),
            freq_ratio=_number(path, pid, "freqRatio", prop.get("freqRatio", 1.0), float),
            read_power=_number(path, pid, "read_power", _either(prop, "read_power", "readPower", 0.0), float),
            write_power=_number(path, pid, "write_power", _either(prop, "write_power", "writePower", 0.0), float),
            burst_max_length=_number(path, pid, "burstMaxLength", prop.get("burstMaxLength", 0xFFFF_FFFF), int),
            burst_penalty=_number(path, pid, "burstPenalty", prop.get("burstPenalty", 0), int),
            pipelined=_flag(path, pid, "pipelined", prop.get("pipelined", "PIPELINED_ON")),
        ))
    names = [p.fname for p in pools]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise N6Error(path, f"pool file postfix {dup[0]!r} appears twice", "give every pool a unique fname")
    _check_layout(path, pools)
    return MpoolFile(path=str(path), mem_file_prefix=_either(memory, "mem_file_prefix", "memFilePrefix", "atonbuf"),
                     pools=pools)


def read_mpool(path: str) -> MpoolFile:
    return parse_mpool(read_json(path, ".mpool file", shape=dict), path)
