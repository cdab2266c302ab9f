"""A whole-project `scons validate` (every bundled model, one at a time on the simulated one-model
board) as ratios measured in one run:

    .venv/bin/python bench/project.py

In a fresh copy of the repository with the images already built: the first validate (each model
flashed right before its run), a second one that finds nothing changed (no flash, no run), and
one after a weight of one model changed (that model rebuilt, flashed and validated alone)."""
import glob
import os
import re
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from conftest import copy_repo, make_prebuilt, scons as run_scons  # noqa: E402

STEP = re.compile(r"^  ([A-Z]+)\s", re.M)


def scons(cwd, *args):
    """(seconds, FLASH lines, RUN lines) of one scons command that must succeed."""
    t = time.perf_counter()
    steps = STEP.findall(run_scons(cwd, *args).stdout)
    return time.perf_counter() - t, steps.count("FLASH"), steps.count("RUN")


def main():
    with tempfile.TemporaryDirectory(prefix="n6-bench-project-") as tmp:
        repo = copy_repo(os.path.join(tmp, "repo"))
        scons(repo, "big_mlp")
        make_prebuilt(repo, "big_mlp")                           # a prebuilt folder: one .raw byte to change
        scons(repo)                                              # every image, outside the timings
        first = scons(repo, "validate")
        unchanged = scons(repo, "validate")
        raw = sorted(glob.glob(os.path.join(repo, "models", "big_mlp", "*.raw")))[0]
        with open(raw, "r+b") as f:
            byte = f.read(1)
            f.seek(0)
            f.write(bytes([byte[0] ^ 1]))
        one = scons(repo, "validate")
    for name, (seconds, flashes, runs) in (("first validate", first), ("unchanged", unchanged),
                                           ("one weight changed", one)):
        print(f"{name:>20}: {seconds:6.2f} s  (ratio {seconds / first[0]:.3f})  flashes {flashes:2d}  runs {runs:2d}")


if __name__ == "__main__":
    main()
