"""Our build next to ST's own relocation flow on a real sample, as ratios measured in one run:

    N6_REAL_STEDGEAI=<test bed> .venv/bin/python bench/vs_st_flow.py [sample] [rounds]

The test bed (see tests/test_real_install.py) holds a real ST Edge AI Core install, real
`stedgeai generate` outputs and `npu_driver.sh`, ST's unmodified flow. Per round, interleaved:
ST's full run into a fresh folder; our clean build of the same sample on the same install; our
rebuild after a weight-only change (one byte of the .raw flipped). Medians; goals: clean <= 60%,
weight-only <= 10% of ST's run. Without the test bed it says so and exits 0."""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from conftest import copy_repo, flip_bytes  # noqa: E402

GOALS = {"clean build": 0.60, "weight-only rebuild": 0.10}
# Both flows run as from a usual shell: Python caches bytecode (ST's npu_driver.py is Python too).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argv, cwd=None, env=None):
    """(wall seconds, CPU seconds of the command and its children)."""
    t, c = time.perf_counter(), _cpu()
    proc = subprocess.run(argv, cwd=cwd, env=env or ENV, capture_output=True, text=True)
    elapsed, cpu = time.perf_counter() - t, _cpu() - c
    if proc.returncode:
        sys.exit(f"{' '.join(argv)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return elapsed, cpu


def main():
    real = os.environ.get("N6_REAL_STEDGEAI")
    if not real or not os.path.isdir(os.path.join(real, "2.2")):
        print("bench/vs_st_flow.py: skipped, no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI)")
        return
    sample = sys.argv[1] if len(sys.argv) > 1 else "blazeface"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    sample_dir = os.path.join(real, "samples", sample)
    with tempfile.TemporaryDirectory() as tmp:
        repo = copy_repo(os.path.join(tmp, "repo"))
        shutil.rmtree(os.path.join(repo, "models"))
        model = os.path.join(repo, "models", sample)
        shutil.copytree(sample_dir, model, ignore=shutil.ignore_patterns("SOURCE.txt"))
        raw = next(os.path.join(model, f) for f in sorted(os.listdir(model)) if f.endswith(".raw"))
        env = dict(ENV, STEDGEAI_CORE_DIR=os.path.join(real, "2.2"))
        ours = [sys.executable, "-m", "SCons", "-Q", "RELOC_ABSOLUTE_FLASH_POOLS=1", sample]
        times = {"ST npu_driver": [], "clean build": [], "weight-only rebuild": []}
        for i in range(rounds):
            st_out = os.path.join(tmp, f"st-{i}")
            times["ST npu_driver"].append(timed(["sh", os.path.join(real, "npu_driver.sh"), "-i",
                                                 os.path.join(sample_dir, "network.c"), "-o", st_out]))
            shutil.rmtree(os.path.join(repo, "build"), ignore_errors=True)
            times["clean build"].append(timed(ours, cwd=repo, env=env))
            flip_bytes(raw, [0])   # same size, new bytes
            times["weight-only rebuild"].append(timed(ours, cwd=repo, env=env))
    def med(key, i):
        return statistics.median(t[i] for t in times[key])
    st, st_cpu = med("ST npu_driver", 0), med("ST npu_driver", 1)
    print(f"{sample}: medians of {rounds} interleaved rounds ({os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}); wall time is the goal, CPU time shows the work done")
    print(f"  {'ST npu_driver (full run)':<28} {st:7.2f} s wall {st_cpu:7.2f} s CPU")
    ok = True
    for key, goal in GOALS.items():
        t, c = med(key, 0), med(key, 1)
        ok &= t / st <= goal
        print(f"  {'ours: ' + key:<28} {t:7.2f} s wall {c:7.2f} s CPU  {100 * t / st:5.1f}% of ST's wall time "
              f"(goal <= {100 * goal:.0f}%), {100 * c / st_cpu:5.1f}% of its CPU{'' if t / st <= goal else '  MISSED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
