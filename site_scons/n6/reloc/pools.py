"""Memory pools of a generated network as the relocatable image describes them: per-pool figures
from the buffer tables, classification into descriptors (RELOC/COPY/RESET, PARAM/ACTIV/MIXED)."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import N6Error
from ..mpool import EXTERNAL_BASE

if TYPE_CHECKING:   # the image checker and pack read flags words only: they need no network.c parser
    from ..network_c import Buffer, NetworkC

TYPE_UNUSED, TYPE_RELOC, TYPE_COPY, TYPE_RESET = 0, 1, 2, 3
DATA_PARAM, DATA_ACTIV, DATA_MIXED = 1, 2, 3
ATTR_READ, ATTR_WRITE, ATTR_CACHEABLE = 1, 2, 4
TYPE_NAMES = {TYPE_UNUSED: "UNUSED", TYPE_RELOC: "RELOC", TYPE_COPY: "COPY", TYPE_RESET: "RESET"}
DATA_NAMES = {DATA_PARAM: "PARAM", DATA_ACTIV: "ACTIV", DATA_MIXED: "MIXED"}


def flags_word(type_: int, data: int, attr: int, pool_id: int) -> int:
    return type_ << 24 | data << 16 | attr << 8 | pool_id


def describe_flags(flags: int) -> str:
    """`RELOC.PARAM.0.RCACHED`-style text of a descriptor flags word."""
    type_, data, attr, pool_id = flags >> 24, (flags >> 16) & 0xFF, (flags >> 8) & 0xFF, flags & 0xFF
    access = "R" if attr & ATTR_READ else "W"
    attr_text = access + "CACHED" if attr & ATTR_CACHEABLE else ("READ" if attr & ATTR_READ else "WRITE")
    parts = [TYPE_NAMES.get(type_, f"0x{type_:02X}"), DATA_NAMES.get(data, f"0x{data:02X}")]
    if type_ == TYPE_RELOC:
        parts.append(str(pool_id))
    return ".".join(parts + [attr_text])


@dataclass
class Pool:
    index: int
    name: str            # file postfix, e.g. "xSPI2"
    offset: int          # base address
    absolute: bool
    read_write: bool
    cacheable: bool
    label: str | None = None   # relative pools: the extern label
    size: int = 0        # the pool's size in the .mpool
    global_size: int = 0  # the `global pool ... is <size>` figure
    used: int = 0
    const: int = 0
    has_params: bool = False
    params_only: bool = False
    described: bool = True   # gets a descriptor (has a .raw file or a global size)
    # classification
    type: int = TYPE_UNUSED
    data: int = 0
    pool_id: int = 0
    foff: int = 0

    @property
    def rw(self) -> int:
        return self.used - self.const

    @property
    def attr(self) -> int:
        return (ATTR_WRITE if self.read_write else ATTR_READ) | (ATTR_CACHEABLE if self.cacheable else 0)

    @property
    def flags(self) -> int:
        return flags_word(self.type, self.data, self.attr, self.pool_id if self.type == TYPE_RELOC else 0)

    @property
    def dst(self) -> int:
        return 0 if self.type == TYPE_RELOC else self.offset

    @property
    def carries_params(self) -> bool:
        return self.data in (DATA_PARAM, DATA_MIXED)


@dataclass
class _Range:
    """Lowest and highest byte (inclusive) of what the buffers occupy inside one pool."""
    lo: int | None = None
    hi: int | None = None

    def add(self, lo: int, hi: int) -> None:
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)

    @property
    def size(self) -> int:
        return 0 if self.lo is None or self.hi is None or self.hi < self.lo else self.hi - self.lo + 1


def _figures(pool: Pool, buffers: Iterable[Buffer]) -> tuple[int, int, list[int], list[int]]:
    """Used and constant bytes of one physical pool, clipped to the pool, as ST's flow counts
    them: each buffer's [start, end) (absolute address; a relative buffer counts from the pool's
    base) is cut to the pool's [offset, offset + size); used = highest - lowest byte touched, of
    every buffer, const = the same over the parameter buffers. A pool that no buffer touches
    keeps the `global pool ... is <size>` figure. Returns (used, const, full, partial): the
    last two are (activation, parameter) buffer counts fully / partly inside the pool."""
    first, last = pool.offset, pool.offset + pool.size - 1
    used, const = _Range(), _Range()
    full, partial = [0, 0], [0, 0]
    for b in buffers:
        size = b.offset_end - b.offset_start
        if isinstance(b.base, str):
            if b.base != pool.label:
                continue
            start = pool.offset + b.offset_start
        else:
            start = b.base + b.offset_start
        end = start + size - 1
        if size <= 0 or end < first or start > last:
            continue
        lo, hi = max(start, first), min(end, last)
        used.add(lo, hi)
        if b.is_param:
            const.add(lo, hi)
        if hi >= lo:   # a buffer over a pool of size 0 counts for nothing
            (full if (lo, hi) == (start, end) else partial)[int(b.is_param)] += 1
    return (used.size or pool.global_size), const.size, full, partial   # size 0: no buffer inside


def pools_of(net: NetworkC, raw_postfixes: Sequence[str] | None = None) -> list[Pool]:
    """Pools in descriptor-table order (offset descending), with figures and classification.
    `raw_postfixes`: postfixes of the .raw files next to network.c (None: every pool has one);
    a pool gets a descriptor when it has a .raw file or a non-zero `global pool` size."""
    relative = [c for c in net.pools if not c.absolute]
    if len(relative) != len(net.labels):
        raise N6Error(net.path, f"{len(relative)} relative pools but {len(net.labels)} extern pool labels",
                      "regenerate network.c with stedgeai; the file is inconsistent")
    labels = {c.index: label for c, (label, _) in zip(relative, net.labels)}
    pools = []
    for c in net.pools:
        if c.vpool or (c.size == 0 and c.offset == 0):
            continue
        p = Pool(c.index, c.postfix, c.offset, c.absolute, c.read_write, c.cacheable, labels.get(c.index),
                 size=c.size, global_size=c.global_size)
        p.used, p.const, full, partial = _figures(p, net.buffers)
        p.has_params = bool(full[1] or partial[1])
        p.params_only = (not full[0] and full[1] > 0) or (not partial[0] and partial[1] > 0)
        p.described = raw_postfixes is None or p.global_size > 0 or \
            any(r.endswith(p.name) for r in raw_postfixes)
        pools.append(p)
    pools.sort(key=lambda p: p.offset, reverse=True)
    _classify(net.path, pools)
    return pools


def _classify(path: str, pools: Iterable[Pool]) -> None:
    seen: dict[int, str] = {}
    for p in pools:
        if p.used == 0 or not p.described:
            p.type = TYPE_UNUSED
            continue
        if not p.absolute:
            if p.offset < EXTERNAL_BASE:
                raise N6Error(path, f"relative pool '{p.name}' at 0x{p.offset:08X} is below 0x60000000",
                              "only external pools (xSPI, >= 0x60000000) may be USEMODE_RELATIVE in the .mpool")
            p.type, p.pool_id = TYPE_RELOC, 1 if p.read_write else 0
            if p.pool_id in seen:
                kind = "read/write" if p.read_write else "read-only"
                raise N6Error(path, f"two relative {kind} pools ('{seen[p.pool_id]}' and '{p.name}')",
                              f"make only one {kind} pool USEMODE_RELATIVE in the .mpool")
            seen[p.pool_id] = p.name
            if not p.read_write and p.params_only:
                p.data = DATA_PARAM
            elif p.read_write:
                p.data = DATA_MIXED if p.has_params else DATA_ACTIV
            else:
                raise N6Error(path, f"relative read-only pool '{p.name}' holds activations",
                              "make the pool read/write or keep only constants in it")
        elif p.has_params:
            p.type, p.data = TYPE_COPY, DATA_MIXED if p.read_write else DATA_PARAM
            if not p.read_write and not p.params_only:
                raise N6Error(path, f"read-only pool '{p.name}' holds activations", "make the pool read/write")
        elif p.read_write:
            p.type, p.data = TYPE_RESET, DATA_ACTIV
        else:
            raise N6Error(path, f"read-only pool '{p.name}' holds no constants but is used",
                          "check the .mpool rights of this pool")
    if sum(1 for p in pools if p.type != TYPE_UNUSED) > 9:
        raise N6Error(path, "more than 9 used memory pools", "the loader accepts at most 9 pool descriptors")
