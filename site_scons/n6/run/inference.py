"""`scons run`: inputs (a .npy/.npz file or seeded random data), N inferences on the board,
outputs saved as .npy, a summary and a timing table, JSON next to them."""
import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from typing import Self
from dataclasses import dataclass

import numpy as np
from tabulate import tabulate

from ..aivalidation.messages import (DTYPES, IO_ONLY, PER_LAYER, PER_LAYER_WITH_DATA, PERF_ONLY, ModelInfo,
                                     TensorDesc)
from ..aivalidation.client import Client, Device, RunResult
from ..build_layout import RUN_REPORT
from ..errors import N6Error
from .arrays import read_arrays
from ..jsonfile import JsonObject, read_json


INPUTS_FIX = "give INPUTS= a .npy (or a .npz with one array per input) saved with numpy.save"


def read_inputs(path: str) -> list[tuple[str | None, np.ndarray]]:
    """(name, array) of each array of an INPUTS= file (name None in a .npy): n6.run.arrays."""
    return read_arrays(path, "inputs", INPUTS_FIX)


def make_inputs(model: ModelInfo, inputs_path: str | None = None, seed: int = 0,
                runs: int | None = 1) -> list[list[bytes]]:
    """One list of raw input buffers per run; `runs` None: one run per sample of the inputs file
    (one without it), else the file's samples in turn."""
    if inputs_path:
        named = read_inputs(inputs_path)
        by_name = dict(named)
        wanted = [d.name for d in model.inputs]
        # a .npz whose arrays are named after the inputs gives each input its own; else by position
        arrays = [by_name[n] for n in wanted] if set(by_name) == set(wanted) else [a for _, a in named]
        if len(arrays) != len(model.inputs):
            raise N6Error(inputs_path, f"{len(arrays)} arrays for {len(model.inputs)} model inputs",
                          "give one array per input (.npz for several)")
        per_input: list[np.ndarray] = []
        for arr, desc in zip(arrays, model.inputs):
            arr = np.asarray(arr)
            if arr.dtype != np.dtype(desc.dtype) or arr.size % desc.size:
                raise N6Error(inputs_path, f"input '{desc.name}' needs {desc.dtype} x {desc.size} per sample, "
                              f"got {arr.dtype} x {arr.size}", "save the inputs in the model's type and layout")
            per_input.append(arr.reshape(-1, desc.size))
        n = per_input[0].shape[0]
        return [[per_input[i][r % n].tobytes() for i in range(len(model.inputs))] for r in range(runs or n)]
    runs = runs or 1
    rng = np.random.default_rng(seed)
    out: list[list[bytes]] = []
    for _ in range(runs):
        bufs: list[bytes] = []
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


def run_param(per_layer: str = "no", perf: bool = False) -> int:
    """The run request's mode bits: RUN_PER_LAYER= yes/data, RUN_MODE=perf (ST's perf-only run)."""
    mode = PERF_ONLY if perf else IO_ONLY
    if per_layer in ("yes", "data"):
        mode |= PER_LAYER
    if per_layer == "data" and not perf:
        mode |= PER_LAYER_WITH_DATA
    return mode


def run_model(client: Client, name: str, inputs: Sequence[Sequence[bytes]], mode: int = IO_ONLY,
              counter_option: int = 0) -> tuple[ModelInfo, list[RunResult]]:
    model = client.model(name)
    results = [client.run(name, bufs, mode, counter_option, first=i == 0) for i, bufs in enumerate(inputs)]
    return model, results


def outputs_arrays(model: ModelInfo, results: Sequence[RunResult]) -> list[np.ndarray]:
    """Per output: an array in the board's type whose first axis holds the runs. The board's shape
    starts with the batch (as a real network.c declares it), so runs are joined along that axis,
    the way ST's client joins the samples of a batch."""
    out: list[np.ndarray] = []
    for j, desc in enumerate(model.outputs):
        dt = np.dtype(desc.dtype if desc.dtype in DTYPES else "uint8")
        out.append(np.concatenate([np.frombuffer(r.outputs[j][1], dt).reshape(desc.shape) for r in results]))
    return out


def cycle_split(counters: Sequence[int]) -> tuple[int, int] | tuple[None, None]:
    """(CPU cycles, NPU cycles) of the run reply's final counters [pre, core, post, total, ...]
    (deploy-protocol.md §4.7-5.1): per-layer runs give the split (core = while the NPU runs); an
    IO-only run gives only the total, its split unknown (None, None), on a simulated board too
    (its total holds the NPU model's chains)."""
    c = list(counters) + [0] * 5
    if c[0] or c[1] or c[2]:
        return c[0] + c[2], c[1]
    return None, None


