"""The measurement on a board: ST's profiler's passes (a warm-up run, then one PER_LAYER run
per counter option set and sample) through the host protocol client."""
import random

from .messages import IO_ONLY, PER_LAYER, PERF, ST_PASSES, parse_config, parse_run, run_opt


def board_messages(result):
    """A run result of the host client → the board's messages in arrival order (logs with their
    `s:` prefix, then the operator they preceded)."""
    for op in [*result.epochs, result.model_op]:
        yield from ("s:" + text for text in op.logs)
        yield op


def measure(client, model, samples=1, passes=ST_PASSES, seed=0, simulated=False, board="", progress=None):
    """client: a connected aiValidation client. → Measurement of `model` (its c-name on the board)."""
    device = client.device or client.connect()
    clocks = parse_config(device.config, client.name)
    info = client.model(model)
    rng = random.Random(seed)
    inputs = [rng.randbytes(t.nbytes) for t in info.inputs]
    client.run(info.name, inputs, mode=IO_ONLY | PERF)          # warm-up, as ST's profiler does
    runs = []
    for n, counters in enumerate(passes):
        for sample in range(samples):
            result = client.run(info.name, inputs, mode=PER_LAYER | PERF, counter_option=counters,
                                first=sample == 0)
            runs.append((run_opt(counters, sample), list(board_messages(result))))
            if progress:
                progress(n * samples + sample + 1, len(passes) * samples)
    return parse_run(runs, info.name, clocks, client.name, simulated=simulated, board=board)
