"""A small prebuilt network whose first epoch runs two hardware chains on the simulated board's NPU
model, for the tests of what the board counts and reports of them. The simulated tool's own
epochs run their operators in software (their blobs hold a label and the end interrupt only), so
this fixture takes the simulated tool's output of digits_mlp built with the epoch controller and
replaces epoch 1's blob by one, written with the project's blob writer (npu_model.ecblob), that
also programs and starts

- chain A: STRENG0 reads a raster frame, 10 lines of 25 pixels of 4 bytes (100 bytes a line, 128
  bytes from line to line), ARITH0 computes 3x - 5 of each byte into 16 bits, STRENG6 writes the
  1,000 results as 2,000 bytes in a row;
- chain B: STRENG7 reads 3 such lines, STRENG3 writes their 300 bytes in a row;

then awaits their ends. Like ST's blobs (ec-workspace), each stream engine's EVENT enables its
illegal-configuration interrupt alone, not its frame end: ST's runtime takes any interrupt of a
blob epoch but its controller's as an error (ll_aton_runtime.c).

Both read and write a scratch area of npuRAM4 (AXISRAM4), a memory the network does not use: its
software operators and outputs are untouched. The registers are set by ATON.h's field names
(npu_model.registers), the chains' shapes are the numbers below."""
import os
import re
import shutil

from npu_model import ecblob
from npu_model.registers import aton_map

from aton_fields import register_value
from conftest import MODELS

SCRATCH = 0x3427_0000                   # AXISRAM4 (npuRAM4): no pool of digits_mlp
EPOCH = 1                               # the epoch-controller epoch of digits_mlp (its two dense layers)
EVENT = {"EN_ILLCFG": 1}                # a stream engine's EVENT in ST's blobs: no frame-end interrupt


def _raster(engine, address, lines, writes=False):
    """A stream engine reading (or writing) `lines` lines of 25 pixels of 4 one-byte items, 128
    bytes apart, one frame."""
    return engine, {"ADDR": {"REG": address}, "FSIZE": {"WIDTH": 25, "HEIGHT": lines},
                    "DEPTH": {"SIZE": 4, "OFFSET": 4}, "STRD": {"LOFF": 128}, "EVENT": EVENT,
                    "CTRL": {"SINGLE": 1, "DIR": int(writes), "SIZE0": 8}}


def _raw(engine, address, items, item_bytes, writes=True):
    """A stream engine writing (or reading) `items` items of `item_bytes` bytes back to back."""
    return engine, {"ADDR": {"REG": address}, "FSIZE": {"WIDTH": items}, "EVENT": EVENT,
                    "CTRL": {"SINGLE": 1, "RAW": 1, "DIR": int(writes), "SIZE0": 8,
                             "SIZE1": 8 if item_bytes > 1 else 0}}


ARITH = {"CTRL": {"OP": 0, "OBYTES": 2, "SAT": 1, "ROUND": 1, "ORNDMODE": 1},
         "COEFFAC": {"A": 3, "C": -5 & 0xFFFF}, "SHIFT": {"AX": 0, "BY": 0, "C": 0, "RES": 0},
         "INSHIFTER": {"FBYTESX": 1, "FSHIFTX": 16, "FBYTESY": 1, "FSHIFTY": 16}}
# (unit, instance, {register: {field: value}}) of each chain, in the order the blob programs them,
# and the switch routes (destination register, source unit instance)
CHAIN_A = [("STRENG", *_raster(0, SCRATCH, 10)), ("ARITH", 0, ARITH), ("STRENG", *_raw(6, SCRATCH + 0x1000, 1000, 2))]
ROUTES_A = [("DSTARITH00", "STRENG0"), ("DSTSTRENG6", "ARITH0")]
CHAIN_B = [("STRENG", *_raster(7, SCRATCH + 0x2000, 3)), ("STRENG", *_raw(3, SCRATCH + 0x3000, 300, 1))]
ROUTES_B = [("DSTSTRENG3", "STRENG7")]


