"""A started hardware chain's computation inside the NPU model: its units' configurations from the
epoch program, the words its reading stream engines send (streng.read_items) when it starts,
chain.run, and the words its writing stream engines store (streng.write_items) when it ends.

What a unit takes from a stream word (the engines' side is streng.py's): its value at the unit's
own width, from the word's low end (the arithmetic unit's FBYTESX/Y, the pooling and activation
units' FBYTES, the convolution unit's FBYTES and FUNSIGNED: fixedpoint.to_width, convacc.accumulate), except
that an engine's 24-bit data goes on as three 8-bit values, channel 0 first (the kernel streams
and DEEPMODE features: no sample sends a 24-bit value). A unit's value goes back into a word as
its low 24 bits (three 8-bit values into one word for a 24-bit writer). Which frames reach a
port in which of the switch's two contexts: chain.py."""
import numpy as np

from .activacc import ActivConfig, rom_tables
from .arithacc import ArithConfig, coefficient_memory
from .chain import run, wire
from .convacc import ConvConfig
from .fixedpoint import NotModelled
from .poolacc import PoolConfig
from .streng import STREAM_BITS, read_items

CONFIGS = {"CONVACC": ConvConfig.from_registers, "POOL": PoolConfig.from_registers,
           "ARITH": ArithConfig.from_registers, "ACTIV": ActivConfig.from_registers}
MEMORIES = {"ARITH": coefficient_memory, "ACTIV": rom_tables}     # the units whose memory configures them too


def chain_writes(program, aton, regs, read_memory):
    """[(writing streng.StreamEngine, its words)] the chain's writing engines store, computed from
    memory now; NotModelled (one line naming the unit or engine) when any part of it is not modelled."""
    configs = {}
    for u in program.units:
        if u.kind == "STRENG":
            configs[u.name] = None
            continue
        memory = [MEMORIES[u.kind](regs, aton.units[u.kind].instance_base(u.index))] if u.kind in MEMORIES else []
        configs[u.name] = CONFIGS[u.kind](u.registers, *memory, name=u.name)
    engines = {f.engine: f.addressing for f in program.footprints}
    for engine in engines.values():
        engine.check()
    units = wire(configs, program.routes)
    out = []

    def read(name):
        engine = engines[name]
        values = unit_values(engine, read_items(engine, read_memory))
        if values.size % engine.frames:
            raise NotModelled(f"{name}: {values.size} items in {engine.frames} frames of unequal size")
        return np.split(values, engine.frames)

    def write(name, frames):
        engine = engines[name]
        values = np.concatenate([np.asarray(v, dtype=np.int64).ravel() for v in frames])
        words = stream_words(engine, values)
        if words.size != engine.item_addresses.size:
            raise NotModelled(f"{name} writes {engine.item_addresses.size} items, its units give {words.size}")
        out.append((engine, words))

    run(units, read, write)
    return out


def unit_values(engine, words):
    """The values the units take from a reading engine's words: the words, or three 8-bit values
    a word for 24-bit data."""
    if engine.data_bits != STREAM_BITS:
        return words
    return (words[:, None] >> np.array([0, 8, 16]) & 0xFF).ravel()


def stream_words(engine, values):
    """The words a writing engine takes from its units' values (the inverse of unit_values)."""
    values = values & ((1 << STREAM_BITS) - 1)
    if engine.data_bits != STREAM_BITS:
        return values
    if values.size % 3:
        raise NotModelled(f"{engine.name}: {values.size} 8-bit values for 24-bit items")
    return ((values.reshape(-1, 3) & 0xFF) << np.array([0, 8, 16])).sum(axis=1)
