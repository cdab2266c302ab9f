"""ST's real images end to end on the simulated board, every hardware epoch computed by the NPU
model (simulated), against LiteRT on the source model: ST's 2.2 image of the sample (ST's flow on
the test bed's install) runs one inference per random input image, with no NPU_MODEL opt-in;
after each hardware epoch its outputs are compared with LiteRT's tensors in the buffers'
quantisation (bench/npu_layers.py's mapping), and the network's outputs with LiteRT's.

    N6_REAL_STEDGEAI=... .venv/bin/python bench/npu_image.py [--sample nucleo_mnv1] [--seeds 6]
                                                             [--attribute]

--attribute measures which epochs the drift of the last NPU output comes from: for each epoch
with a LiteRT tensor, one more inference in which that epoch's outputs are replaced by LiteRT's
right after it runs; the gain in exact matches of the last output is that epoch's share.
Speed: host CPU seconds of one inference (CPU emulation and NPU model) and of the model's compute
chains, against LiteRT's inference in the same run (the least of three runs each). Everything the
model computes is simulated: no claim of bit-exactness with the silicon. JSON: build/bench/npu_image.json."""
import argparse
import os
import time

import numpy as np
from tabulate import tabulate

import npu_samples
from npu_layers import Sample, Skip, summary
from npu_model import npu as npu_module


class BoardMemory:
    def __init__(self, cpu):
        self.cpu = cpu

    def read(self, address, count):
        return np.frombuffer(self.cpu.read(address, count), dtype=np.uint8).astype(np.int64)


def epoch_rows(sample, model, epoch):
    """The epoch's outputs against LiteRT's tensors ([] when none is comparable)."""
    if epoch not in sample.epochs or not sample.epochs[epoch]["init"]["streng"]:
        return []
    try:
        units = sample.units(epoch)
        outputs = {n: sample.engine(epoch, n) for n, u in units.items() if u.config is None and 0 in u.inputs}
        ops = list({id(o): o for o in sample.source_ops(epoch).values()}.values())
        return sample.compare(epoch, units, outputs, BoardMemory(model.cpu), sample.candidates(ops)[1]) if ops else []
    except Skip:
        return []


def speed(sample, model, repeat=3):
    """(host CPU seconds of one inference, of its compute chains, of LiteRT's): the least of
    `repeat` runs each, nothing else in the loop."""
    chains = [0.0]
    compute = npu_module.chain_writes

    def timed(*args):
        started = time.process_time()
        try:
            return compute(*args)
        finally:
            chains[0] += time.process_time() - started
    d = sample.it.get_input_details()[0]
    data = [sample.it.get_tensor(d["index"]).tobytes()]
    best = (float("inf"), 0.0)
    npu_module.chain_writes = timed
    try:
        for _ in range(repeat):
            chains[0], started = 0.0, time.process_time()
            model.infer(data)
            best = min(best, (time.process_time() - started, chains[0]))
    finally:
        npu_module.chain_writes = compute
    litert = []
    for _ in range(repeat):
        started = time.process_time()
        sample.it.invoke()
        litert.append(time.process_time() - started)
    return best[0], best[1], min(litert)


def infer(sample, model, fix=None):
    """One inference of LiteRT's input image: (per-epoch rows, network outputs). `fix`: the epoch
    whose outputs are replaced by LiteRT's once it has run."""
    rows = []
    wait = model._wait_for_npu

    def wait_and_compare(ep):
        wait(ep)
        for epoch in range(ep.first, ep.last + 1):
            for r in epoch_rows(sample, model, epoch):
                rows.append(dict(r, epoch=epoch))
                if epoch == fix:
                    model.cpu.write(r["address"], (r["expected"] & 0xFF).astype(np.uint8).tobytes())
    d = sample.it.get_input_details()[0]
    model._wait_for_npu = wait_and_compare
    try:
        result = model.infer([sample.it.get_tensor(d["index"]).tobytes()])
    finally:
        model._wait_for_npu = wait
    return rows, result.outputs


