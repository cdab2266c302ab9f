"""Memory pools of a generated network as the relocatable image describes them: per-pool figures
from the buffer tables, classification into descriptors (RELOC/COPY/RESET, PARAM/ACTIV/MIXED)."""
from dataclasses import dataclass

from ..errors import N6Error
from ..mpool import EXTERNAL_BASE

TYPE_UNUSED, TYPE_RELOC, TYPE_COPY, TYPE_RESET = 0, 1, 2, 3
DATA_PARAM, DATA_ACTIV, DATA_MIXED = 1, 2, 3
ATTR_READ, ATTR_WRITE, ATTR_CACHEABLE = 1, 2, 4
TYPE_NAMES = {TYPE_UNUSED: "UNUSED", TYPE_RELOC: "RELOC", TYPE_COPY: "COPY", TYPE_RESET: "RESET"}
DATA_NAMES = {DATA_PARAM: "PARAM", DATA_ACTIV: "ACTIV", DATA_MIXED: "MIXED"}


def flags_word(type_, data, attr, pool_id):
    return type_ << 24 | data << 16 | attr << 8 | pool_id


def describe_flags(flags):
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
    label: str = None    # relative pools: the extern label
    used: int = 0
    const: int = 0
    has_params: bool = False
    has_activations: bool = False
    # classification
    type: int = TYPE_UNUSED
    data: int = 0
    pool_id: int = 0
    foff: int = 0

    @property
    def rw(self):
        return self.used - self.const

    @property
    def params_only(self):
        return self.has_params and not self.has_activations

    @property
    def attr(self):
        return (ATTR_WRITE if self.read_write else ATTR_READ) | (ATTR_CACHEABLE if self.cacheable else 0)

    @property
    def flags(self):
        return flags_word(self.type, self.data, self.attr, self.pool_id if self.type == TYPE_RELOC else 0)

    @property
    def dst(self):
        return 0 if self.type == TYPE_RELOC else self.offset

    @property
    def carries_params(self):
        return self.data in (DATA_PARAM, DATA_MIXED)


def _span(buffers):
    """Bytes from the lowest start to the highest end (ends are exclusive offsets)."""
    if not buffers:
        return 0
    return max(b.offset_end for b in buffers) - min(b.offset_start for b in buffers)


def pools_of(net):
    """Pools in descriptor-table order (offset descending), with figures and classification."""
    relative = [c for c in net.pools if not c.absolute and not c.vpool]
    if len(relative) != len(net.labels):
        raise N6Error(net.path, f"{len(relative)} relative pools but {len(net.labels)} extern pool labels",
                      "regenerate network.c with stedgeai; the file is inconsistent")
    labels = {c.index: label for c, (label, _) in zip(relative, net.labels)}
    pools = []
    for c in net.pools:
        if c.vpool or (c.size == 0 and c.offset == 0):
            continue
        p = Pool(c.index, c.postfix, c.offset, c.absolute, c.read_write, c.cacheable, labels.get(c.index))
        if p.label:
            inside = [b for b in net.buffers if b.base == p.label]
        else:
            inside = [b for b in net.buffers if isinstance(b.base, int) and
                      c.offset <= b.base + b.offset_start < c.offset + max(c.size, 1)]
        params = [b for b in inside if b.is_param]
        p.used = _span(inside) if inside else c.global_size
        p.const = _span(params)
        p.has_params = bool(params)
        p.has_activations = len(params) < len(inside)
        pools.append(p)
    pools.sort(key=lambda p: p.offset, reverse=True)
    _classify(net.path, pools)
    return pools


def _classify(path, pools):
    seen = {}
    for p in pools:
        if p.used == 0:
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
