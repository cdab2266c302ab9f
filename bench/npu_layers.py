"""Per hardware epoch: the NPU model's compute units against the source model. For each epoch of
ST's 2.2 samples made of convolution and arithmetic units (one convolution, chained over up to
four units, then its requantisation chain), the epoch's input buffer is filled from LiteRT's
tensor of the same value (a random input image, every tensor preserved), the units compute
(convacc, arithacc) and the output buffer is compared with LiteRT's output tensor, both in the
buffer's quantisation (c_info.json): exact-match rate and largest error in LSB.

    N6_REAL_STEDGEAI=... .venv/bin/python bench/npu_layers.py [--sample nucleo_mnv1] [--epochs 3,13]

The source op of an epoch is the one whose weights its kernel stream carries (the layout of
bench/npu_kernel_layout.py). Epochs with other units, several convolutions, a partial weight
tensor, or a buffer in another scale than LiteRT's tensor are listed as skipped, with the reason.
The stream engines' data movement is not the model's here (npu1's part): the bench reads and
writes the frames the way network.c's stream-engine inits say (raw or raster, 8-bit items; frame
k at (k // FRAME_RPT) * FRPTOFF + (k % FRAME_RPT) * FOFFSET) in buffers laid out as c_info.json
says (channel blocks of `batch`).

Measured (seed 31): nucleo_mnv1 26 of 29 convolution epochs at 95.2%..99.5% exact, 1 LSB at most in
23; blazeface 16 epochs at 97.1%..99.6%, 1 LSB at most in all. Every error above 1 LSB (nucleo_mnv1
epochs 12, 26, 28: 98, 52, 2 LSB) falls where ST's requantisation chain saturates its 16-bit
per-channel multiply (epoch 12: 108 saturated elements, 104 errors above 1 LSB): the model computes
ST's arithmetic there, LiteRT does not saturate; whether the silicon does is for a board to say."""
import argparse
import json
import os

import numpy as np
from tabulate import tabulate

import npu_samples
from npu_kernel_layout import kernel_streams, stream
from npu_model.arithacc import ArithConfig, compute
from npu_model.convacc import ConvConfig, convolve, kernel_frames
from npu_model.fixedpoint import NotModelled

SEED = 31


class Skip(Exception):
    pass


