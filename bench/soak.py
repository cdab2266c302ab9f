"""Soak: hundreds of mixed invokes per model on the simulated board (its own firmware) and on the
DK twin (ST's validation firmware), each session repeated on a fresh board: no fault, and the
outputs and the firmware's cycle counts identical across the repeats (emulated time depends only
on the firmware and the bytes received).

    .venv/bin/python bench/soak.py [--models kws_mlp,big_mlp] [--invokes 300] [--repeats 2]
                                   [--firmware <ST's validation firmware ELF or install>] [--json F]
                                   [--rows simulated,twin,st-client]   (N6_SIM_BOARD: another board state)

Our client cycles through IO, per-layer and per-layer-with-data runs with seeded random inputs;
with --st-client (ST's st_ai_runner.sh) and ST's firmware, ST's client also runs its mixed
sequence (IO, per layer, with data at batch 1, IO and per layer at batch 2; every input of the
model fed) the same number of times. Prints a table (count, faults, identical or not, seconds)
and writes the JSON report (with, per row, how many invokes' cycles differed).

With --change ROUNDS, one session instead changes the model under one board process (the twin
with --firmware): per round each model is flashed (`scons flash`, the simulated programmer), the
board reset through the programmer and the model run; its outputs must equal the host build's of
that model (a stale image or stale buffers would give another's), and the board process's resident
memory after the last round is compared with the first (a leak grows it)."""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "site_scons"), os.path.join(ROOT, "sim", "board"),
                os.path.join(ROOT, "sim", "programmer")]

import numpy as np  # noqa: E402
from tabulate import tabulate  # noqa: E402

from n6.aivalidation import BoardError, Timeouts  # noqa: E402
from n6.aivalidation.messages import IO_ONLY, PER_LAYER, PER_LAYER_WITH_DATA  # noqa: E402
from n6.board import load_board  # noqa: E402
from n6.build_layout import DEFAULT_BUILD_DIR, sim_board_state  # noqa: E402
from n6.run import host_reference  # noqa: E402
from n6.run.session import connect, reset_simulated_board, simulated_board  # noqa: E402

BOARD = os.path.join(ROOT, "firmware", "boards", "stm32n6570-dk.toml")
STATE = sim_board_state(os.path.join(ROOT, DEFAULT_BUILD_DIR))   # scons flash's too
OUR_ROWS = {"simulated": "simulated board", "twin": "twin"}   # per model, our client on each board: its label
ROWS = (*OUR_ROWS, "st-client")     # and ST's client on the twin
NEEDS = {"simulated": (), "twin": ("--firmware",), "st-client": ("--st-client", "--firmware")}   # a row's arguments
MODES = (IO_ONLY, PER_LAYER, PER_LAYER | PER_LAYER_WITH_DATA)
HOST_WAITS = Timeouts(tensor=10.0)   # ST's host allows 0.1 s between epoch tensors: an emulated board on a
#                                      loaded host can take longer (a host wait, not the board's cycles)
ST_PER_LAYER = [[1, ["PER_LAYER"]], [1, ["PER_LAYER", "PER_LAYER_WITH_DATA"]]]   # its per-layer runs, batch 1
ST_SEQUENCE = [[1, ["IO_ONLY"]], *ST_PER_LAYER, [2, ["IO_ONLY"]],
               [2, ["PER_LAYER"]]]   # ST's client's runs in turn: [batch, the modes it ORs]
ST_MIXED = """
import functools, hashlib, json, operator, sys
import numpy as np
from stm_ai_runner import AiRunner
runner = AiRunner()
assert runner.connect(f"serial:{sys.argv[1]}:921600"), runner.get_error()
inputs = runner.get_info()["inputs"]
rng = np.random.default_rng(int(sys.argv[3]))
sequence = [(batch, functools.reduce(operator.or_, (getattr(AiRunner.Mode, m) for m in modes)))
            for batch, modes in json.loads(sys.argv[4])]
records = []
for i in range(int(sys.argv[2])):
    batch, mode = sequence[i % len(sequence)]
    x = [rng.integers(-128, 128, size=(batch,) + tuple(i["shape"][1:])).astype(i["type"]) for i in inputs]
    outputs, profile = runner.invoke(x, mode=mode)
    records.append([hashlib.sha256(b"".join(np.asarray(o).tobytes() for o in outputs)).hexdigest(),
                    profile["c_durations"]])
runner.disconnect()
print(json.dumps(records))
"""


