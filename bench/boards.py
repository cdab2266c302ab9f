"""Several boards: the wall time of a whole-project `scons validate` of the bundled models on 1, 2
and 4 simulated boards (SIM_BOARDS=), each from a clean board (every model flashed, run and
validated), in one copy of the repository whose images are built first. Prints the time, its
ratio to one board and whether the summary equals one board's, and writes the JSON report.

    .venv/bin/python bench/boards.py [--boards 1,2,4] [--json F]

The simulated boards are processes on this machine: they share its cores, so the ratio is bounded
by the cores free (real boards work on their own; the host then only waits for them)."""
import argparse
import json
import os
import sys
import tempfile

from tabulate import tabulate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from conftest import copy_repo, forget_boards  # noqa: E402
from timed import scons  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default="1,2,4")
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench-boards.json"))
    args = ap.parse_args()
    counts = [int(n) for n in args.boards.split(",")]
    with tempfile.TemporaryDirectory(prefix="n6-bench-boards-") as tmp:
        copy_repo(tmp)
        scons(tmp)
        build = os.path.join(tmp, "build")
        rows = []
        for n in counts:
            forget_boards(build)
            seconds, _ = scons(tmp, "validate", f"SIM_BOARDS={n}", "SEED=3")
            with open(os.path.join(build, "validate-summary.json"), encoding="utf-8") as f:
                summary = json.load(f)
            rows.append({"boards": n, "seconds": round(seconds, 2), "models": len(summary["models"]),
                         "passed": summary["passed"], "summary": summary})
    base = rows[0]
    for r in rows:
        r["ratio_to_first"] = round(base["seconds"] / r["seconds"], 2)
        r["same_summary"] = r["summary"] == base["summary"]
    print(f"whole-project validate (simulated boards; {os.cpu_count()} cores on this host)")
    print(tabulate([[r["boards"], r["models"], r["passed"], r["seconds"], r["ratio_to_first"], r["same_summary"]]
                    for r in rows], ["boards", "models", "passed", "wall s", f"speed-up vs {base['boards']}",
                                     "same summary"]))
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump([{k: v for k, v in r.items() if k != "summary"} for r in rows], f, indent=1)
        f.write("\n")
    print(f"JSON: {args.json}")


if __name__ == "__main__":
    main()
