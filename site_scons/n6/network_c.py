"""What the relocatable flow reads from a generated `network.c`: header options, the LL_ATON
version guard, the c-name, pool comments, relative-pool labels and the buffer tables."""
import re
from dataclasses import dataclass, field

from .errors import N6Error
from .paths import StrPath

_GLOBAL_POOL = re.compile(r"/\*\s*global pool\s+(\d+)\s+is\s+(.*?)\s*\*/")
_POOL_DESC = re.compile(r"/\*\s*index=(\d+)\s+file postfix=(\S+)\s+name=(.*?)\s+offset=(.*?)\s*\*/")
_LABEL = re.compile(r"^\s*extern\s+unsigned\s+char\s+(\w+)\s*\[\s*\]\s*;\s*/\*\s*\[(\d+)\]\s*;\s*\*/", re.M)
_GUARD = re.compile(r"#if\s+LL_ATON_VERSION_MAJOR\s*!=\s*(\d+)\s*\|\|\s*LL_ATON_VERSION_MINOR\s*!=\s*(\d+)\s*"
                    r"\|\|\s*LL_ATON_VERSION_MICRO\s*!=\s*(\d+)\s*\|\|\s*LL_ATON_VERSION_DEV\s*!=\s*(\d+)")
_C_NAME = re.compile(r"\bLL_ATON_EpochBlockItems_(\w+)\s*\(")
_TABLE = re.compile(r"LL_ATON_(Input|Output|Internal)_Buffers_Info_\w+\s*\(void\)\s*\{(.*?)\n\}", re.S)
_ENTRY = re.compile(r"\{\s*\.name\s*=\s*\"([^\"]+)\"(.*?)\n\s*\},", re.S)
_FIELD = re.compile(r"\.(\w+)\s*=\s*([^,\n]+)")
_ADDR_BASE = re.compile(r"\.addr_base\s*=\s*\{(.*?)\}\s*(?:/\*.*?\*/)?\s*,", re.S)
_HEX = re.compile(r"\b(0x[0-9a-fA-F]+)")
_OLD_FORM = re.compile(r"\.addr_(start|end|limit)\s*=\s*\{(.*?)\}", re.S)
_SIZE = re.compile(r"([\d.]+)\s*(B|KB|MB|)")
_UNITS = {"": 1, "B": 1, "KB": 1024, "MB": 1024 * 1024}


@dataclass
class PoolComment:
    index: int
    postfix: str
    name: str
    offset: int
    description: str
    size_text: str = "?"

    def has(self, token: str) -> bool:
        """Whether the description carries `token` (absolute_mode, READ_WRITE, vpool, cacheable=ON)."""
        return token in self.description.split()

    @property
    def absolute(self) -> bool:
        return self.has("absolute_mode")

    @property
    def read_write(self) -> bool:
        return self.has("READ_WRITE")

    @property
    def vpool(self) -> bool:
        return self.has("vpool")

    @property
    def cacheable(self) -> bool:
        return self.has("cacheable=ON")

    @property
    def size(self) -> int:
        m = re.search(r"\bsize=(\d+)", self.description)
        return int(m.group(1)) if m else 0

    @property
    def global_size(self) -> int:
        """The `global pool ... is <size>` figure in bytes (0 for `?`), truncated like ST's flow
        reads it: "2.28 MB" is int(2.28 * 1024 * 1024)."""
        m = _SIZE.fullmatch(self.size_text.strip())
        return int(float(m.group(1)) * _UNITS[m.group(2)]) if m else 0


@dataclass
class Buffer:
    table: str          # Input | Output | Internal
    name: str
    base: int | str     # int address or label name
    offset_start: int
    offset_end: int
    offset_limit: int
    is_param: bool
    data_type: str = ""   # as written: DataType_INT8, ...


@dataclass
class NetworkC:
    path: str
    text: str
    options: dict[str, str] = field(default_factory=dict)
    version: tuple[int, ...] | None = None
    c_name: str | None = None
    pools: list[PoolComment] = field(default_factory=list)
    labels: list[tuple[str, int]] = field(default_factory=list)      # (label, size)
    buffers: list[Buffer] = field(default_factory=list)

    @property
    def git_description(self) -> str:
        return self.options.get("GIT_DESCRIPTION", "")

    def has_option(self, key: str) -> bool:
        return key in self.options


