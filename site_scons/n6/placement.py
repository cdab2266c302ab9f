"""Which memory pool receives the model's constants.

One deterministic rule shared by the simulated compiler (which places the weights) and the
generate emitter (which must name every `.raw` before the tool runs): the first pool marked
`constants_preferred`, else the first read-only pool, else the first read/write pool. Only usable
pools count (a size-0 pool is a memory not to use, a FORMAT_C pool is not memory)."""
from .mpool import MemPool, MpoolFile


def params_pool(mpool: MpoolFile) -> MemPool | None:
    raw = [p for p in mpool.pools if p.usable]
    for pick in (lambda p: p.constants_preferred, lambda p: p.read_only, lambda p: True):
        found = [p for p in raw if pick(p)]
        if found:
            return found[0]
    return None


def activation_pools(mpool: MpoolFile) -> list[MemPool]:
    """Read/write pools in allocation order: internal before external, the params pool last."""
    cpool = params_pool(mpool)
    rw = [p for p in mpool.pools if p.usable and not p.read_only]
    return sorted(rw, key=lambda p: (p is cpool, p.external))
