"""Flash costs of `scons flash` against ST's flow, measured in one run with the simulated programmer:

    ./n6 build && .venv/bin/python bench/flash.py

big_mlp, split (network_rel.bin + network_rel_params.bin), already on the board. For each change:
bytes written and programmer calls (one call reads back, writes the changed sectors and verifies),
next to ST's st_load_and_run.py (which writes both images whole: power-down reset + download per
image = 4 calls), and the time both take on a real board at the documented rates (100 KB/s
program+verify, 3 s per programmer call: its start-up, probe and loader)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "sim", "programmer"))

from conftest import copy_repo, flip_bytes, make_prebuilt  # noqa: E402
from programmer_sim.board_state import BoardState  # noqa: E402

RATE = 100 * 1000          # bytes/s, program + verify
CALL = 3.0                 # s per programmer call
SECTOR = 0x10000


def scons(repo, *args):
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", "RELOC_SPLIT=1", *args], cwd=repo,
                          capture_output=True, text=True,      # the board in build/sim-board, not N6_SIM_BOARD's
                          env={k: v for k, v in os.environ.items() if k != "N6_SIM_BOARD"})
    if proc.returncode:
        sys.exit(proc.stdout + proc.stderr)
    return proc


def flash(repo, *args):
    state = BoardState(os.path.join(repo, "build", "sim-board"))
    before = len(state.events("call"))
    report = os.path.join(repo, "build", "big_mlp", "flash", "flash.json")
    mtime = os.path.getmtime(report) if os.path.exists(report) else None
    scons(repo, "flash", "MODEL=big_mlp", *args)
    calls = len(state.events("call")) - before
    if not os.path.exists(report) or os.path.getmtime(report) == mtime:
        return 0, calls
    with open(report) as f:
        return json.load(f)["bytes_written"], calls


def main():
    with tempfile.TemporaryDirectory() as tmp:
        repo = copy_repo(os.path.join(tmp, "repo"))
        scons(repo, "big_mlp")
        src = make_prebuilt(repo, "big_mlp")
        shutil.rmtree(os.path.join(repo, "build", "big_mlp"))
        flash(repo)                                             # the board holds the model
        images = [os.path.join(repo, "build", "big_mlp", n) for n in ("network_rel.bin", "network_rel_params.bin")]
        raw = glob.glob(os.path.join(src, "*.raw"))[0]

        rows = [("nothing changed", *flash(repo))]
        flip_bytes(raw, [123457])
        rows.append(("weight-only (1 weight)", *flash(repo)))
        flip_bytes(raw, [i * 7 * SECTOR + 11 for i in range(10)])
        rows.append(("weight-only (10 weights)", *flash(repo)))
        rows.append(("code-only (RELOC_SECURE=0)", *flash(repo, "RELOC_SECURE=0")))
        st_bytes = sum(os.path.getsize(p) for p in images)
        st_calls = 2 * len(images)

    def seconds(n, calls):
        return n / RATE + calls * CALL

    print(f"big_mlp split: images {st_bytes} bytes; ST's flow writes them whole in {st_calls} calls "
          f"({seconds(st_bytes, st_calls):.1f} s at 100 KB/s + 3 s/call)")
    print(f"{'change':<28} {'bytes':>9} {'calls':>5} {'est. s':>7} | {'ST bytes':>9} {'calls':>5} {'est. s':>7} | "
          f"{'bytes %':>7} {'time %':>6}")
    for name, n, calls in rows:
        print(f"{name:<28} {n:>9} {calls:>5} {seconds(n, calls):>7.1f} | {st_bytes:>9} {st_calls:>5} "
              f"{seconds(st_bytes, st_calls):>7.1f} | {100 * n / st_bytes:>6.2f}% "
              f"{100 * seconds(n, calls) / seconds(st_bytes, st_calls):>5.1f}%")
    nothing, weight = rows[0], rows[1]
    share = seconds(*weight[1:]) / seconds(st_bytes, st_calls)
    print(f"goals: nothing changed = 0 bytes and 0 calls: {'met' if nothing[1:] == (0, 0) else 'MISSED'}; "
          f"weight-only <= 5% of ST's bytes: {100 * weight[1] / st_bytes:.2f}% "
          f"{'met' if weight[1] <= 0.05 * st_bytes else 'MISSED'}; weight-only in 1 programmer call: "
          f"{weight[2]} {'met' if weight[2] == 1 else 'MISSED'}; its time <= 7% of ST's: {100 * share:.1f}% "
          f"{'met' if share <= 0.07 else 'MISSED'}")


if __name__ == "__main__":
    main()
