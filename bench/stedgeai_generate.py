"""Speed of the simulated `stedgeai generate` on every bundled source model, in seconds and as
a ratio to the 10 s budget (goal: < 1 for the largest model), plus the time per MB of model file.

    ./n6 setup && .venv/bin/python bench/stedgeai_generate.py

Each line: best of 3 runs in this process (interpreter start-up excluded), model file size."""
import os
import sys
import tempfile
import time
from types import SimpleNamespace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "site_scons"), os.path.join(ROOT, "sim", "stedgeai")]

from n6.models import discover  # noqa: E402
from n6.releases import release  # noqa: E402
from stedgeai_sim.generate import generate  # noqa: E402

BUDGET_S = 10.0


def best(fn, n=3):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in discover(os.path.join(ROOT, "models")):
            if spec.kind != "source":
                continue
            args = SimpleNamespace(profile=(spec.profile, spec.profile_file), model=spec.model_file, name=None,
                                   input_data_type=None, output_data_type=None,
                                   output=os.path.join(tmp, spec.name, "out"),
                                   workspace=os.path.join(tmp, spec.name, "ws"))
            t_gen = best(lambda args=args: generate(args, release("2.2"), "<install>", "stedgeai generate (bench)"))
            rows.append((os.path.getsize(spec.model_file), spec.name, t_gen))
    for size, name, t_gen in sorted(rows):
        print(f"  generate {name:<14} {size / 1024:9.1f} KB  {t_gen:6.3f} s  {t_gen / BUDGET_S:6.3f} of budget  "
              f"{t_gen / (size / 2**20):6.2f} s/MB{'  <- largest' if size == max(r[0] for r in rows) else ''}")
    return 0 if max(rows)[2] < BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
