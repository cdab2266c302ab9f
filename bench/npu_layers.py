"""Per hardware epoch: the NPU model's compute units against the source model. For each epoch of
ST's 2.2 samples made of convolution, arithmetic and pooling units (chain.py wires them as the
switch routes them), the epoch's input buffers is filled from LiteRT's
tensor of the same value (a random input image, every tensor preserved), the units compute
(convacc, arithacc) and the output buffer is compared with LiteRT's output tensor, both in the
buffer's quantisation (c_info.json): exact-match rate and largest error in LSB.

    N6_REAL_STEDGEAI=... .venv/bin/python bench/npu_layers.py [--sample nucleo_mnv1] [--epochs 3,13]

The source op of a convolution is the one whose weights its kernel stream carries (the layout of
bench/npu_kernel_layout.py); the k-th pooling unit of network.c is the source model's k-th pooling
op. Epochs with other units, no whole weight tensor, or a buffer no LiteRT tensor matches in
scale and size (ST's 16-bit intermediates) are listed as skipped, with the reason.
The stream engines' data movement is not the model's here (npu1's part): the bench reads and
writes the frames the way network.c's stream-engine inits say (raw or raster, 8-bit items; frame
k at (k // FRAME_RPT) * FRPTOFF + (k % FRAME_RPT) * FOFFSET) in buffers laid out as c_info.json
says (channel blocks of `batch`).

Measured (seed 31): nucleo_mnv1 27 of 28 compute epochs at 91.1%..100% exact (98.457% of all their
elements), 1 LSB at most in 24; blazeface 21 of 37 epochs at 93.6%..99.8% (98.862%; 98.848% when
rounding half away from zero), 1 LSB at most in 17, 2-3 LSB in the four residual adds
(epochs 72-78: the add scales the convolution's 1-LSB differences by up to 1.9); its three max
pools (epochs 13, 29, 60) equal LiteRT exactly (the JSON has each output apart). Speed: host
seconds of the units (stream reads included) against LiteRT's inference, measured in the same run.

nucleo_mnv1's fully connected layer (epoch 31: one unit summing 2 passes through its own output,
AFILT, completed sums sent in switch context 1) is 91.1% exact, 1 LSB at most.

--span runs every hardware epoch in order over one memory from the network's input alone (the
bench's stream-engine placement standing in for data movement), comparing each output a LiteRT
tensor matches. nucleo_mnv1 runs to its last hardware epoch; the 1-LSB differences carry on and
grow (98.9% exact after the first layer, 35-60% in the middle ones, 78-81% at the global average,
logits 8-40% exact with 3-8 LSB at most over seeds 1-5 and 31), and on these random images the
top-1 class differs from LiteRT's in all six (LiteRT's own two best logits are 2-10 LSB apart).
blazeface's input is float, quantised in software first: no span. Every error above 1 LSB (nucleo_mnv1
epochs 12, 26, 28: 98, 52, 2 LSB) falls where ST's requantisation chain saturates its 16-bit
per-channel multiply (epoch 12: 108 saturated elements, 104 errors above 1 LSB): the model computes
ST's arithmetic there, LiteRT does not saturate; whether the silicon does is for a board to say
(arithacc.py's table: with a 24-bit intermediate those epochs are 1 LSB at most). The rounding
choice and its rates over seeds 0-5: fixedpoint.py's table."""
import argparse
import os
import time

import numpy as np
from tabulate import tabulate

import npu_samples
from npu_kernel_layout import kernel_streams, stream
from npu_model.arithacc import ArithConfig
from npu_model.chain import run, wire
from npu_model.convacc import ConvConfig
from npu_model.fixedpoint import NotModelled
from npu_model.poolacc import PoolConfig
from npu_model.program import Route

SEED = 31
FLASH = 0x7100_0000


class Skip(Exception):
    pass


def summary(row):
    """A compared output without its arrays and address (for the JSON)."""
    return {k: v for k, v in row.items() if k not in ("got", "expected", "address")}


