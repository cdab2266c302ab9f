"""The options of the run, validate and profile steps as typed values: built once from the
build's variables, they make each step's signature (their repr is what SCons signs, the varlist
idiom) and are what the step's code receives."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:                 # the flash step imports far more than a variable's declaration needs
    from ..flash.boards import ExporterProbe
    from ..flash.step import FlashOptions

PER_LAYER_MODES = ("no", "yes", "data")   # RUN_PER_LAYER=: none, the epochs' counters, and their tensors
RUN_MODES = ("io", "perf")               # RUN_MODE=: inputs sent and outputs saved, or ST's timing-only run

# validate's bounds (docs/validate.md): VALIDATE_TOLERANCE's default where the arithmetic is exact;
# for outputs the simulated board's NPU model computes from a real ST Edge AI Core's network.c
# (ST's fixed-point arithmetic as modelled, against the source framework's), the largest error
# (1.33 times the largest drift of 60 seeds, bench/validate_seeds.py: nucleo_mnv1 2-48 LSB,
# blazeface 7-27 LSB) and, on its own, how far below the reference's best a class the board ranks
# first may be (a near tie no judge at this precision settles: blazeface's best anchors lie 0-0.18
# apart in LiteRT itself; the ties 20 seeds needed: at most 11 LSB).
TOLERANCE_LSB = 2.0
NPU_MAX_LSB = 64
NPU_TIE_LSB = 48


def rule_words(tolerance: float, given: bool, tie: float) -> str:
    """A validate rule in a few words, as the report and the whole-project summary print it: its
    bound (VALIDATE_TOLERANCE's when given) and the top-1 it asks for."""
    top1 = f"top-1 within {tie:g} LSB" if tie else "same top-1"
    return f"<= {tolerance:g} LSB{' (VALIDATE_TOLERANCE)' if given else ''}, {top1}"


@dataclass(frozen=True)
class SessionOptions:
    """How a step reaches the board: its port, or the simulated board booting from `state`."""
    board_file: str          # the board file (absolute)
    port: str                # PORT= or "" (the board file's, else the simulated board)
    state: str               # the simulated board's state folder
    release: str             # ST Edge AI Core release of the install ("2.2")
    install_root: str        # the install (ST's validation firmware of a real board is there)
    copy_mode: bool          # RELOC_COPY_MODE: which firmware variant loads the image
    backend: str             # the flash step's programmer backend (starts a real board's firmware)
    sim_firmware: str = ""   # SIM_FIRMWARE=: "" the simulated board's own firmware, else ST's on the DK twin
    exporter: ExporterProbe | None = None   # the probe is on a labgrid exporter's host (at run time)


@dataclass(frozen=True)
class RunOptions:
    session: SessionOptions
    flash: FlashOptions      # n6.flash.step.FlashOptions of the model set the run puts on the board first
    c_name: str              # the model's c-name on the board
    runs: int | None         # RUNS=; None: one per sample of `inputs` (1 without inputs)
    seed: int
    inputs: str              # INPUTS= (absolute) or "": random data from `seed`
    per_layer: str           # "no", "yes" (counters), "data" (and the epochs' tensors)
    perf: bool               # RUN_MODE=perf: ST's perf-only run


@dataclass(frozen=True)
class ProfileOptions:
    session: SessionOptions
    flash: FlashOptions      # as RunOptions.flash
    c_name: str
    samples: int             # PROFILE_SAMPLES=: runs per counter set


@dataclass(frozen=True)
class ValidateOptions:
    session: SessionOptions  # to run the model's test set on the board
    flash: FlashOptions      # as RunOptions.flash (the test set's run)
    tolerance: float | None  # VALIDATE_TOLERANCE= in LSB; None: the rule's own (TOLERANCE_LSB, NPU_MAX_LSB)
    source: str              # the source model (absolute, .tflite/.onnx), or "": the host build of `model_dir`
    model_dir: str           # the generated C of the model
    test_data: str           # the model folder's test_data.npz, or ""
    reference_data: str = ""  # model.json "reference_data" (absolute): inputs and expected outputs, or ""
