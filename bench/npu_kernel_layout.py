"""The convolution unit's kernel-stream layout against the real samples: for every kernel stream
of every epoch of ST's 2.2 samples, the bytes of the params .raw it reads against the stream
convacc.pack_kernel_frames makes from the source model's weights (LiteRT), for the layout chosen
and each alternative. Prints the match table convacc.py's docstring records; JSON beside it.

    N6_REAL_STEDGEAI=... .venv/bin/python bench/npu_kernel_layout.py [--json build/bench/npu_kernel_layout.json]

A stream whose bytes no source tensor explains in any layout (ST's own constants: channel padding,
kernels split by rows) is counted apart ("no source tensor")."""
import argparse
import collections
import json
import os

import numpy as np
from tabulate import tabulate

import npu_samples
from npu_model.convacc import ConvConfig, pack_kernel_frames

FLASH = 0x7100_0000
LAYOUTS = ("chosen", "kernel-major", "depth-first items", "deep groups of 16", "deep groups of 4", "deep unpadded")


def items(weights, cfg, slices, depthwise, layout):
    """[frames, slices*NR, KH, KW, depth] of the source weights [O, KH, KW, I] in stream order."""
    w = weights
    if depthwise:                                       # ST inflates it: kernel c sees channel c only
        c = w.shape[3]
        w = np.zeros((c,) + w.shape[1:3] + (c,), dtype=np.int64)
        w[np.arange(c), :, :, np.arange(c)] = weights[0].transpose(2, 0, 1)
    nr, depth = cfg.kernels, cfg.depth
    frames = -(-w.shape[0] // nr)
    out = np.zeros((frames, slices * nr, cfg.kernel_height, cfg.kernel_width, depth), dtype=np.int64)
    for s in range(frames):
        for u in range(slices):
            d0 = (s if depthwise else u) * depth
            for k in range(nr):
                if s * nr + k < w.shape[0]:
                    slot = k * slices + u if layout == "kernel-major" else u * nr + k
                    src = w[s * nr + k, :, :, d0:d0 + depth]
                    out[s, slot, :, :, :src.shape[-1]] = src
    return out


def stream(weights, cfg, slices, depthwise, layout):
    it = items(weights, cfg, slices, depthwise, layout)
    if layout == "depth-first items":
        flat = it.transpose(0, 1, 4, 2, 3).reshape(it.shape)
        return (flat & 0xFF).astype(np.uint8).tobytes()
    if cfg.deep and layout.startswith("deep"):
        import npu_model.convacc as convacc
        saved = convacc.DEEP_GROUP, convacc.DEEP_WORD
        convacc.DEEP_GROUP = {"deep groups of 16": 16, "deep groups of 4": 4}.get(layout, saved[0])
        convacc.DEEP_WORD = 1 if layout == "deep unpadded" else saved[1]
        try:
            return pack_kernel_frames(it, cfg)
        finally:
            convacc.DEEP_GROUP, convacc.DEEP_WORD = saved
    return pack_kernel_frames(it, cfg)


def kernel_streams(epochs, raw):
    """(epoch, [unit names], cfg, slices, raw bytes) of every kernel stream (shared by its units)
    of `epochs` (npu_samples.epochs) reading the params `raw`."""
    for epoch, d in sorted(epochs.items()):
        by_stream = collections.defaultdict(list)
        for i, regs in d["convacc"].items():
            by_stream[npu_samples.source(f"CONVACC{i}", 1, d["routes"])].append((regs["KFILT"]["FIRST"], i, regs))
        for engine, units in by_stream.items():
            init = d["init"]["streng"][int(engine[len("STRENG"):])]
            if init.get("addr_base") != FLASH:
                continue
            units.sort()
            cfg = ConvConfig.from_registers(units[0][2], f"CONVACC{units[0][1]}")
            data = raw[init["offset_start"]:init["offset_end"]]
            yield epoch, [f"CONVACC{i}" for _, i, _ in units], cfg, len(units), data


def main():
    npu_samples.need_test_bed()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=os.path.join(npu_samples.ROOT, "build", "bench", "npu_kernel_layout.json"))
    args = parser.parse_args()
    counts = collections.Counter()
    streams = []
    for sample in npu_samples.SAMPLES:
        tensors = npu_samples.weight_tensors(npu_samples.interpreter(sample))
        for epoch, units, cfg, slices, data in kernel_streams(npu_samples.epochs(sample), npu_samples.params(sample)):
            mode = "deep" if cfg.deep else "normal"
            best = {}
            for name, w in tensors:
                if w.shape[1:3] != (cfg.kernel_height, cfg.kernel_width):
                    continue
                depthwise = w.shape[0] == 1 and cfg.kernels > 1
                passes = slices if depthwise else max(slices, -(-w.shape[3] // cfg.depth))   # units, or passes
                for layout in LAYOUTS:
                    if layout.startswith("deep") and not cfg.deep:
                        continue
                    got = stream(w, cfg, passes, depthwise, layout)
                    if len(got) == len(data):
                        rate = float(np.mean(np.frombuffer(got, np.uint8) == np.frombuffer(data, np.uint8)))
                        if rate > best.get(layout, (-1,))[0]:
                            best[layout] = (rate, name)
            explained = any(r == 1.0 for r, _ in best.values())
            streams.append({"sample": sample, "epoch": epoch, "units": units, "mode": mode, "bytes": len(data),
                            "match": {k: v[0] for k, v in best.items()}, "tensor": best.get("chosen", (0, ""))[1]})
            counts[(sample, mode, "streams")] += 1
            if not explained:
                counts[(sample, mode, "no source tensor")] += 1
                continue
            for layout, (rate, _) in best.items():
                counts[(sample, mode, layout)] += rate == 1.0
    rows = []
    for sample in npu_samples.SAMPLES:
        for mode in ("normal", "deep"):
            n = counts[(sample, mode, "streams")]
            if n:
                explained = n - counts[(sample, mode, "no source tensor")]
                rows.append([sample, mode, n, n - explained] +
                            [f"{counts[(sample, mode, layout)]}/{explained}"
                             if mode == "deep" or not layout.startswith("deep") else "n/a" for layout in LAYOUTS])
    print(tabulate(rows, headers=["sample", "mode", "streams", "no source tensor"] + list(LAYOUTS)))
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"table": rows, "streams": streams}, f, indent=1)
    print(f"JSON: {args.json}")


if __name__ == "__main__":
    main()