def frame_start(init, k):
    """Byte offset of frame k of a stream engine (its init struct's frame loop)."""
    rpt = init.get("frame_loop_cnt", 0)
    return (k // rpt * init.get("loop_offset", 0) + k % rpt * init.get("frame_offset", 0)) if rpt \
        else k * init.get("frame_offset", 0)


def frame_positions(init):
    """Byte offsets (from the engine's first address) of the bytes of one frame, in stream order:
    8-bit items, or 16-bit ones as two bytes (24-bit raw streams are read byte by byte)."""
    if init.get("raw"):
        return np.arange(init["offset_end"] - init.get("offset_start", 0))
    if max(init.get("nbits_in", 8), init.get("nbits_out", 8)) > 8 and init.get("dir"):
        raise Skip("a raster stream of items wider than 8 bits")
    w, h, depth, step = init["fwidth"], init["fheight"], init["batch_depth"], init["batch_offset"]
    depth *= max(init.get("nbits_in", 8), 8) // 8                      # 24-bit items: 3 bytes each
    line = init.get("line_offset") or w * step
    y, x, c = np.meshgrid(np.arange(h), np.arange(w), np.arange(depth), indexing="ij")
    return (y * line + x * step + c).ravel()


class Memory:
    """The bytes an epoch reads and writes by address, in regions (pools, the params): 8-bit items."""

    def __init__(self, regions):
        self.regions = regions                  # [(first address, np.uint8 array)]

    def _at(self, address, positions):
        for first, data in self.regions:
            if first <= address < first + data.size:
                return data, address - first + positions
        raise Skip(f"0x{address:08X} is outside the pools")

    def write(self, address, values):
        data, at = self._at(address, np.arange(len(values)))
        data[at] = np.asarray(values, dtype=np.int64) & 0xFF

    def read(self, address, count):
        data, at = self._at(address, np.arange(count))
        return data[at].astype(np.int64)

    def stream_read(self, init, k):
        data, at = self._at(init["addr_base"] + init.get("offset_start", 0) + frame_start(init, k),
                            frame_positions(init))
        values = data[at].astype(np.int64)
        bits = 8
        if init.get("raw") and min(init.get("nbits_in", 8), init.get("nbits_out", 8)) == 16:
            values, bits = values[0::2] | values[1::2] << 8, 16                  # little-endian 16-bit items
        half = 1 << (bits - 1)
        return values if init.get("nbits_unsigned") else (values + half) % (2 * half) - half

    def stream_write(self, init, k, values):
        data, at = self._at(init["addr_base"] + init.get("offset_start", 0) + frame_start(init, k),
                            frame_positions(init))
        values = np.asarray(values, dtype=np.int64)
        if init.get("nbits_out") == 16:
            values = np.stack([values & 0xFF, values >> 8 & 0xFF], axis=-1).ravel()
        data[at[:values.size]] = values[:at.size] & 0xFF


def buffer_bytes(q, buffer):
    """A tensor [H, W, C] as a c_info buffer lays it out: listed as [N, C, H, W], channel blocks of
    `batch`, each H x W x batch; listed as [N, H, W, C] (the network's input), as it is."""
    if q.ndim == 1 or list(buffer.get("shape", []))[1:] == list(q.shape):     # listed as N, H, W, C: plain
        return q.ravel()
    block = buffer.get("batch") or q.shape[-1]
    if q.ndim != 3 or q.shape[-1] % block:
        raise Skip(f"buffer {buffer['name']}: layout not read by the bench")
    h, w, c = q.shape
    return q.reshape(h, w, c // block, block).transpose(2, 0, 1, 3).ravel()


def to_buffer(q, detail, buffer):
    """LiteRT's quantised tensor in a c_info buffer's quantisation (same scale: a zero-point shift)."""
    scale, zero = detail["quantization"]
    intq = buffer.get("intq") or {}
    if not scale:
        raise Skip(f"{detail['name']} is a float tensor")
    if not intq or len(intq["scales"]) != 1 or abs(intq["scales"][0] / scale - 1) > 1e-5:
        raise Skip(f"buffer {buffer['name']} is not in LiteRT's scale")
    return q.astype(np.int64) - zero + intq["offsets"][0]


class Sample:
    def __init__(self, name, seed=SEED):
        self.name = name
        self.it = npu_samples.interpreter(name)
        detail = self.it.get_input_details()[0]
        info = np.iinfo(detail["dtype"]) if np.issubdtype(detail["dtype"], np.integer) else None
        rng = np.random.default_rng(seed)
        data = (rng.integers(info.min, info.max + 1, detail["shape"]) if info
                else rng.uniform(-1, 1, detail["shape"])).astype(detail["dtype"])
        self.it.set_tensor(detail["index"], data)
        started = time.perf_counter()
        self.it.invoke()
        self.litert_seconds = time.perf_counter() - started
        self.details = {d["index"]: d for d in self.it.get_tensor_details()}
        self.ops = self.it._get_ops_details()
        self.weights = npu_samples.weight_tensors(self.it)
        self.index = {d["name"]: i for i, d in self.details.items()}
        self.raw = npu_samples.params(name)
        self.epochs = npu_samples.epochs(name)
        self.vectors = npu_samples.arith_vectors(name)
        self.info = npu_samples.c_info(name)
        # the k-th pooling unit init of network.c is the k-th pooling op of the source model
        self.pool_units = [(e, i) for e in sorted(self.epochs) for i in sorted(self.epochs[e]["pool"])]
        self.pool_ops = [o for o in self.ops if o["op_name"] in ("MAX_POOL_2D", "AVERAGE_POOL_2D", "MEAN")]

    def source_op(self, cfg, slices, data):
        """The LiteRT op whose whole weight tensor the kernel stream carries."""
        for name, w in self.weights:
            if w.shape[1:3] != (cfg.kernel_height, cfg.kernel_width):
                continue
            depthwise = w.shape[0] == 1 and cfg.kernels > 1
            passes = slices if depthwise else max(slices, -(-w.shape[3] // cfg.depth))
            if stream(w, cfg, passes, depthwise, "chosen") == bytes(data):
                return next(o for o in self.ops if len(o["inputs"]) > 1 and o["inputs"][1] == self.index[name])
        raise Skip("no whole source weight tensor in the kernel stream")

    def memory(self):
        regions = [(int(p["address"]), np.zeros(p["size_bytes"], dtype=np.uint8))
                   for p in self.info["memory_pools"] if p["size_bytes"] and int(p["address"]) != FLASH]
        return Memory(regions + [(FLASH, np.frombuffer(self.raw, dtype=np.uint8).copy())])

    def candidates(self, ops):
        """(inputs, outputs): LiteRT tensors an epoch of these ops may read and write,
        theirs first, then those of the ops reading their outputs (a fused add), by tensor index."""
        made = [o["outputs"][0] for o in ops]
        inputs, outputs = [o["inputs"][0] for o in ops], list(made)
        for o in self.ops:
            if any(m in o["inputs"] for m in made) and o not in ops:
                inputs += [i for i in o["inputs"] if i not in made]
                outputs.append(o["outputs"][0])
        keep = lambda ids: [i for i in ids if i >= 0 and self.details[i]["quantization"][0]]
        return keep(inputs), keep(outputs)

    def buffer_values(self, buffer, candidates):
        """(tensor index, bytes of the buffer) of the candidate tensor in the buffer's scale and size."""
        for i in candidates:
            q = self.it.get_tensor(i)[0]
            if q.size == buffer["size_bytes"]:
                try:
                    return i, buffer_bytes(to_buffer(q, self.details[i], buffer), buffer)
                except Skip:
                    continue
        raise Skip(f"buffer {buffer['name']}: no LiteRT tensor in its scale")

    def units(self, epoch):
        """The epoch's units wired as network.c routes them (chain.wire), with their configs."""
        d = self.epochs[epoch]
        init, routes = d["init"], d["routes"]
        others = sorted({r[0] for r in routes} - set(f"CONVACC{i}" for i in d["convacc"])
                        - set(f"ARITH{i}" for i in d["arith"]) - set(f"POOL{i}" for i in d["pool"])
                        - set(f"STRENG{i}" for i in init["streng"]))
        if others:
            raise Skip(f"{others[0]} in the chain")
        configs = {f"STRENG{i}": None for i in init["streng"]}
        configs.update({f"CONVACC{i}": ConvConfig.from_registers(r, f"CONVACC{i}") for i, r in d["convacc"].items()})
        configs.update({f"POOL{i}": PoolConfig.from_registers(r, f"POOL{i}") for i, r in d["pool"].items()})
        for i, regs in d["arith"].items():
            vectors, precisions = self.vectors[epoch][i]
            words = npu_samples.coefficient_memory(init["arith"][i], vectors, precisions, self.raw)
            configs[f"ARITH{i}"] = ArithConfig.from_registers(regs, words, f"ARITH{i}")
        return wire(configs, [Route(dest, port, context, source, init["switch"][dest, port])
                              for dest, port, context, source, _ in routes])

    def source_ops(self, epoch):
        """{convolution or pooling unit: its LiteRT op}."""
        d = self.epochs[epoch]
        ops = {}
        for _, names, cfg, slices, data in kernel_streams({epoch: d}, self.raw):
            try:
                op = self.source_op(cfg, slices, data)
            except Skip:
                continue                                # ST's own constants (channel padding)
            ops.update((n, op) for n in names)
        ops.update((f"POOL{i}", self.pool_ops[self.pool_units.index((epoch, i))]) for i in d["pool"])
        return ops

    def engine(self, epoch, name):
        return self.epochs[epoch]["init"]["streng"][int(name[len("STRENG"):])]

    def execute(self, epoch, units, memory):
        """Run the units over `memory`: ({engine written: its init}, host seconds of the units)."""
        outputs = {}

        def write(name, frames):                    # an engine cuts the item stream into its own frames
            engine = self.engine(epoch, name)
            items = np.concatenate([np.asarray(f).ravel() for f in frames])
            size = frame_positions(engine).size // (2 if engine.get("nbits_out") == 16 and engine.get("raw") else 1)
            for k in range(max(1, engine.get("frame_tot_cnt", 1))):
                memory.stream_write(engine, k, items[k * size:(k + 1) * size])
            outputs[name] = engine

        def read(name):
            engine = self.engine(epoch, name)
            return [memory.stream_read(engine, k) for k in range(max(1, engine.get("frame_tot_cnt", 1)))]

        started = time.perf_counter()
        run(units, read, write)
        return outputs, time.perf_counter() - started

    def compare(self, epoch, units, outputs, memory, wanted):
        """Per output a compute unit feeds: its buffer against the LiteRT tensor in its scale."""
        rows = []
        for name, engine in outputs.items():
            if units[units[name].inputs[0].source].config is None:
                continue                                # a copy between stream engines (data movement)
            found = npu_samples.buffer_at(self.info, engine["addr_base"] + engine.get("offset_start", 0), epoch + 1)
            if found is None:
                raise Skip("an output outside the activation buffers")
            index, expected = self.buffer_values(found[0], wanted)
            got = memory.read(found[1], expected.size)
            diff = (got - expected + 128) % 256 - 128
            rows.append({"engine": name, "tensor": self.details[index]["name"], "source": units[name].inputs[0].source,
                         "exact": float(np.mean(diff == 0)), "max_lsb": int(np.abs(diff).max()),
                         "elements": int(diff.size), "got": got, "expected": expected, "address": found[1]})
        return rows

    def run_epoch(self, epoch):
        """One epoch on its own: inputs from LiteRT, outputs against LiteRT."""
        d = self.epochs[epoch]
        if not d["convacc"] and not d["pool"]:
            raise Skip("no convolution or pooling unit")
        units = self.units(epoch)
        source = self.source_ops(epoch)
        if not source:
            raise Skip("no whole source weight tensor in a kernel stream")
        ops = list({id(o): o for o in source.values()}.values())
        inputs, outputs_wanted = self.candidates(ops)
        made = {o["outputs"][0] for o in ops}
        memory = self.memory()
        for unit in units.values():                     # the activations the compute units read
            for name in (p.source for p in unit.inputs.values()):
                engine = self.engine(epoch, name) if name.startswith("STRENG") else None
                if unit.config is None or engine is None or engine["addr_base"] >= FLASH:
                    continue
                found = npu_samples.buffer_at(self.info, engine["addr_base"] + engine.get("offset_start", 0), epoch)
                if found is None:
                    raise Skip("an input outside the activation buffers")
                wanted = [source[unit.name]["inputs"][0]] if unit.name in source else \
                    [i for i in inputs if i not in made]
                memory.write(found[1], self.buffer_values(found[0], wanted)[1])
        outputs, seconds = self.execute(epoch, units, memory)
        per_output = self.compare(epoch, units, outputs, memory, outputs_wanted)
        elements = sum(o["elements"] for o in per_output)
        return {"epoch": epoch, "op": "+".join(o["op_name"] for o in ops),
                "tensor": " ".join(o["tensor"] for o in per_output), "units": len(units) - len(d["init"]["streng"]),
                "elements": elements, "exact": sum(o["exact"] * o["elements"] for o in per_output) / elements,
                "max_lsb": max(o["max_lsb"] for o in per_output), "host_seconds": seconds,
                "outputs": [summary(o) for o in per_output]}

    def run_span(self):
        """Every hardware epoch in order over one memory, only the network's input from LiteRT:
        each output a LiteRT tensor matches, compared as it is reached, errors carried on."""
        hardware = [e for e in sorted(self.epochs) if self.epochs[e]["init"]["streng"]]
        memory = self.memory()
        first = hardware[0]
        network_input = self.it.get_input_details()[0]["index"]
        try:
            for unit in self.units(first).values():
                for name in (p.source for p in unit.inputs.values()):
                    engine = self.engine(first, name) if name.startswith("STRENG") else None
                    if unit.config is not None and engine is not None and engine["addr_base"] < FLASH:
                        address = engine["addr_base"] + engine.get("offset_start", 0)
                        found = npu_samples.buffer_at(self.info, address, first)
                        memory.write(found[1], self.buffer_values(found[0], [network_input])[1])
        except Skip as e:
            return [], 0.0, f"epoch {first}, the network's input: {e}"
        rows, seconds = [], 0.0
        for epoch in hardware:
            try:
                units = self.units(epoch)
                outputs, spent = self.execute(epoch, units, memory)
            except (Skip, NotModelled) as e:
                return rows, seconds, f"epoch {epoch}: {e}"
            seconds += spent
            ops = list({id(o): o for o in self.source_ops(epoch).values()}.values())
            try:
                compared = self.compare(epoch, units, outputs, memory, self.candidates(ops)[1]) if ops else []
            except Skip:
                compared = []
            rows += [dict(o, epoch=epoch) for o in compared]
        return rows, seconds, None


def main():
    npu_samples.need_test_bed()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", action="append", choices=npu_samples.SAMPLES)
    parser.add_argument("--epochs", help="comma-separated epoch numbers (default: all)")
    parser.add_argument("--seed", type=int, default=SEED, help="of the random input image")
    parser.add_argument("--span", action="store_true",
                        help="also run every hardware epoch in order from the network's input alone")
    parser.add_argument("--json", default=os.path.join(npu_samples.ROOT, "build", "bench", "npu_layers.json"))
    args = parser.parse_args()
    report = {}
    for name in args.sample or npu_samples.SAMPLES:
        sample = Sample(name, args.seed)
        wanted = [int(e) for e in args.epochs.split(",")] if args.epochs else sorted(sample.epochs)
        rows, skipped = [], []
        for epoch in wanted:
            try:
                rows.append(sample.run_epoch(epoch))
            except (Skip, NotModelled, ValueError) as e:
                if sample.epochs[epoch]["convacc"] or sample.epochs[epoch]["pool"]:
                    skipped.append({"epoch": epoch, "reason": str(e)})
        report[name] = {"epochs": rows, "skipped": skipped}
        print(f"{name} (simulated NPU units against LiteRT on model.tflite, input seed {args.seed})")
        print(tabulate([[r["epoch"], r["op"], r["tensor"][:40], r["units"], r["elements"], f"{100 * r['exact']:.3f}%",
                         r["max_lsb"]] for r in rows],
                       headers=["epoch", "LiteRT op", "output tensor", "units", "elements", "exact", "max LSB"]))
        for s in skipped:
            print(f"  skipped epoch {s['epoch']}: {s['reason']}")
        elements = sum(r["elements"] for r in rows)
        if elements:
            exact = sum(r["exact"] * r["elements"] for r in rows) / elements
            report[name]["all_epochs"] = {"elements": elements, "exact": exact,
                                          "max_lsb": max(r["max_lsb"] for r in rows)}
            print(f"  all {len(rows)} epochs: {100 * exact:.3f}% of {elements} elements exact, "
                  f"{report[name]['all_epochs']['max_lsb']} LSB at most")
        units = sum(r["host_seconds"] for r in rows)
        report[name]["speed"] = {"units_host_seconds": units, "litert_seconds": sample.litert_seconds}
        if args.span:
            span, spent, stop = sample.run_span()
            print(f"{name}: every hardware epoch in order from the network's input only (errors carried on)")
            print(tabulate([[r["epoch"], r["tensor"][:48], r["elements"], f"{100 * r['exact']:.3f}%", r["max_lsb"]]
                            for r in span], headers=["epoch", "LiteRT tensor", "elements", "exact", "max LSB"]))
            print(f"  {'stopped at ' + stop if stop else 'ran to the last hardware epoch'}; units {spent:.2f} s")
            if span and not stop:
                last = span[-1]
                top1 = int(np.argmax(last["got"])) == int(np.argmax(last["expected"]))
                ranked = np.sort(last["expected"])
                print(f"  last output ({last['tensor'][:40]}): top-1 {'agrees' if top1 else 'DIFFERS'} "
                      f"(model class {int(np.argmax(last['got']))}, LiteRT class {int(np.argmax(last['expected']))}; "
                      f"LiteRT's two best {int(ranked[-1] - ranked[-2])} LSB apart)")
                report[name]["span"] = {"top1_agrees": top1}
            outputs = [summary(r) for r in span]
            report[name].setdefault("span", {}).update({"outputs": outputs, "stop": stop, "units_host_seconds": spent})
        print(f"  speed: the units of these {len(rows)} epochs take {units:.2f} s of host time, "
              f"{units / sample.litert_seconds:.0f}x LiteRT's whole inference ({sample.litert_seconds * 1e3:.1f} ms, "
              "all tensors preserved)")
    npu_samples.write_report(report, args.json)


if __name__ == "__main__":
    main()