def _at(unit, i, register):
    """A blob command's (unit, register) of unit instance i's register: its 4 KB block, its word in it."""
    offset = aton_map().address(unit, i, register)
    return offset >> 12, (offset & 0xFFF) >> 2


def _write(unit, i, register, value):
    return ecblob.Command(ecblob.WRITE, *_at(unit, i, register), values=(value,))


def chain_program(units, routes):
    """The register writes of one chain: each unit configured, the switch routes, each unit
    enabled from the last to the first (the chain starts when its reader is enabled), then, as
    ST's blobs do, a poll until each stream engine's CTRL.RUNNING is 0."""
    program = [_write(unit, i, register, register_value(unit, register, fields))
               for unit, i, regs in units for register, fields in regs.items()]
    for dest, source in routes:
        fields = {"EN0": 1, "LINK0": aton_map().links[source]}
        program.append(_write("STRSWITCH", 0, dest, register_value("STRSWITCH", dest, fields)))
    for unit, i, regs in reversed(units):
        program.append(_write(unit, i, "CTRL", register_value(unit, "CTRL", dict(regs["CTRL"], EN=1))))
    for unit, i, _ in units:
        if unit == "STRENG":
            running = aton_map().units[unit].registers["CTRL"].field("RUNNING")
            program.append(ecblob.Command(ecblob.POLL, *_at(unit, i, "CTRL"), (0, ecblob.POLL_TIMEOUT), running.lsb,
                                          running.lsb))
    return program


def blob_words():
    """Epoch 1's blob: its label, both chains, the end interrupt (optimised as ST's tool does)."""
    program = [ecblob.Command(ecblob.LABEL, number=EPOCH), *chain_program(CHAIN_A, ROUTES_A),
               *chain_program(CHAIN_B, ROUTES_B), ecblob.Command(ecblob.IRQ)]
    return ecblob.blob_u64(ecblob.optimise(program))


def make_prebuilt(folder):
    """The prebuilt folder `folder` (created): digits_mlp generated with the epoch controller by
    the simulated tool, epoch 1's blob replaced by blob_words()."""
    from stedgeai_sim.cli import run as stedgeai_cli
    work = f"{folder}_gen"
    os.makedirs(work)
    src = os.path.join(MODELS, "digits_mlp")
    shutil.copy(os.path.join(src, "digits_mlp.mpool"), work)
    with open(os.path.join(src, "neural_art.json")) as f:
        profile = f.read().replace("--all-buffers-info", "--all-buffers-info --enable-epoch-controller")
    with open(os.path.join(work, "neural_art.json"), "w") as f:
        f.write(profile)
    out = os.path.join(work, "st_ai_output")
    assert stedgeai_cli(["generate", "-m", os.path.join(src, "model.onnx"), "--target", "stm32n6",
                         "--st-neural-art", f"default@{work}/neural_art.json", "-o", out, "-w", f"{work}/ws"]) == 0
    os.makedirs(folder)
    for name in os.listdir(out):
        if name.endswith((".c", ".h", ".raw", "_c_info.json")):
            shutil.copy(os.path.join(out, name), folder)
    shutil.rmtree(work)
    path = os.path.join(folder, "network_ecblobs.h")
    with open(path) as f:
        text = f.read()
    words = blob_words()
    array = f"static const uint64_t _ec_blob_{EPOCH}[{len(words)}] = {{\n" + "".join(
        "  " + ", ".join(f"0x{w:016x}ULL" for w in words[k:k + 4]) + ",\n" for k in range(0, len(words), 4)) + "};"
    text, n = re.subn(rf"static const uint64_t _ec_blob_{EPOCH}\[\d+\] = \{{[^}}]*\}};", array, text)
    assert n == 1, "the simulated tool's blob of epoch 1 was not found"
    with open(path, "w") as f:
        f.write(text)
    return folder
