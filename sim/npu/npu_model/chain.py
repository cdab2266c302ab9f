"""A hardware chain's compute units wired as the stream switch routes them: the values each unit
sends on, frame by frame, from what the stream engines read to what they write. The stream
engines themselves stay outside (data movement: `read(engine)` gives the frames an engine reads,
as int arrays of its items; `write(engine, frames)` takes the frames it writes), so the same
wiring serves the NPU model's chains and the per-epoch bench.

Frames: a convolution unit makes one output frame per feature frame on its port 0 (one kernel set
each, from the kernel stream on port 1, plus the frame of partial sums on port 2 when it
accumulates), a pooling unit one per frame on its port 0; an arithmetic unit works on the
element stream across frames (its coefficient counters run on) and keeps the frame boundaries of its port 0.

The switch's two contexts (a stated model of ATON.h's DST fields: EN, LINK and FNR, "number of
ticks", for each context; TICKTYPE 0, ticks of frames, as ll_aton.c leaves it: pixels stop in one
line): a port's frames pass in context 0 for FNR0 frames, then in context 1
for FNR1 frames, and so on (FNR0 = 0: context 0 throughout); a frame reaches the port when its
context is enabled there. What the references use, one source per port: nucleo_mnv1's fully
connected layer (a convolution unit summing 2 frames through its own output, AFILT) feeds its
requantisation in context 1 only with FNR 1 and 1, so every second frame, the completed sum,
reaches it (the per-epoch rates against LiteRT are those of the former rule, "the frame AFILT.LAST
is the one the other units receive"); blazeface's 4 ports with FNR0 3 and context 1 off receive
the 3 frames their source makes. Two sources multiplexed on one port stop in one line (no
reference uses them)."""
from dataclasses import dataclass

import numpy as np

from .activacc import ActivConfig, evaluate
from .arithacc import compute
from .convacc import ConvConfig, convolve, kernel_frames
from .fixedpoint import NotModelled
from .poolacc import PoolConfig, pool

# The processing units not modelled (the others compute: compute.py) and what is missing, the stop
# line's reason (no public sample uses them)
NOT_MODELLED = {
    "DECUN": "decompression, its codebook and codeword formats (BFORMAT, DFORMAT, FFORMAT) are not public",
    "RECBUF": "the reconfigurable buffer's behaviour is not public",
}


@dataclass(frozen=True)
class Port:
    source: str                     # the unit feeding it
    contexts: frozenset             # the contexts it is enabled in
    switch: tuple = (0, 0)          # FNR0, FNR1

    def passes(self, count):
        """Which of `count` frames reach the port (a list of booleans)."""
        fnr0, fnr1 = self.switch
        if not fnr0:
            return [0 in self.contexts] * count
        return [(0 if k % (fnr0 + fnr1) < fnr0 else 1) in self.contexts for k in range(count)]

    def select(self, frames):
        """The frames of those its source sends that reach the port."""
        return [f for f, passes in zip(frames, self.passes(len(frames))) if passes]


@dataclass(frozen=True)
class Unit:
    name: str                       # CONVACC0, ARITH2, STRENG5
    config: object                  # ConvConfig, ArithConfig, or None for a stream engine
    inputs: dict                    # port number → Port


def wire(configs, routes):
    """Units from {name: config} and the switch's routes [program.Route]."""
    ports = {}
    for r in routes:
        if r.pixel_ticks:
            raise NotModelled(f"{r.dest} port {r.port}: the switch's contexts ticking on pixels (TICKTYPE) "
                              "are not modelled")
        p = ports.setdefault((r.dest, r.port), Port(r.source, frozenset(), r.switch))
        if p.source != r.source:
            raise NotModelled(f"{r.dest} port {r.port}: fed by {p.source} and {r.source} in the switch's two "
                              "contexts (two sources multiplexed are not modelled)")
        ports[r.dest, r.port] = Port(r.source, p.contexts | {r.context}, p.switch)
    inputs = {}
    for (dest, port), p in ports.items():
        inputs.setdefault(dest, {})[port] = p
    return {name: Unit(name, config, inputs.get(name, {})) for name, config in configs.items()}


def run(units, read, write):
    """Compute every unit once its inputs are known; the stream engines fed by a unit write."""
    frames = {}

    def value(name):
        if name not in units:
            raise NotModelled(f"{name} feeds the chain's units but is not one of them")
        if name not in frames:
            frames[name] = _compute(units[name], delivered, read)
        return frames[name]

    def delivered(port):
        return port.select(value(port.source))

    for unit in units.values():
        if unit.config is None and 0 in unit.inputs:
            write(unit.name, delivered(unit.inputs[0]))


def _accumulate_frames(unit, value):
    """A unit summing over frames through its own output (ST's fully connected layers, a deep
    vector in passes): of every AFILT.TOT frames, those from FIRST to LAST add the previous frame's
    output (through INSHIFT), the others start from zero (frame-zero mode, GEN1SUM); it sends every
    frame's output (the switch's contexts pick the completed ones for the other units)."""
    cfg = unit.config
    tot, first, last = cfg.frame_filter or (1, 0, 0)
    features, kernels = _convolution_inputs(unit, value)
    out, previous = [], None
    for k, (f, w) in enumerate(zip(features, kernels)):
        partial = previous if first <= k % tot <= last and previous is not None else np.zeros(cfg.output_shape)
        previous = convolve(f, w, cfg, partial).ravel()
        out.append(previous)
    return out


def _convolution_inputs(unit, value):
    """A convolution unit's feature frames (port 0) and a kernel frame for each (port 1)."""
    cfg = unit.config
    features = _frames(unit, value(unit.inputs[0]), cfg.height * cfg.width * cfg.pixel_items)
    stream = b"".join((np.asarray(f, dtype=np.int64) & 0xFF).astype(np.uint8).tobytes()
                      for f in value(unit.inputs[1]))
    return features, kernel_frames(stream, cfg, len(features))


def _frames(unit, frames, size):
    """Each frame cut to the `size` items of the unit's frame (raw 24-bit streams pad it); a
    shorter frame stops."""
    short = [len(f) for f in frames if len(f) < size]
    if short:
        raise NotModelled(f"{unit.name}: sent a frame of {short[0]} items where its frame holds {size}")
    return [np.asarray(f)[:size] for f in frames]


def _compute(unit, value, read):
    if unit.config is None:
        return read(unit.name)
    if 0 not in unit.inputs:
        raise NotModelled(f"{unit.name}: nothing feeds its port 0")
    cfg = unit.config
    if isinstance(cfg, ConvConfig):
        if 2 in unit.inputs and unit.inputs[2].source == unit.name:
            return _accumulate_frames(unit, value)
        if cfg.frame_filter:
            raise NotModelled(f"{unit.name}: AFILT without the unit's own output on its port 2")
        features, kernels = _convolution_inputs(unit, value)
        partials = value(unit.inputs[2]) if cfg.accumulate else [None] * len(features)
        return [convolve(f, k, cfg, p).ravel() for f, k, p in zip(features, kernels, partials)]
    if isinstance(cfg, PoolConfig):
        return [pool(f, cfg) for f in _frames(unit, value(unit.inputs[0]), cfg.height * cfg.width * cfg.channels)]
    x = value(unit.inputs[0])
    if isinstance(cfg, ActivConfig):
        out = evaluate(np.concatenate(x), cfg)
    else:
        y = np.concatenate(value(unit.inputs[1])) if cfg.dual and 1 in unit.inputs else None
        out = compute(np.concatenate(x), cfg, y)
    return np.split(out, np.cumsum([len(f) for f in x])[:-1])