def outputs_against_litert(sample, model, outputs):
    """Per network output, against LiteRT's output of its size: top-1 agreement (classifier
    outputs), largest difference, exact rate."""
    out = []
    details = sample.it.get_output_details()
    for buf, data in zip(model.outputs, outputs):
        detail = next(d for d in details if int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize == len(data))
        want = sample.it.get_tensor(detail["index"]).ravel()
        got = np.frombuffer(data, dtype=want.dtype)
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        grid = np.diff(np.unique(want))
        step = float(grid.min()) if grid.size else 0.0          # a dequantised output's LSB, as LiteRT's values show it
        out.append({"output": buf.name, "elements": int(got.size), "lsb_estimate": step,
                    "max_lsb": float(diff.max() / step) if step else None,
                    "top1_agrees": bool(np.argmax(got) == np.argmax(want)),
                    "exact": float(np.mean(diff == 0)), "max_difference": float(diff.max()),
                    "litert_top2_gap": float(np.diff(np.sort(want)[-2:])[0]) if want.size > 1 else 0.0})
    return out


def main():
    npu_samples.need_test_bed()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", action="append", choices=npu_samples.SAMPLES)
    parser.add_argument("--seeds", type=int, default=6, help="random input images (seeds 0..N-1)")
    parser.add_argument("--attribute", action="store_true", help="which epochs the last output's drift comes from")
    parser.add_argument("--json", default=os.path.join(npu_samples.ROOT, "build", "bench", "npu_image.json"))
    args = parser.parse_args()
    report = {}
    for name in args.sample or ["nucleo_mnv1"]:
        model = npu_samples.installed(name, "stop")
        runs = []
        for seed in range(args.seeds):
            sample = Sample(name, seed)
            rows, outputs = infer(sample, model)
            runs.append({"seed": seed, "epochs": [summary(r) for r in rows],
                         "outputs": outputs_against_litert(sample, model, outputs)})
        print(f"{name}: ST's image on the simulated board, every epoch through the NPU model (simulated), "
              f"against LiteRT on model.tflite")
        last = runs[0]["epochs"]
        print(tabulate([[r["epoch"], r["tensor"][:44], r["elements"]] +
                        [f"{100 * x['epochs'][k]['exact']:.1f}% / {x['epochs'][k]['max_lsb']}" for x in runs]
                        for k, r in enumerate(last)],
                       headers=["epoch", "LiteRT tensor", "elements"] + [f"seed {x['seed']}: exact / max LSB"
                                                                         for x in runs]))
        for x in runs:
            for o in x["outputs"]:
                print(f"  seed {x['seed']} {o['output']}: top-1 {'agrees' if o['top1_agrees'] else 'DIFFERS'}, "
                      f"max difference {o['max_difference']:.4g} (~{o['max_lsb'] or 0:.0f} LSB of its quantisation), "
                      f"LiteRT's two best {o['litert_top2_gap']:.4g} apart")
        host, chains, litert = speed(Sample(name, 0), model)
        print(f"  speed: one inference {host:.2f} s of host CPU ({chains:.2f} s in the NPU model's compute chains, "
              f"the rest the emulated CPU), {host / litert:.0f}x LiteRT's {1e3 * litert:.2f} ms (all tensors kept)")
        report[name] = {"runs": runs, "speed": {"host_cpu_seconds": host, "compute_chain_seconds": chains,
                                                "litert_cpu_seconds": litert, "ratio": host / litert}}
        if args.attribute:
            sample = Sample(name, 0)
            base = runs[0]["epochs"][-1]
            shares = []
            for epoch in sorted({r["epoch"] for r in runs[0]["epochs"]} - {base["epoch"]}):
                rows = infer(sample, model, fix=epoch)[0]
                gain = rows[-1]["exact"] - base["exact"]
                shares.append({"epoch": epoch, "tensor": next(r["tensor"] for r in rows if r["epoch"] == epoch),
                               "last_exact": rows[-1]["exact"], "last_max_lsb": rows[-1]["max_lsb"], "gain": gain})
            shares.sort(key=lambda s: -s["gain"])
            print(f"{name}: the last output ({base['tensor'][:40]}, {100 * base['exact']:.1f}% exact, seed 0) with one "
                  "epoch's outputs replaced by LiteRT's")
            print(tabulate([[s["epoch"], s["tensor"][:44], f"{100 * s['last_exact']:.1f}%", s["last_max_lsb"],
                             f"{100 * s['gain']:+.1f}"] for s in shares],
                           headers=["epoch fixed", "its tensor", "last exact", "last max LSB", "gain (points)"]))
            report[name]["attribution"] = shares
    npu_samples.write_report(report, args.json)


if __name__ == "__main__":
    main()
