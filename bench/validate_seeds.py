"""How far the simulated NPU's outputs drift from LiteRT, seed by seed: `scons validate` of ST's 2.2
samples (the test bed's stedgeai outputs, built with its install, flashed for the DK: the params
pool moved out of the image's area) on the simulated board, one run per seed, against LiteRT on the
published sources; `--twin`: on the DK twin running ST's 2.2 validation firmware (SIM_FIRMWARE=the
install) instead. Per seed and output: the largest error in LSB, the strict top-1, the near-tie
top-1 and how far below the reference's best its top-1 lay (the tie it needed): the figures the
simulated-NPU rule judges (n6.run.options.NPU_MAX_LSB, NPU_TIE_LSB); then their distribution over
the seeds, and the rule's margin: its bound over the largest error seen.

    N6_REAL_STEDGEAI=<test bed> .venv/bin/python bench/validate_seeds.py [--seeds 20] [--first 0] [--sample nucleo_mnv1]
        [--twin]

JSON: build/bench/validate_seeds.json (--twin: validate_seeds_twin.json)."""
import argparse
import json
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "site_scons"), os.path.join(ROOT, "tests")]

from conftest import copy_repo, name_source, sample_as_model, scons  # noqa: E402
from n6.run.options import NPU_MAX_LSB, NPU_TIE_LSB  # noqa: E402
from npu_samples import REAL, need_test_bed, write_report  # noqa: E402  (bench/ is the script's folder)
from tabulate import tabulate  # noqa: E402

SAMPLES = ("nucleo_mnv1", "blazeface")


def project(tmp, samples):
    """A copy of the project (its bundled models left out) with the samples as prebuilt models
    naming their source."""
    repo = copy_repo(os.path.join(tmp, "repo"))
    shutil.rmtree(os.path.join(repo, "models"))
    for name in samples:
        sample_as_model(repo, REAL, name)
        name_source(repo, REAL, name)
    return repo


def validate(repo, name, seed, twin):
    """validate.json of one run of `name` on input seed `seed` (failed or not), on the simulated
    board or (`twin`) ST's firmware on the DK twin; a run that stops before comparing stops the
    bench with its last line."""
    run = os.path.join(repo, "build", name, "run")
    reports = [os.path.join(run, f) for f in ("validate.json", "validate-failed.json")]
    for path in reports:
        if os.path.exists(path):
            os.remove(path)
    install = os.path.join(REAL, "2.2")
    proc = scons(repo, f"validate-{name}", "RELOC_ABSOLUTE_FLASH_POOLS=1", "RUNS=1", f"SEED={seed}",
                 *([f"SIM_FIRMWARE={install}"] if twin else []), check=False,
                 env={"STEDGEAI_CORE_DIR": install}, timeout=3600)
    found = [p for p in reports if os.path.exists(p)]
    if not found:
        last = (proc.stdout + proc.stderr).strip().splitlines() or ["no output"]
        raise SystemExit(f"{name} seed {seed}: {last[-1]}")
    with open(found[0]) as f:
        return json.load(f)


def main():
    need_test_bed()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", action="append", choices=SAMPLES)
    parser.add_argument("--seeds", type=int, default=20, help="one run per seed FIRST..FIRST+N-1")
    parser.add_argument("--first", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--twin", action="store_true",
                        help="on the DK twin with ST's 2.2 validation firmware, not the simulated board's own")
    parser.add_argument("--json", help="default: build/bench/validate_seeds.json (--twin: validate_seeds_twin.json)")
    args = parser.parse_args()
    board = "twin" if args.twin else "simulated board"
    json_path = args.json or os.path.join(ROOT, "build", "bench", f"validate_seeds{'_twin' if args.twin else ''}.json")
    samples = args.sample or list(SAMPLES)
    report = {"board": board, "simulated": True, "npu_max_lsb": NPU_MAX_LSB, "npu_tie_lsb": NPU_TIE_LSB,
              "samples": {}}
    with tempfile.TemporaryDirectory() as tmp:
        repo = project(tmp, samples)
        for name in samples:
            runs = []
            for seed in range(args.first, args.first + args.seeds):
                v = validate(repo, name, seed, args.twin)
                runs.append({"seed": seed, "passed": v["passed"],
                             "outputs": [{k: o[k] for k in ("name", "max_abs_lsb", "mean_abs_lsb", "exact", "top1",
                                                            "top1_tie", "top1_gap_lsb")} for o in v["outputs"]]})
                errors = ", ".join(f"{o['max_abs_lsb']:.0f} LSB" for o in runs[-1]["outputs"])
                print(f"  {name} seed {seed} ({board}): {errors}", flush=True)
            rows = []
            for k, out in enumerate(runs[0]["outputs"]):
                worst = sorted(round(r["outputs"][k]["max_abs_lsb"]) for r in runs)
                rows.append([name, out["name"][:24], len(runs), worst[0], worst[len(worst) // 2], worst[-1],
                             f"{NPU_MAX_LSB / worst[-1]:.2f}x" if worst[-1] else "-",
                             sum(r["outputs"][k]["top1"] == 1.0 for r in runs),
                             sum(r["outputs"][k]["top1_tie"] == 1.0 for r in runs),
                             max(round(r["outputs"][k]["top1_gap_lsb"]) for r in runs), sum(r["passed"] for r in runs)])
            print(f"{name} on the {board} (simulated NPU), against LiteRT:")
            print(tabulate(rows, headers=["sample", "output", "seeds", "min max-LSB", "median", "max", "bound / max",
                                          "top-1 same", "near-tie top-1", "largest tie LSB", "passed"]))
            report["samples"][name] = {"runs": runs, "table": rows}
    write_report(report, json_path)


if __name__ == "__main__":
    main()
