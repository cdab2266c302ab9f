"""A hardware chain's compute units wired as the stream switch routes them: the values each unit
sends on, frame by frame, from what the stream engines read to what they write. The stream
engines themselves stay outside (data movement: `read(engine)` gives the frames an engine reads,
as int arrays of its items; `write(engine, frames)` takes the frames it writes), so the same
wiring serves the NPU model's chains and the per-epoch bench.

Frames: a convolution unit makes one output frame per feature frame on its port 0 (one kernel set
each, from the kernel stream on port 1, plus the frame of partial sums on port 2 when it
accumulates), a pooling unit one per frame on its port 0; an arithmetic unit works on the
element stream across frames (its coefficient counters run on) and keeps the frame boundaries of its port 0."""
from dataclasses import dataclass

import numpy as np

from .arithacc import compute
from .convacc import ConvConfig, convolve, kernel_frames
from .fixedpoint import NotModelled
from .poolacc import PoolConfig, pool

MODELLED = frozenset({"CONVACC", "ARITH", "POOL"})


@dataclass(frozen=True)
class Unit:
    name: str                       # CONVACC0, ARITH2, STRENG5
    config: object                  # ConvConfig, ArithConfig, or None for a stream engine
    inputs: dict                    # port → source unit name


def wire(configs, routes):
    """Units from {name: config} and the switch's routes [(dest, port, context, source)]: a port
    takes its context-0 source, else its context-1 one (nucleo_mnv1's fully connected layer sends
    its completed sums in context 1 only)."""
    inputs, seen = {}, {}
    for dest, port, _context, source in sorted(routes, key=lambda r: -r[2]):
        if seen.setdefault((dest, port), source) != source:
            raise NotModelled(f"{dest} port {port}: fed by {seen[dest, port]} and {source} in the switch's two "
                              "contexts (two-context multiplexing is not modelled)")
        inputs.setdefault(dest, {})[port] = source
    return {name: Unit(name, config, inputs.get(name, {})) for name, config in configs.items()}


def run(units, read, write):
    """Compute every unit once its inputs are known; the stream engines fed by a unit write."""
    frames = {}

    def value(name):
        if name not in units:
            raise NotModelled(f"{name} feeds the chain's units but is not one of them")
        if name not in frames:
            frames[name] = _compute(units[name], value, read)
        return frames[name]

    for unit in units.values():
        if unit.config is None and 0 in unit.inputs:
            write(unit.name, value(unit.inputs[0]))


def _accumulate_frames(unit, value):
    """A unit summing over frames through its own output (ST's fully connected layers, a deep
    vector in passes): of every AFILT.TOT frames, those from FIRST to LAST add the previous frame's
    output (through INSHIFT), the others start from zero (frame-zero mode, GEN1SUM); the frame
    LAST completes a sum and is the one the other units receive."""
    cfg = unit.config
    tot, first, last = cfg.frame_filter or (1, 0, 0)
    features = value(unit.inputs[0])
    stream = b"".join((np.asarray(f, dtype=np.int64) & 0xFF).astype(np.uint8).tobytes()
                      for f in value(unit.inputs[1]))
    kernels = kernel_frames(stream, cfg, len(features))
    size = cfg.height * cfg.width * cfg.pixel_items
    out, previous = [], None
    for k, (f, w) in enumerate(zip(features, kernels)):
        partial = previous if first <= k % tot <= last and previous is not None else np.zeros(cfg.output_shape)
        previous = convolve(np.asarray(f)[:size], w, cfg, partial).ravel()
        if k % tot == last:
            out.append(previous)
    return out


def _compute(unit, value, read):
    if unit.config is None:
        return read(unit.name)
    if 0 not in unit.inputs:
        raise NotModelled(f"{unit.name}: its input arrives in the switch's context 1 only (not modelled)")
    cfg = unit.config
    if isinstance(cfg, ConvConfig):
        if unit.inputs.get(2) == unit.name:
            return _accumulate_frames(unit, value)
        if cfg.frame_filter:
            raise NotModelled(f"{unit.name}: AFILT without the unit's own output on its port 2")
        features = value(unit.inputs[0])
        stream = b"".join((np.asarray(f, dtype=np.int64) & 0xFF).astype(np.uint8).tobytes()
                          for f in value(unit.inputs[1]))
        kernels = kernel_frames(stream, cfg, len(features))
        partials = value(unit.inputs[2]) if cfg.accumulate else [None] * len(features)
        size = cfg.height * cfg.width * cfg.pixel_items
        return [convolve(np.asarray(f)[:size], k, cfg, p).ravel()       # raw 24-bit streams pad the frame
                for f, k, p in zip(features, kernels, partials)]
    if isinstance(cfg, PoolConfig):
        size = cfg.height * cfg.width * cfg.channels
        return [pool(np.asarray(f)[:size], cfg) for f in value(unit.inputs[0])]
    x = value(unit.inputs[0])
    y = np.concatenate(value(unit.inputs[1])) if cfg.dual and 1 in unit.inputs else None
    out = compute(np.concatenate(x), cfg, y)
    return np.split(out, np.cumsum([len(f) for f in x])[:-1])
