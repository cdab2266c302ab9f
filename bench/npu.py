"""The NPU model's speed: host seconds per emulated hardware chain and simulated bytes moved per
host second. Goal: an epoch costs the host less than the CPU code around it (ms, not s).

    .venv/bin/python bench/npu.py [network_rel.bin ...]

Measured in one run: (1) the model alone, CHAINS register programs of a raw copy of CHAIN_BYTES
each (STRENG0 → STRENG1: the bytes are moved), through Npu.write as a bus would call it; (2) for
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

from tabulate import tabulate  # noqa: E402

from npu_model.npu import Npu  # noqa: E402

CHAINS, CHAIN_BYTES = 2000, 64 << 10
STRENG = lambda i: 0x5000 + 0x1000 * i
RAW_SINGLE_8BIT, DIR, EN = 1 << 8 | 1 << 2 | 8 << 16, 1 << 3, 1


def model_alone():
    """(host s per chain, simulated bytes per host s)."""
    memory = bytearray(2 * CHAIN_BYTES)

    def write_memory(address, data):
        memory[address:address + len(data)] = data
    npu = Npu(write_memory, mode="stop")
    npu.read_memory = lambda address, n: bytes(memory[address:address + n])
    started = time.perf_counter()
    for _ in range(CHAINS):
        for i, (address, direction) in enumerate(((0, 0), (CHAIN_BYTES, DIR))):
            npu.write(STRENG(i) + 0x8, address)
            npu.write(STRENG(i) + 0xC, CHAIN_BYTES)
            npu.write(STRENG(i), RAW_SINGLE_8BIT | direction)
        npu.write(0x4008 + 4, 1)                               # DSTSTRENG1 ← STRENG0
        npu.write(STRENG(1), RAW_SINGLE_8BIT | DIR | EN)
        npu.write(STRENG(0), RAW_SINGLE_8BIT | EN)             # the chain closes and runs
        for i in (0, 1):
            npu.write(STRENG(i), 1 << 1)                       # disable, clear
    seconds = time.perf_counter() - started
    return seconds / CHAINS, npu.bytes_moved / seconds


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
    per_chain, rate = model_alone()
    rows = [["model alone", CHAINS, f"{per_chain * 1e3:.3f}", "100%", f"{rate / 1e9:.2f}"]]
    report = {"model_alone": {"chains": CHAINS, "bytes_per_chain": CHAIN_BYTES, "host_s_per_chain": per_chain,
                              "simulated_bytes_per_host_s": rate}, "images": {}}
    for path in argv:
        epochs, per_epoch, share, moved = image(path)
        rows.append([path, epochs, f"{per_epoch * 1e3:.3f}", f"{share:.0%}", f"{moved / 1e9:.2f}"])
        report["images"][path] = {"hardware_epochs": epochs, "host_s_per_epoch": per_epoch, "model_share": share,
                                  "simulated_bytes_per_host_s": moved}
    print(tabulate(rows, headers=["run", "chains/epochs", "host ms each", "in the model",
                                  "simulated GB moved per host s"]))
    out = os.path.join(ROOT, "build", "bench", "npu.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"  BENCH    {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
