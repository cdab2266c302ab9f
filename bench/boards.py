"""Several boards: the wall time of a whole-project `scons validate` of the bundled models on 1, 2
and 4 simulated boards (SIM_BOARDS=), then on as many simulated boards reached through labgrid
places of a local coordinator (LAB_PLACES=, tests/simulated_lab.py: the boards serve their serial
ports over RFC 2217, an exporter publishes them), each from clean boards (every model flashed, run
and validated), in one copy of the repository whose images are built first. Prints the time, its
ratio to one board of the same kind and whether the summary equals one local board's, and writes
the JSON report.

    .venv/bin/python bench/boards.py [--boards 1,2,4] [--no-lab] [--json F]

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
from simulated_lab import simulated_lab  # noqa: E402
from timed import scons  # noqa: E402


def validate(repo, *args):
    """(seconds, summary, the 1-minute load average at its end) of a whole-project validate from
    clean boards."""
    build = os.path.join(repo, "build")
    forget_boards(build)
    seconds, _ = scons(repo, "validate", "SEED=3", *args)
    with open(os.path.join(build, "validate-summary.json"), encoding="utf-8") as f:
        return seconds, json.load(f), os.getloadavg()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default="1,2,4")
    ap.add_argument("--no-lab", action="store_true", help="only the local simulated boards")
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench-boards.json"))
    args = ap.parse_args()
    counts = [int(n) for n in args.boards.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="n6-bench-boards-") as tmp:
        repo = os.path.join(tmp, "repo")
        copy_repo(repo)
        scons(repo)
        for n in counts:
            seconds, summary, load = validate(repo, f"SIM_BOARDS={n}")
            rows.append({"boards": n, "reached": "SIM_BOARDS", "seconds": seconds, "summary": summary, "load": load})
        for n in [] if args.no_lab else counts:
            places = [f"n6-bench-{k}" for k in range(1, n + 1)]
            folder = os.path.join(tmp, f"lab-{n}")
            os.makedirs(folder)
            with simulated_lab(folder, places) as lab:   # fresh boards, a fresh coordinator
                seconds, summary, load = validate(repo, f"LAB_PLACES={','.join(places)}",
                                                  f"LAB_COORDINATOR={lab.coordinator}", "FLASH_RESET=hard")
            rows.append({"boards": n, "reached": "LAB_PLACES", "seconds": seconds, "summary": summary, "load": load})
    local = rows[0]["summary"]
    for r in rows:
        first = next(f for f in rows if f["reached"] == r["reached"])
        r.update(seconds=round(r["seconds"], 2), load=round(r["load"], 2), models=len(r["summary"]["models"]),
                 passed=r["summary"]["passed"], ratio_to_first=round(first["seconds"] / r["seconds"], 2),
                 same_summary=r["summary"] == local)
    print(f"whole-project validate (simulated boards; {os.cpu_count()} cores on this host)")
    print(tabulate([[r["reached"], r["boards"], r["models"], r["passed"], r["seconds"], r["ratio_to_first"],
                     r["same_summary"], f"{r['load']:.1f}"] for r in rows],
                   ["boards reached by", "boards", "models", "passed", "wall s", f"speed-up vs {counts[0]}",
                    f"summary = SIM_BOARDS={counts[0]}'s", "load (1 min)"]))
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump([{k: v for k, v in r.items() if k != "summary"} for r in rows], f, indent=1)
        f.write("\n")
    print(f"JSON: {args.json}")


if __name__ == "__main__":
    main()