def report(model: ModelInfo, device: Device, results: Sequence[RunResult], simulated: bool) -> tuple[str, JsonObject]:
    """(text, JSON-able dict) of the summary and the timing table."""
    mcu = int(device.config.get("mcu_freq", device.sclock or 1))
    per: list[JsonObject]
    rows, per = [], []
    for i, r in enumerate(results):
        c = r.model_op.counter_values + [0] * 5
        ms = c[3] / mcu * 1000 if c[3] else None
        cpu, npu = cycle_split(c)
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
                       cpu_share=cpu / (cpu + npu) if split and cpu + npu else None)   # type: ignore[operator]  # split: both set
        clock = f"{mcu / 1e6:g} MHz"
        rows.append([f"ms / inference (simulated: the CPU 1 cycle per instruction at {clock}, the NPU model's "
                     "chains by its estimate)" if simulated else
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
    inputs: list[list[bytes]]   # per run, the raw buffer of each input
    mode: str                 # "io" or "perf"
    simulated: bool

    @classmethod
    def load(cls, path: str) -> Self:
        summary = read_json(path, "run report")
        model = ModelInfo(summary["model"], [TensorDesc.from_dict(d) for d in summary["inputs"]],
                          [TensorDesc.from_dict(d) for d in summary["outputs"]])
        return cls(model, [[bytes.fromhex(h) for h in bufs] for bufs in summary["inputs_data"]],
                   summary.get("mode", "io"), summary["simulated"])


def save(out_dir: str, model: ModelInfo, results: Sequence[RunResult], summary: JsonObject) -> None:
    """run.json, the outputs as output_<name>.npy (none from a perf-only run: the board sent no data)
    and the epoch tensors a per-layer-with-data run brought back as epochs/<epoch>_<name>.npy (the
    runs on the first axis). They are written aside first, then replace what an earlier run left
    (its outputs, epochs/ and run.json, run.json last): a run that fails while saving leaves the
    earlier report whole, and nothing of its own."""
    stage = os.path.join(out_dir, SAVING)
    shutil.rmtree(stage, ignore_errors=True)      # left by a run that was killed while saving
    try:
        _write(stage, model, results, summary)
        _replace(out_dir, stage)
    except OSError as e:
        raise N6Error(out_dir, f"cannot save the run's outputs: {e.strerror}",
                      "free disk space or make the build folder writable, then run again") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


SAVING = ".saving"


def _replace(out_dir: str, stage: str) -> None:
    for old in os.listdir(out_dir):
        path = os.path.join(out_dir, old)
        if old.startswith("output_") and old.endswith(".npy"):
            os.unlink(path)
        elif old == "epochs":
            shutil.rmtree(path)
    for name in sorted(os.listdir(stage), key=lambda n: n == RUN_REPORT):
        os.replace(os.path.join(stage, name), os.path.join(out_dir, name))


def _write(out_dir: str, model: ModelInfo, results: Sequence[RunResult], summary: JsonObject) -> None:
    os.makedirs(out_dir)
    epochs_dir = os.path.join(out_dir, "epochs")
    if summary.get("mode") != "perf":
        for desc, arr in zip(model.outputs, outputs_arrays(model, results)):
            with open(output_path(out_dir, desc.name), "wb") as f:
                np.save(f, arr)
    saved = []
    for k, op in enumerate(results[0].epochs):
        for t, (desc, data) in enumerate(op.tensors):
            if data is None or desc.dtype not in DTYPES:
                continue
            arr = np.concatenate([np.frombuffer(r.epochs[k].tensors[t][1], desc.dtype).reshape(desc.shape)  # type: ignore[arg-type]  # data in every run of one mode
                                  for r in results])
            path = output_path(epochs_dir, f"{op.name}_{desc.name}").replace("output_", "", 1)
            os.makedirs(epochs_dir, exist_ok=True)
            with open(path, "wb") as f:
                np.save(f, arr)
            saved.append({"epoch": op.name, "tensor": desc.name, "file": os.path.relpath(path, out_dir),
                          "shape": list(arr.shape), "dtype": desc.dtype})
    if saved:
        summary["epoch_tensors"] = saved
    summary["saved"] = {os.path.relpath(os.path.join(d, n), out_dir): _digest(os.path.join(d, n))
                        for d, _, names in os.walk(out_dir) for n in sorted(names)}
    with open(os.path.join(out_dir, RUN_REPORT), "w") as f:
        f.write(json.dumps(summary, indent=1) + "\n")


def saved_intact(out_dir: str) -> bool:
    """Whether every file the last run saved beside its run.json (outputs, epoch tensors) still
    holds what it wrote (the digests run.json lists): one changed or removed outside the build
    is not that run's result, and the run step runs again instead of calling it up to date.
    True without a run.json (the run step runs anyway)."""
    try:
        with open(os.path.join(out_dir, RUN_REPORT), encoding="utf-8") as f:
            saved = json.load(f)["saved"]
        return all(_digest(os.path.join(out_dir, rel)) == digest for rel, digest in saved.items())
    except FileNotFoundError:
        return True
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def output_path(out_dir: str, name: str) -> str:
    """Where save() puts the output tensor `name`: output_<name>.npy, the name made file-safe."""
    return os.path.join(out_dir, "output_" + ("".join(c if c.isalnum() or c in "-_" else "_" for c in name) or "out")
                        + ".npy")