def frame_start(init, k):
    """Byte offset of frame k of a stream engine (its init struct's frame loop)."""
    rpt = init.get("frame_loop_cnt", 0)
    return (k // rpt * init.get("loop_offset", 0) + k % rpt * init.get("frame_offset", 0)) if rpt \
        else k * init.get("frame_offset", 0)


def frame_positions(init):
    """Byte offsets (from the engine's first address) of the items of one frame, in stream order."""
    if init.get("raw"):
        return np.arange(init["offset_end"] - init.get("offset_start", 0))
    w, h, depth, step = init["fwidth"], init["fheight"], init["batch_depth"], init["batch_offset"]
    line = init.get("line_offset") or w * step
    y, x, c = np.meshgrid(np.arange(h), np.arange(w), np.arange(depth), indexing="ij")
    return (y * line + x * step + c).ravel()


class Memory:
    """The bytes of the activation pools an epoch reads and writes, by address: 8-bit items only."""

    def __init__(self):
        self.bytes = {}

    def write(self, address, values):
        for i, v in enumerate(np.asarray(values, dtype=np.int64).ravel() & 0xFF):
            self.bytes[address + i] = int(v)

    def stream_read(self, init, k):
        start = init["addr_base"] + init.get("offset_start", 0) + frame_start(init, k)
        data = np.array([self.bytes.get(start + int(o), 0) for o in frame_positions(init)], dtype=np.int64)
        return data if init.get("nbits_unsigned") else (data + 128) % 256 - 128

    def stream_write(self, init, k, values):
        start = init["addr_base"] + init.get("offset_start", 0) + frame_start(init, k)
        for o, v in zip(frame_positions(init), np.asarray(values, dtype=np.int64).ravel()):
            self.bytes[start + int(o)] = int(v) & 0xFF


def buffer_bytes(q, buffer):
    """A tensor [H, W, C] as a c_info buffer lays it out: channel blocks of `batch`, each H x W x batch."""
    block = buffer.get("batch") or q.shape[-1]
    if q.ndim != 3 or q.shape[-1] % block:
        raise Skip(f"buffer {buffer['name']}: layout not read by the bench")
    h, w, c = q.shape
    return q.reshape(h, w, c // block, block).transpose(2, 0, 1, 3).ravel()


def to_buffer(q, detail, buffer):
    """LiteRT's quantised tensor in a c_info buffer's quantisation (same scale: a zero-point shift)."""
    scale, zero = detail["quantization"]
    intq = buffer.get("intq") or {}
    if not intq or len(intq["scales"]) != 1 or abs(intq["scales"][0] / scale - 1) > 1e-5:
        raise Skip(f"buffer {buffer['name']} is not in LiteRT's scale")
    return q.astype(np.int64) - zero + intq["offsets"][0]


class Sample:
    def __init__(self, name):
        self.name = name
        self.it = npu_samples.interpreter(name)
        detail = self.it.get_input_details()[0]
        info = np.iinfo(detail["dtype"]) if np.issubdtype(detail["dtype"], np.integer) else None
        rng = np.random.default_rng(SEED)
        data = (rng.integers(info.min, info.max + 1, detail["shape"]) if info
                else rng.uniform(-1, 1, detail["shape"])).astype(detail["dtype"])
        self.it.set_tensor(detail["index"], data)
        self.it.invoke()
        self.details = {d["index"]: d for d in self.it.get_tensor_details()}
        self.ops = self.it._get_ops_details()
        self.weights = npu_samples.weight_tensors(self.it)
        self.index = {d["name"]: i for i, d in self.details.items()}
        self.raw = npu_samples.params(name)
        self.epochs = npu_samples.epochs(name)
        self.vectors = npu_samples.arith_vectors(name)
        self.info = npu_samples.c_info(name)

    def source_op(self, cfg, slices, data):
        for name, w in self.weights:
            if w.shape[1:3] != (cfg.kernel_height, cfg.kernel_width):
                continue
            depthwise = w.shape[0] == 1 and cfg.kernels > 1
            passes = slices if depthwise else max(slices, -(-w.shape[3] // cfg.depth))
            if stream(w, cfg, passes, depthwise, "chosen") == bytes(data):
                op = next(o for o in self.ops if len(o["inputs"]) > 1 and o["inputs"][1] == self.index[name])
                return op, depthwise
        raise Skip("no whole source weight tensor in the kernel stream")

    def run_epoch(self, epoch):
        d = self.epochs[epoch]
        init, routes = d["init"], d["routes"]
        if init["pool"] or not d["convacc"]:
            raise Skip("not a convolution epoch" if not init["pool"] else "pooling unit")
        streams = list(kernel_streams({epoch: d}, self.raw))
        if len(streams) != 1:
            raise Skip(f"{len(streams)} convolutions")
        _, units, cfg0, slices, data = streams[0]
        op, depthwise = self.source_op(cfg0, slices, data)
        chain = conv_chain(d["convacc"], routes)
        cfgs = {u: ConvConfig.from_registers(d["convacc"][u], f"CONVACC{u}") for u in chain}
        x_detail, y_detail = self.details[op["inputs"][0]], self.details[op["outputs"][0]]
        x_lite, y_lite = self.it.get_tensor(op["inputs"][0])[0], self.it.get_tensor(op["outputs"][0])[0]
        out_channels = y_lite.shape[-1]
        frames = -(-out_channels // cfg0.kernels)
        memory = Memory()
        engines = {}
        for u in chain:
            engine = engines[u] = init["streng"][int(npu_samples.source(f"CONVACC{u}", 0, routes)[len("STRENG"):])]
            found = npu_samples.buffer_at(self.info, engine["addr_base"] + engine.get("offset_start", 0), epoch)
            if found is None:
                raise Skip("input outside the activation buffers")
            memory.write(found[1], buffer_bytes(to_buffer(x_lite, x_detail, found[0]), found[0]))
        kernels = {u: kernel_frames(data, cfgs[u], frames) for u in chain}
        outputs = []
        for f in range(frames):
            partial = None
            for u in chain:
                features = memory.stream_read(engines[u], f)[:cfgs[u].height * cfgs[u].width * cfgs[u].depth]
                partial = convolve(features, kernels[u][f], cfgs[u], partial)      # 24-bit raw: padded
            outputs.append(partial.reshape(-1))
        values = np.concatenate(outputs)
        last, unit = f"CONVACC{chain[-1]}", None
        for _ in range(len(d["arith"]) + 1):
            unit = next((r[0] for r in routes if r[3] == last and r[2] == 0), None)
            if unit is None or not unit.startswith("ARITH"):
                break
            i = int(unit[len("ARITH"):])
            vectors, precisions = self.vectors[epoch][i]
            memory_words = npu_samples.coefficient_memory(init["arith"][i], vectors, precisions, self.raw)
            values = compute(values, ArithConfig.from_registers(d["arith"][i], memory_words, unit))
            last = unit
        if unit is None or not unit.startswith("STRENG"):
            raise Skip("the chain does not end in a stream engine")
        engine = init["streng"][int(unit[len("STRENG"):])]
        found = npu_samples.buffer_at(self.info, engine["addr_base"] + engine.get("offset_start", 0), epoch + 1)
        if found is None:
            raise Skip("output outside the activation buffers")
        expected = buffer_bytes(to_buffer(y_lite, y_detail, found[0]), found[0])
        out = Memory()
        for f, frame in enumerate(np.split(values, frames)):
            out.stream_write(engine, f, frame)
        got = np.array([out.bytes.get(found[1] + i, 0) for i in range(expected.size)], dtype=np.int64)
        diff = (got - expected + 128) % 256 - 128
        return {"epoch": epoch, "op": op["op_name"], "tensor": y_detail["name"], "units": len(chain) + len(d["arith"]),
                "elements": int(diff.size), "exact": float(np.mean(diff == 0)), "max_lsb": int(np.abs(diff).max())}


def conv_chain(convacc, routes):
    """The convolution units of an epoch in accumulation order (the first does not accumulate)."""
    feeds = {npu_samples.source(f"CONVACC{i}", 2, routes): i for i in convacc}
    first = next((i for i, regs in convacc.items() if regs["CTRL"]["NOSUM"]), None)
    if first is None:
        raise Skip("every convolution unit accumulates (partial sums from memory)")
    chain = [first]
    while f"CONVACC{chain[-1]}" in feeds:
        chain.append(feeds[f"CONVACC{chain[-1]}"])
    return chain


def main():
    npu_samples.need_test_bed()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", action="append", choices=npu_samples.SAMPLES)
    parser.add_argument("--epochs", help="comma-separated epoch numbers (default: all)")
    parser.add_argument("--json", default=os.path.join(npu_samples.ROOT, "build", "bench", "npu_layers.json"))
    args = parser.parse_args()
    report = {}
    for name in args.sample or npu_samples.SAMPLES:
        sample = Sample(name)
        wanted = [int(e) for e in args.epochs.split(",")] if args.epochs else sorted(sample.epochs)
        rows, skipped = [], []
        for epoch in wanted:
            try:
                rows.append(sample.run_epoch(epoch))
            except (Skip, NotModelled, ValueError) as e:
                if sample.epochs[epoch]["convacc"]:
                    skipped.append({"epoch": epoch, "reason": str(e)})
        report[name] = {"epochs": rows, "skipped": skipped}
        print(f"{name} (simulated NPU units against LiteRT {os.path.basename('model.tflite')}, seed {SEED})")
        print(tabulate([[r["epoch"], r["op"], r["tensor"][:40], r["units"], r["elements"], f"{100 * r['exact']:.3f}%",
                         r["max_lsb"]] for r in rows],
                       headers=["epoch", "LiteRT op", "output tensor", "units", "elements", "exact", "max LSB"]))
        for s in skipped:
            print(f"  skipped epoch {s['epoch']}: {s['reason']}")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)
    print(f"JSON: {args.json}")


if __name__ == "__main__":
    main()
