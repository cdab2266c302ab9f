"""`scons run`: inputs (a .npy/.npz file or seeded random data), N inferences on the board,
outputs saved as .npy, a summary and a timing table, JSON next to them."""
import json
import os
import shutil
from dataclasses import dataclass

import numpy as np
from tabulate import tabulate

from ..aivalidation.messages import (DTYPES, IO_ONLY, PER_LAYER, PER_LAYER_WITH_DATA, PERF_ONLY, ModelInfo,
                                     TensorDesc)
from ..atomic import atomic_open, write_text
from ..errors import N6Error
from ..jsonfile import read_json


def make_inputs(model, inputs_path=None, seed=0, runs=1):
    """One list of raw input buffers per run."""
    if inputs_path:
        try:
            loaded = np.load(inputs_path)
        except (OSError, ValueError) as e:
            raise N6Error(inputs_path, f"cannot read inputs: {e}", "give a .npy or .npz file (INPUTS=)") from None
        arrays = [loaded[k] for k in loaded.files] if hasattr(loaded, "files") else [loaded]
        if len(arrays) != len(model.inputs):
            raise N6Error(inputs_path, f"{len(arrays)} arrays for {len(model.inputs)} model inputs",
                          "give one array per input (.npz for several)")
        per_input = []
        for arr, desc in zip(arrays, model.inputs):
            arr = np.asarray(arr)
            if arr.dtype != np.dtype(desc.dtype) or arr.size % desc.size:
                raise N6Error(inputs_path, f"input '{desc.name}' needs {desc.dtype} x {desc.size} per sample, "
                              f"got {arr.dtype} x {arr.size}", "save the inputs in the model's type and layout")
            per_input.append(arr.reshape(-1, desc.size))
        n = per_input[0].shape[0]
        return [[per_input[i][r % n].tobytes() for i in range(len(model.inputs))] for r in range(runs)]
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(runs):
        bufs = []
        for desc in model.inputs:
            dt = np.dtype(desc.dtype)
            if dt.kind == "f":
                bufs.append(rng.standard_normal(desc.size).astype(dt).tobytes())
            elif desc.scale:         # a quantised input: standard-normal data, quantised like the model's
                info = np.iinfo(dt)
                q = np.round(rng.standard_normal(desc.size) / desc.scale) + desc.zero_point
                bufs.append(np.clip(q, info.min, info.max).astype(dt).tobytes())
            else:
                info = np.iinfo(dt)
                bufs.append(rng.integers(info.min, info.max, desc.size, dtype=dt, endpoint=True).tobytes())
        out.append(bufs)
    return out


def run_param(per_layer="no", perf=False):
    """The run request's mode bits: RUN_PER_LAYER= yes/data, RUN_MODE=perf (ST's perf-only run)."""
    mode = PERF_ONLY if perf else IO_ONLY
    if per_layer in ("yes", "data"):
        mode |= PER_LAYER
    if per_layer == "data" and not perf:
        mode |= PER_LAYER_WITH_DATA
    return mode


def run_model(client, name, inputs, mode=IO_ONLY, counter_option=0):
    model = client.model(name)
    results = [client.run(name, bufs, mode, counter_option, first=i == 0) for i, bufs in enumerate(inputs)]
    return model, results


def outputs_arrays(model, results):
    """Per output: an array in the board's type whose first axis holds the runs. The board's shape
    starts with the batch (as a real network.c declares it), so runs are joined along that axis,
    the way ST's client joins the samples of a batch."""
    out = []
    for j, desc in enumerate(model.outputs):
        dt = np.dtype(desc.dtype if desc.dtype in DTYPES else "uint8")
        out.append(np.concatenate([np.frombuffer(r.outputs[j][1], dt).reshape(desc.shape) for r in results]))
    return out


def cycle_split(counters, simulated):
    """(CPU cycles, NPU cycles) of the run reply's final counters [pre, core, post, total, ...]
    (deploy-protocol.md §4.7-5.1): per-layer runs give the split (core = while the NPU runs); an
    IO-only run gives only the total: all CPU on the simulated board (it has no NPU), unknown on a
    real one (None, None)."""
    c = list(counters) + [0] * 5
    if c[0] or c[1] or c[2]:
        return c[0] + c[2], c[1]
    return (c[3], 0) if simulated else (None, None)