def _header_options(text: str) -> dict[str, str]:
    """Keys of the comment block before the first `/* global pool` line."""
    head = text.split("/* global pool", 1)[0]
    opts = {}
    for line in head.splitlines():
        line = line.strip().lstrip("*").strip()
        m = re.match(r"(GIT_\w+)\s+\"(.*)\"", line)
        if m:
            opts[m.group(1)] = m.group(2)
            continue
        m = re.match(r"(--[\w-]+)\s*=\s*(.*)", line)
        if m:
            opts[m.group(1)] = m.group(2).strip().strip('"')
    return opts


def _int(text: str, path: StrPath, what: str) -> int:
    try:
        return int(text.strip().rstrip("UuLl"), 0)
    except ValueError:
        raise N6Error(path, f"cannot read {what} {text.strip()!r}", "regenerate network.c with stedgeai") from None


def _address(text: str, labels: list[str]) -> int | str | None:
    """A pool base as written in a buffer table: a hex literal, or a relative pool's label
    (possibly inside address-conversion macros and casts)."""
    for label in labels:
        if re.search(rf"\b{re.escape(label)}\b", text):
            return label
    m = _HEX.search(text)
    return int(m.group(1), 16) if m else None


def _buffer(path: StrPath, table: str, name: str, fields: str, labels: list[str]) -> Buffer:
    values = dict(_FIELD.findall(fields))
    base = _ADDR_BASE.search(fields)
    if base is not None:
        addr = _address(base.group(1), labels)
        offsets = [_int(values.get(f"offset_{k}", "0"), path, f"offset_{k}") for k in ("start", "end", "limit")]
    else:   # older form: absolute start/end/limit addresses
        old = {k: _address(v, labels) for k, v in _OLD_FORM.findall(fields)}
        start = old.get("start")
        end, limit = old.get("end", start), old.get("limit", start)
        if not (isinstance(start, int) and isinstance(end, int) and isinstance(limit, int)):
            addr = None
        else:
            addr = start
            offsets = [0, end - start, limit - start]
    if addr is None:
        raise N6Error(path, f"buffer '{name}' has no readable .addr_base", "regenerate network.c with stedgeai")
    return Buffer(table, name, addr, offsets[0], offsets[1], offsets[2], values.get("is_param", "0").strip() == "1",
                  values.get("type", "").strip())


_TRAILER = re.compile(r"(?:\s|//[^\n]*|/\*.*?\*/|^#[^\n]*)+$", re.S | re.M)
_C_TOKENS = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[{}]|/\*', re.S)


def check_complete(path: StrPath, text: str) -> None:
    """A generated C file cut short (an interrupted copy, a full disk) is reported as such, not
    as a missing pool or as compiler errors: every block closed, nothing after the last one."""
    depth = last_close = 0
    for m in _C_TOKENS.finditer(text):
        tok = m.group(0)
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
            last_close = m.start()
        elif tok == "/*":
            depth = -1 if depth == 0 else depth
            break
    # what follows the last closing brace, without trailing blanks, comments and # lines (the
    # search starts there: from the top of a large file it costs seconds)
    tail = _TRAILER.sub("", text[last_close:])
    if depth != 0 or not text.strip() or not tail.endswith(("}", ";")):
        lines = text.count("\n") + 1
        raise N6Error(path, f"truncated: the file ends inside a block or a comment ({len(text)} bytes, {lines} lines)",
                      "copy the complete file that stedgeai generate wrote")


def parse_network_c(path: StrPath) -> NetworkC:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        raise N6Error(path, "generated network C file not found", "run stedgeai generate first") from None
    check_complete(path, text)
    net = NetworkC(path=str(path), text=text, options=_header_options(text))
    m = _GUARD.search(text)
    if m:
        net.version = tuple(int(x) for x in m.groups())
    m = _C_NAME.search(text)
    if not m:
        raise N6Error(path, "no LL_ATON_EpochBlockItems_<name>() function: not a generated network file",
                      "point the build at the network.c written by stedgeai generate")
    net.c_name = m.group(1)
    sizes = {int(i): s for i, s in _GLOBAL_POOL.findall(text)}
    for idx, postfix, name, rest in _POOL_DESC.findall(text):
        offset = re.match(r"(0x[0-9a-fA-F]+|\d+)", rest)
        net.pools.append(PoolComment(int(idx), postfix, name, int(offset.group(1), 0) if offset else 0,
                                     "offset=" + rest, sizes.get(int(idx), "?")))
    net.labels = [(label, int(size)) for label, size in _LABEL.findall(text)]
    labels = [label for label, _ in net.labels]
    for table, body in _TABLE.findall(text):
        for name, fields in _ENTRY.findall(body):
            net.buffers.append(_buffer(path, table, name, fields, labels))
    return net