def our_session(firmware, model_mode, invokes, seed):
    """[(outputs digest, [duration ms, counters])] of `invokes` mixed runs of our client."""
    records = []
    with simulated_board(BOARD, state=STATE, firmware=firmware, mode=model_mode) as port:
        with connect(port, timeouts=HOST_WAITS) as (client, _):
            model = client.model()
            rng = np.random.default_rng(seed)
            for i in range(invokes):
                data = [rng.integers(0, 256, size=t.nbytes, dtype=np.uint8).tobytes() for t in model.inputs]
                result = client.run(model.name, data, MODES[i % len(MODES)], first=i == 0)
                digest = hashlib.sha256(b"".join(raw for _, raw in result.outputs)).hexdigest()
                records.append([digest, [result.model_op.duration_ms, list(result.model_op.counters)]])
    return records


def st_session(st_client, firmware, model_mode, invokes, seed, workdir):
    with simulated_board(BOARD, state=STATE, firmware=firmware, mode=model_mode) as port:
        proc = subprocess.run([st_client, "-c", ST_MIXED, port, str(invokes), str(seed), json.dumps(ST_SEQUENCE)],
                              capture_output=True, text=True, cwd=workdir)
    if proc.returncode:
        raise BoardError(port, f"ST's client: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def soak(model, board, session, repeats):
    """One row: the sessions repeated; a fault ends the row. Outputs and cycles are compared apart
    (`cycles_differing`: invokes of a repeat whose cycles differ from the first session's)."""
    started, runs, fault = time.perf_counter(), [], ""
    try:
        for _ in range(repeats):
            runs.append(session())
    except BoardError as e:
        fault = str(e)
    done = len(runs) == repeats
    return {"model": model, "board": board, "invokes": sum(len(r) for r in runs), "repeats": len(runs),
            "fault": fault,
            "outputs_identical": done and all([a[0] for a in r] == [a[0] for a in runs[0]] for r in runs),
            "cycles_identical": done and all([a[1] for a in r] == [a[1] for a in runs[0]] for r in runs),
            "cycles_differing": sum(a[1] != b[1] for r in runs[1:] for a, b in zip(r, runs[0])),
            "seconds": round(time.perf_counter() - started, 1)}


def _board_process_rss():
    """Resident KiB of this process's child (the board process the session started)."""
    kids = [int(pid) for task in os.listdir("/proc/self/task")
            for pid in open(f"/proc/self/task/{task}/children").read().split()]
    status = open(f"/proc/{kids[-1]}/status").read()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))


