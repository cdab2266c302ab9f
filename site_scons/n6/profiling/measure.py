"""The measurement on a board: ST's profiler's passes (a warm-up run, then one PER_LAYER run
per counter option set and sample) through the host protocol client."""
import json
import os
import random
from collections.abc import Callable, Iterator, Sequence

from ..aivalidation.client import Client, RunResult
from ..aivalidation.messages import PER_LAYER, PERF_ONLY, Operator
from ..atomic import write_text
from . import PREVIOUS
from .measurement import Measurement
from .messages import (EPOCH_LEN, NPU_CACHE, ST_PASSES, STRG_ACTIVE, STRG_HENV, STRG_I_ACTIVE, STRG_O_ACTIVE,
                       parse_config, parse_run, run_opt)

NPU_OPTIONS = EPOCH_LEN | STRG_ACTIVE | STRG_HENV | NPU_CACHE | STRG_I_ACTIVE | STRG_O_ACTIVE
NPU_LOGS = ("s:node:npu_cycles:", "s:node:streng_", "s:node:npu_cache:")


def board_messages(result: RunResult) -> Iterator[str | Operator]:
    """A run result of the host client → the board's messages in arrival order (logs with their
    `s:` prefix, then the operator they preceded)."""
    for op in [*result.epochs, result.model_op]:
        yield from ("s:" + text for text in op.logs)
        yield op


def measure(client: Client, model: str, samples: int = 1, passes: Sequence[int] = ST_PASSES, seed: int = 0,
            simulated: bool = False, board: str = "",
            progress: Callable[[int, int], object] | None = None) -> Measurement:
    """client: a connected aiValidation client. → Measurement of `model` (its c-name on the board)."""
    device = client.device or client.connect()
    clocks = parse_config(device.config, client.name)
    info = client.model(model)
    rng = random.Random(seed)
    inputs = [rng.randbytes(t.nbytes) for t in info.inputs]
    client.run(info.name, inputs, mode=PERF_ONLY)          # warm-up, as ST's profiler does
    runs: list[tuple[int, list[str | Operator]]] = []
    npu_counts: bool | None = None
    for n, counters in enumerate(passes):
        if npu_counts is False and not counters & ~NPU_OPTIONS:
            continue            # the board sent no NPU counter when asked: do not ask again (simulated board)
        for sample in range(samples):
            result = client.run(info.name, inputs, mode=PER_LAYER | PERF_ONLY, counter_option=counters,
                                first=sample == 0)
            msgs = list(board_messages(result))
            runs.append((run_opt(counters, sample), msgs))
            if counters & NPU_OPTIONS:
                npu_counts = bool(npu_counts) or any(isinstance(m, str) and m.startswith(NPU_LOGS) for m in msgs)
            if progress:
                progress(n * samples + sample + 1, len(passes) * samples)
    return parse_run(runs, info.name, clocks, client.name, simulated=simulated, board=board)


def save_measurement(measurement: Measurement, path: str) -> None:
    """Store a new measurement; the profile it replaces becomes the baseline of the next diff."""
    folder = os.path.dirname(path)
    current = os.path.join(folder, "profile.json")
    if os.path.exists(current):
        os.replace(current, os.path.join(folder, PREVIOUS))
    write_text(path, json.dumps(measurement.to_dict(), indent=1) + "\n")
