"""`scons profile` costs on the simulated board, as ratios measured in one run:

    .venv/bin/python bench/profile.py [model ...]        (default: tiny_prebuilt kws_mlp)

Per model, in a fresh copy of the repository with the image already built: the first profile
(flash, measure, reports) against a second one that finds nothing changed (prints the stored
report), and against a reports-only rerun (a new PROFILE_BASELINE: merge, picture, trace, HTML
and diff, no board)."""
import os
import re
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from conftest import copy_repo  # noqa: E402
import timed  # noqa: E402

STEP = re.compile(r"^  ([A-Z]+)\s", re.M)


def scons(cwd, *args):
    t, out = timed.scons(cwd, *args)
    return t, STEP.findall(out)


def main(models):
    with tempfile.TemporaryDirectory(prefix="n6-bench-profile-") as tmp:
        repo = copy_repo(os.path.join(tmp, "repo"))
        for model in models:
            scons(repo, model)                                       # the image, outside the timings
            first, steps = scons(repo, f"profile-{model}")
            assert "PROFILE" in steps, steps
            again, steps = scons(repo, f"profile-{model}")
            assert "PROFILE" not in steps and "REPORT" not in steps, steps
            baseline = os.path.join(tmp, f"{model}-baseline.json")
            shutil.copyfile(os.path.join(repo, "build", model, "profile", "profile.json"), baseline)
            report, steps = scons(repo, f"profile-{model}", f"PROFILE_BASELINE={baseline}")
            assert "REPORT" in steps and "PROFILE" not in steps, steps
            print(f"{model:>14}: first profile {first:7.2f} s | unchanged {again:5.2f} s "
                  f"(ratio {again / first:.3f}) | reports only {report:5.2f} s (ratio {report / first:.3f})")


if __name__ == "__main__":
    main(sys.argv[1:] or ["tiny_prebuilt", "kws_mlp"])
