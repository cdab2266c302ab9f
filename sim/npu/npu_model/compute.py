"""A started hardware chain's computation inside the NPU model: its units' configurations from the
epoch program, the items its reading stream engines deliver from memory, chain.run, and the bytes
its writing stream engines store.

Stream items (a stated model from ll_aton.c's facts; the stream-engine addressing module will own
it): the switch carries words of three 8-bit lanes; a stream engine's CTRL.SIZE0..2 are the bits
each lane takes from (or gives to) an item in memory, in memory order, items SIZE0+SIZE1+SIZE2 bits.
A reading engine delivers one value per item, its bytes in its lanes, zero-extended, or with
SIGNEXT sign-extended from the top lane (the units read a value at their own width, signed: the
arithmetic unit's FBYTESX/Y, the pooling unit's FBYTES, the convolution unit's FBYTES and
FUNSIGNED), except that an item filling all three lanes goes on as three 8-bit values (the kernel
streams and DEEPMODE features: no sample stores a 24-bit value). A writing engine stores each
value's lane bytes. Bit gaps, lanes of other than 0 or 8 bits and two-context multiplexing of
an engine are not modelled: a stop naming the engine."""
import numpy as np

from .arithacc import ArithConfig, coefficient_memory
from .chain import run, wire
from .convacc import ConvConfig
from .fixedpoint import NotModelled, signed
from .poolacc import PoolConfig

CONFIGS = {"CONVACC": ConvConfig.from_registers, "POOL": PoolConfig.from_registers}
LANE_BITS = 8


def chain_writes(program, aton, regs, read_memory):
    """[(footprint, bytes)] the chain's writing stream engines store, computed from memory now;
    NotModelled (one line naming the unit or engine) when any part of it is not modelled."""
    configs = {}
    for u in program.units:
        if u.kind == "STRENG":
            configs[u.name] = None
        elif u.kind == "ARITH":
            memory = coefficient_memory(regs, aton.units["ARITH"].instance_base(u.index))
            configs[u.name] = ArithConfig.from_registers(u.registers, memory, u.name)
        elif u.kind in CONFIGS:
            configs[u.name] = CONFIGS[u.kind](u.registers, u.name)
        else:
            raise NotModelled(f"{u.name} is not modelled")
    by_engine = {f.engine: f for f in program.footprints}
    lanes = {u.name: _lanes(u) for u in program.units if u.kind == "STRENG"}
    units = wire(configs, [(r.dest, r.port, r.context, r.source) for r in program.routes])
    out = []

    def read(engine):
        f = by_engine[engine]
        data = np.frombuffer(b"".join(read_memory(a, n) for a, n in f.segments), dtype=np.uint8)
        items = _items(data, lanes[engine])
        if items.size % f.frames:
            raise NotModelled(f"{engine}: {items.size} items in {f.frames} frames of unequal size")
        return np.split(items, f.frames)

    def write(engine, frames):
        f = by_engine[engine]
        data = _item_bytes(np.concatenate([np.asarray(v, dtype=np.int64).ravel() for v in frames]), lanes[engine])
        if data.size != f.nbytes:
            raise NotModelled(f"{engine} writes {f.nbytes} bytes, its units give {data.size}")
        out.append((f, data.tobytes()))

    run(units, read, write)
    return out


def _lanes(unit):
    """(the lanes an item fills, SIGNEXT) of a stream engine; a stop for what is not modelled."""
    ctrl, strd = unit.registers["CTRL"], unit.registers.get("STRD", {})
    sizes = (ctrl["SIZE0"], ctrl["SIZE1"], ctrl["SIZE2"])
    if strd.get("FGAP") or strd.get("BGAP"):
        raise NotModelled(f"{unit.name}: items with bit gaps (FGAP/BGAP) in a compute chain are not modelled")
    if any(s not in (0, LANE_BITS) for s in sizes) or not any(sizes):
        raise NotModelled(f"{unit.name}: lanes of {sizes} bits are not modelled")
    return [k for k, s in enumerate(sizes) if s], bool(ctrl["SIGNEXT"])


def _items(data, lanes):
    """The values a reading engine delivers from its bytes in access order: an item's bytes in
    its lanes, zero-extended, or with SIGNEXT sign-extended from the top lane's top bit."""
    used, signext = lanes
    if len(used) == 3:
        return data.astype(np.int64)
    words = data.reshape(-1, len(used)).astype(np.int64)
    value = sum(words[:, j] << LANE_BITS * k for j, k in enumerate(used))
    if not signext:
        return value
    return signed(value, LANE_BITS * (used[-1] + 1))


def _item_bytes(values, lanes):
    """The bytes a writing engine stores for its values."""
    used, _ = lanes
    if len(used) == 3:
        return (values & 0xFF).astype(np.uint8)
    return np.stack([values >> LANE_BITS * k & 0xFF for k in used], axis=-1).astype(np.uint8).ravel()