def changing_session(models, rounds, firmware, seed):
    """One row: `rounds` x every model flashed, reset and run under one board process."""
    started, fault, stale, rss = time.perf_counter(), "", [], []
    rng = np.random.default_rng(seed)
    subprocess.run([sys.executable, "-m", "SCons", "-Q", *models], cwd=ROOT, check=True, capture_output=True)
    expected, inputs = {}, {}
    for model in models:
        with open(os.path.join(ROOT, "build", model, "st_ai_output", "network_c_info.json")) as f:
            graph = json.load(f)["graphs"][0]
        inputs[model] = [rng.integers(0, 256, size=int(np.prod(t["shape"])) * t["data_format"]["size"] // 8,
                                      dtype=np.uint8).tobytes() for t in graph["original_inputs"]]
        expected[model] = host_reference.run(os.path.join(ROOT, "build", model, "st_ai_output"),
                                             os.path.join(ROOT, "build", "stedgeai-sim", "2.2"), [inputs[model]],
                                             len(graph["original_outputs"]))[0]
    board, log = load_board(BOARD), os.path.join(ROOT, "build", "bench", "soak-reset.log")
    runs = 0
    try:
        subprocess.run([sys.executable, "-m", "SCons", "-Q", "flash", f"MODEL={models[0]}"], cwd=ROOT, check=True,
                       capture_output=True)
        with simulated_board(BOARD, state=STATE, firmware=firmware) as port:
            for r in range(rounds):
                for model in models:
                    subprocess.run([sys.executable, "-m", "SCons", "-Q", "flash", f"MODEL={model}"], cwd=ROOT,
                                   check=True, capture_output=True)
                    reset_simulated_board(STATE, board, log)
                    with connect(port, timeouts=HOST_WAITS) as (client, _):
                        result = client.run(client.model().name, inputs[model], IO_ONLY, first=True)
                    runs += 1
                    if [raw for _, raw in result.outputs] != expected[model]:
                        stale.append(f"round {r + 1} {model}")
                    rss.append(_board_process_rss())
    except (BoardError, subprocess.CalledProcessError) as e:
        fault = str(e)
    return {"model": "+".join(models), "board": ("twin" if firmware else "simulated board") + ", changing models",
            "invokes": runs, "repeats": rounds, "fault": fault, "outputs_identical": not stale and runs > 0,
            "stale": stale, "rss_kib": rss,
            "rss_kib_first_last": [rss[len(models) - 1], rss[-1]] if len(rss) >= len(models) else [],
            "cycles_identical": None, "seconds": round(time.perf_counter() - started, 1)}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="soak", description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="kws_mlp,big_mlp,digits_mlp,ds_cnn")
    ap.add_argument("--invokes", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--firmware", default="", help="ST's validation firmware ELF (or install) for the twin rows")
    ap.add_argument("--st-client", default="", help="ST's st_ai_runner.sh: also soak ST's client on the twin")
    ap.add_argument("--rows", help=f"which rows per model (of {', '.join(ROWS)}; default: those the arguments allow)")
    ap.add_argument("--change", type=int, default=0, metavar="ROUNDS",
                    help="one session changing the model ROUNDS x (per model: flash, reset, run)")
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench", "soak.json"))
    args = ap.parse_args(argv)
    def missing(row):
        return [flag for flag in NEEDS[row] if not getattr(args, flag[2:].replace("-", "_"))]
    wanted = args.rows.split(",") if args.rows else [r for r in ROWS if not missing(r)]
    for row in wanted:
        if row not in ROWS:
            ap.error(f"--rows: unknown row {row!r}: give some of {', '.join(ROWS)}")
        if missing(row):
            ap.error(f"--rows {row}: needs {' and '.join(missing(row))}")
    rows = []
    os.makedirs(os.path.join(ROOT, "build", "bench"), exist_ok=True)
    if args.change:
        for firmware in [""] + ([args.firmware] if args.firmware else []):
            rows.append(changing_session(args.models.split(","), args.change, firmware, args.seed))
    for model in args.models.split(",") if not args.change else ():
        subprocess.run([sys.executable, "-m", "SCons", "-Q", "flash", f"MODEL={model}"], cwd=ROOT, check=True,
                       capture_output=True)
        for row, board in OUR_ROWS.items():
            if row not in wanted:
                continue
            firmware = args.firmware if row == "twin" else ""
            rows.append(soak(model, f"{board}, our client",
                             lambda firmware=firmware: our_session(firmware, "COPY", args.invokes, args.seed),
                             args.repeats))
        if "st-client" in wanted:
            workdir = os.path.join(ROOT, "build", "bench")
            os.makedirs(workdir, exist_ok=True)
            rows.append(soak(model, "twin, ST's client", lambda workdir=workdir: st_session(
                args.st_client, args.firmware, "COPY", args.invokes, args.seed, workdir), args.repeats))
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"invokes_per_session": args.invokes, "rows": rows}, f, indent=1)
    yes = {True: "yes", False: "NO", None: "-"}
    print(tabulate([[r["model"], r["board"], r["invokes"], r["fault"] or "none", yes[r["outputs_identical"]],
                     yes[r["cycles_identical"]], " -> ".join(str(k) for k in r.get("rss_kib_first_last", [])) or "-",
                     r["seconds"]] for r in rows],
                   headers=["model", "board, client", "invokes", "fault", "same outputs", "same cycles",
                            "board RSS KiB", "s"]))
    print(f"JSON: {args.json}")
    return 0 if all(not r["fault"] and r["cycles_identical"] is not False and r["outputs_identical"]
                    for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
