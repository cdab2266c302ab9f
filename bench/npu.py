"""The NPU model's speed: host seconds per emulated hardware chain and simulated bytes moved per
host second. Goal: an epoch costs the host less than the CPU code around it (ms, not s).

    .venv/bin/python bench/npu.py [network_rel.bin ...]

Measured in one run: (1) the model alone, CHAINS register programs of a raw copy of CHAIN_BYTES
each (STRENG0 → STRENG1: the bytes are moved), through Npu.write as a bus would call it, and
TRANSPOSES of ST's DMA transpose of a 32-bit TRANSPOSE tensor (16-bit items in pairs, a raster
writer with a frame loop: streng.py's addressing), each timed in turn with numpy doing the same
(a slice copy, the transpose) so the ratio holds on a loaded machine; (2) for
each image given (a real ST image with hardware epochs, e.g. ST's nucleo_mnv1), one inference
on the simulated board in control mode: host seconds per hardware epoch, the share of the inference
spent in the model, simulated bytes moved per host second. The same as JSON: build/bench/npu.json."""
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "site_scons"), os.path.join(ROOT, "sim", "board"),
                os.path.join(ROOT, "sim", "programmer"), os.path.join(ROOT, "sim", "npu")]

import numpy as np  # noqa: E402
from tabulate import tabulate  # noqa: E402

from npu_model.npu import Npu  # noqa: E402

CHAINS, CHAIN_BYTES = 2000, 64 << 10
TRANSPOSES, TRANSPOSE = 50, (24, 64, 64)           # C, H, W of facereco's Transpose_8, 32-bit, to W, H, C
STRENG = lambda i: 0x5000 + 0x1000 * i
RAW_SINGLE_8BIT, DIR, EN = 1 << 8 | 1 << 2 | 8 << 16, 1 << 3, 1
RAW_SINGLE_16BIT, RASTER_16BIT = 1 << 8 | 1 << 2 | 8 << 16 | 8 << 20, 8 << 16 | 8 << 20
ADDR, FSIZE, DEPTH, STRD, FOFFSET, FRAME_RPT, LIMIT = 0x8, 0xC, 0x10, 0x14, 0x18, 0x1C, 0x34


def chains_alone(chains, nbytes, reader, writer, host):
    """(host s per chain, simulated bytes per host s, host s of `host(memory)` doing the same with
    numpy, timed in turn with each chain) of `chains` register programs STRENG0 → STRENG1 in
    2 * nbytes of memory: `reader`, `writer` [(register offset, value)], CTRL last, through
    Npu.write as a bus would call it."""
    memory = bytearray(2 * nbytes)

    def write_memory(address, data):
        memory[address:address + len(data)] = data
    npu = Npu(write_memory, mode="stop")
    npu.read_memory = lambda address, n: bytes(memory[address:address + n])
    seconds = baseline = 0.0
    for _ in range(chains):
        started = time.perf_counter()
        for i, program in ((0, reader), (1, writer)):
            for offset, value in program:
                npu.write(STRENG(i) + offset, value)
        npu.write(0x4008 + 4, 1)                               # DSTSTRENG1 ← STRENG0
        npu.write(STRENG(1), writer[-1][1] | EN)
        npu.write(STRENG(0), reader[-1][1] | EN)               # the chain closes and runs
        for i in (0, 1):
            npu.write(STRENG(i), 1 << 1)                       # disable, clear
        middle = time.perf_counter()
        host(memory)
        seconds += middle - started
        baseline += time.perf_counter() - middle
    return seconds / chains, npu.bytes_moved / seconds, baseline / chains


def model_alone():
    """A raw copy of CHAIN_BYTES 8-bit items; numpy: a bytearray slice copy."""
    def host(memory):
        memory[CHAIN_BYTES:] = memory[:CHAIN_BYTES]
    return chains_alone(CHAINS, CHAIN_BYTES, [(ADDR, 0), (FSIZE, CHAIN_BYTES), (0, RAW_SINGLE_8BIT)],
                        [(ADDR, CHAIN_BYTES), (FSIZE, CHAIN_BYTES), (0, RAW_SINGLE_8BIT | DIR)], host)


def transpose_alone():
    """ST's DMA transpose form: STRENG0 reads the C x H x W tensor raw as 16-bit items, STRENG1
    writes each pair at its W x H x C place (raster, a frame per channel); numpy: the transpose."""
    c, h, w = TRANSPOSE
    nbytes = 4 * c * h * w

    def host(memory):
        x = np.frombuffer(memory, dtype="<u4")
        x[c * h * w:] = x[:c * h * w].reshape(c, h, w).transpose(2, 1, 0).ravel()
    return chains_alone(TRANSPOSES, nbytes, [(ADDR, 0), (FSIZE, nbytes // 2), (0, RAW_SINGLE_16BIT)],
                        [(ADDR, nbytes), (FSIZE, h << 16 | w), (DEPTH, 4 * h * c << 16 | 2), (STRD, 4 * c),
                         (FOFFSET, 4), (FRAME_RPT, c), (LIMIT, c), (0, RASTER_16BIT | DIR)], host)


def image(path):
    """(hardware epochs, host s per hardware epoch, model share of the inference, bytes per host s)."""
    from n6board.firmware import InstalledModel
    with open(path, "rb") as f:
        model = InstalledModel(f.read(), npu_model="control")
    npu, spent = model.npu, [0.0]
    start = npu._start

    def timed(chain):
        t = time.perf_counter()
        start(chain)
        spent[0] += time.perf_counter() - t
    npu._start = timed
    t = time.perf_counter()
    model.infer([bytes(b.nbytes) for b in model.inputs])
    total = time.perf_counter() - t
    epochs = len({p.label for p in npu.programs})
    return epochs, total / max(epochs, 1), spent[0] / total, npu.bytes_moved / max(spent[0], 1e-9)


def main(argv):
    rows, report = [], {"images": {}}
    for name, run, chains, nbytes in (("model alone: raw copy", model_alone, CHAINS, CHAIN_BYTES),
                                      ("model alone: transpose", transpose_alone, TRANSPOSES,
                                       4 * TRANSPOSE[0] * TRANSPOSE[1] * TRANSPOSE[2])):
        per_chain, rate, host = run()
        rows.append([name, chains, f"{per_chain * 1e3:.3f}", "100%", f"{rate / 1e9:.3f}", f"{per_chain / host:.0f}"])
        report[name] = {"chains": chains, "bytes_per_chain": nbytes, "host_s_per_chain": per_chain,
                        "simulated_bytes_per_host_s": rate, "numpy_s_per_chain": host,
                        "times_numpy": per_chain / host}
    for path in argv:
        epochs, per_epoch, share, moved = image(path)
        rows.append([path, epochs, f"{per_epoch * 1e3:.3f}", f"{share:.0%}", f"{moved / 1e9:.3f}", ""])
        report["images"][path] = {"hardware_epochs": epochs, "host_s_per_epoch": per_epoch, "model_share": share,
                                  "simulated_bytes_per_host_s": moved}
    print(tabulate(rows, headers=["run", "chains/epochs", "host ms each", "in the model",
                                  "simulated GB moved per host s", "x numpy's time"]))
    out = os.path.join(ROOT, "build", "bench", "npu.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"  BENCH    {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