def report(model, device, results, simulated):
    """(text, JSON-able dict) of the summary and the timing table."""
    mcu = int(device.config.get("mcu_freq", device.sclock or 1))
    rows, per = [], []
    for i, r in enumerate(results):
        c = r.model_op.counter_values + [0] * 5
        ms = c[3] / mcu * 1000 if c[3] else None
        cpu, npu = cycle_split(c, simulated)
        per.append({"run": i, "cycles": c[3], "ms": ms, "cpu_cycles": cpu, "npu_cycles": npu,
                    "host_s": r.host_seconds})
    measured = [p for p in per if p["ms"]]
    summary = {"model": model.name, "simulated": simulated, "device": f"0x{device.devid:x}",
               "runtime": model.runtime_desc, "runtime_version": ".".join(map(str, model.runtime_version)),
               "activations": model.activations_size, "inputs": [d.as_dict() for d in model.inputs],
               "outputs": [d.as_dict() for d in model.outputs], "runs": per}
    if measured:
        mean = sum(p["ms"] for p in measured) / len(measured)
        split = all(p["cpu_cycles"] is not None for p in measured)
        cpu = sum(p["cpu_cycles"] for p in measured) // len(measured) if split else None
        npu = sum(p["npu_cycles"] for p in measured) // len(measured) if split else None
        summary.update(ms_per_inference=mean, inferences_per_s=1000 / mean if mean else None,
                       cycles_per_inference=sum(p["cycles"] for p in measured) // len(measured),
                       cpu_share=cpu / (cpu + npu) if split and cpu + npu else None)
        clock = f"{mcu / 1e6:g} MHz"
        rows.append([f"ms / inference (simulated: 1 cycle per instruction at {clock})" if simulated else
                     f"ms / inference (MCU cycles at {clock})", f"{mean:.3f}"])
        rows.append(["inferences / s", f"{1000 / mean:.2f}" if mean else "-"])
        rows.append(["CPU / NPU cycles per inference", f"{cpu:,} / {npu:,}" if split else
                     f"{summary['cycles_per_inference']:,} in all (the split needs RUN_PER_LAYER=1)"])
    else:
        rows.append(["ms / inference", "not reported by the firmware"])
    host = sum(p["host_s"] for p in per) / len(per)
    rows.append(["host round trip / inference", f"{host * 1000:.1f} ms"])
    lines = [f"  model {model.name} on {'simulated ' if simulated else ''}STM32N6 (dev 0x{device.devid:x}), "
             f"runtime {model.runtime_desc}, activations {model.activations_size} B"]
    for kind, descs in (("input", model.inputs), ("output", model.outputs)):
        for d in descs:
            lines.append(f"  {kind:<6} {d.name}: {d.dtype} {list(d.shape)} scale {d.scale:.6g} zero-point "
                         f"{d.zero_point}")
    lines.append(tabulate(rows, headers=[f"{len(results)} run(s)", ""], tablefmt="simple"))
    if results[0].epochs:     # per-layer run: the first run's epochs
        epochs = [{"name": e.name, "kind": e.kind, "cycles": sum(e.counters), "ms": sum(e.counters) / mcu * 1000}
                  for e in results[0].epochs]
        summary["epochs"] = epochs
        lines.append(tabulate([[e["name"], e["kind"], f"{e['cycles']:,}", f"{e['ms']:.3f}"] for e in epochs],
                              headers=["epoch", "kind", "cycles", "ms"], tablefmt="simple"))
    return "\n".join(lines), summary


@dataclass
class RunRecord:
    """What a run's run.json says, as the validate step reads it back (report() wrote it)."""
    model: ModelInfo          # name, inputs and outputs as the board described them
    inputs: list              # per run, the raw buffer of each input
    mode: str                 # "io" or "perf"
    simulated: bool

    @classmethod
    def load(cls, path):
        summary = read_json(path, "run report")
        model = ModelInfo(summary["model"], [TensorDesc.from_dict(d) for d in summary["inputs"]],
                          [TensorDesc.from_dict(d) for d in summary["outputs"]])
        return cls(model, [[bytes.fromhex(h) for h in bufs] for bufs in summary["inputs_data"]],
                   summary.get("mode", "io"), summary["simulated"])


def save(out_dir, model, results, summary):
    """run.json, the outputs as output_<name>.npy (none from a perf-only run: the board sent no data)
    and the epoch tensors a per-layer-with-data run brought back as epochs/<epoch>_<name>.npy (the
    runs on the first axis). What an earlier run left there is removed first."""
    os.makedirs(out_dir, exist_ok=True)
    for old in os.listdir(out_dir):
        if old.startswith("output_") and old.endswith(".npy"):
            os.unlink(os.path.join(out_dir, old))
    epochs_dir = os.path.join(out_dir, "epochs")
    if os.path.isdir(epochs_dir):
        shutil.rmtree(epochs_dir)
    if summary.get("mode") != "perf":
        for desc, arr in zip(model.outputs, outputs_arrays(model, results)):
            with atomic_open(output_path(out_dir, desc.name)) as f:
                np.save(f, arr)
    saved = []
    for k, op in enumerate(results[0].epochs):
        for t, (desc, data) in enumerate(op.tensors):
            if data is None or desc.dtype not in DTYPES:
                continue
            arr = np.concatenate([np.frombuffer(r.epochs[k].tensors[t][1], desc.dtype).reshape(desc.shape)
                                  for r in results])
            path = output_path(epochs_dir, f"{op.name}_{desc.name}").replace("output_", "", 1)
            os.makedirs(epochs_dir, exist_ok=True)
            with atomic_open(path) as f:
                np.save(f, arr)
            saved.append({"epoch": op.name, "tensor": desc.name, "file": os.path.relpath(path, out_dir),
                          "shape": list(arr.shape), "dtype": desc.dtype})
    if saved:
        summary["epoch_tensors"] = saved
    write_text(os.path.join(out_dir, "run.json"), json.dumps(summary, indent=1) + "\n")


def output_path(out_dir, name):
    """Where save() puts the output tensor `name`: output_<name>.npy, the name made file-safe."""
    return os.path.join(out_dir, "output_" + ("".join(c if c.isalnum() or c in "-_" else "_" for c in name) or "out")
                        + ".npy")
