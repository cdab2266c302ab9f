"""Incremental-build costs, as ratios measured in one run:

    ./n6 build && .venv/bin/python bench/incremental.py [total-MB]

Three models with `total-MB` (default 64) of params in total, as stedgeai output folders (made
once by the simulated tool, outside the timings, so the numbers are about the build itself).
Reported: no-op vs an empty SConstruct's no-op, both with nothing changed since the last complete
build (no build description read) and walking the graph (the first no-op after a change
elsewhere); weight-only change vs copy + CRC-32 of that model's params and vs a clean build, beyond
the no-op that follows it (which walks: the change's outputs are new), and the time its pack
step took (SCons's own figure for the time spent in build actions); code-only change vs a clean
build; compiles/links each."""
import hashlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.dont_write_bytecode = True   # no models/__pycache__: the bundled models are models/'s folders

from conftest import bump, copy_repo  # noqa: E402
from make_models import big_mlp  # noqa: E402
from n6.reloc.options import board_facts  # noqa: E402
from n6.unchanged import RECORD, forget, holds  # noqa: E402

STEP = re.compile(r"^  (GEN|PREPARE|CC|LINK|IMAGE|PACK)\s", re.M)
ACTIONS = re.compile(r"^Total command execution time: ([0-9.]+) seconds", re.M)
# Measure what a user's shell does: Python caches the build's own modules as bytecode.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
# Pack's fixed cost: a fresh interpreter imports what the pack action imports and packs model wide0 (checker,
# report, results JSON) with the DK's budgets as the step's options hold them: read from the board file here, in the
# parent, and given as JSON (the step reads no board file); the time spent streaming the params is left out.
PACK_FIXED = """
import json, sys, time
t, cpu = time.perf_counter(), time.process_time()
sys.path.insert(0, "site_scons")
from n6.reloc.params import ParamsBlob
from n6.reloc.pipeline import pack_step
from n6.reloc.report import Budgets
streaming, stream = [], ParamsBlob.stream
def timed(self, out, crc=0):
    s = time.perf_counter(), time.process_time()
    crc = stream(self, out, crc)
    streaming.append((time.perf_counter() - s[0], time.process_time() - s[1]))
    return crc
ParamsBlob.stream = timed
r = "build/wide0/reloc/"
budgets = Budgets(**json.loads(sys.argv[2]), copy_mode=False)
pack_step(r + "network_rel_code.bin", r + "network_reloc_params.json", sys.argv[1] + "/network_rel.bin",
          sys.argv[1] + "/r.json", "network", budgets, split=True, log=lambda line: None, hash_name="sha256")
assert streaming, "pack_step no longer calls ParamsBlob.stream: time its streaming another way"
print(time.perf_counter() - t - sum(s[0] for s in streaming), time.process_time() - cpu - sum(s[1] for s in streaming))
"""


def scons(cwd, *args):
    """(seconds, compiles, links, SCons's time in actions, CPU seconds) of one build. CPU time (user +
    system) is the steadier figure on a shared machine: waiting for a core is not counted."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", "--debug=time", "RELOC_SPLIT=1", *args], cwd=cwd,
                          capture_output=True, text=True, env=ENV)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(proc.stdout + proc.stderr)
    steps = STEP.findall(proc.stdout)
    return elapsed, steps.count("CC"), steps.count("LINK"), float(ACTIONS.search(proc.stdout).group(1)), \
        after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime




def make_models(repo, total_mb):
    """Three wide MLPs as prebuilt stedgeai output folders."""
    models = os.path.join(repo, "models")
    for entry in os.listdir(models):
        if os.path.isdir(os.path.join(models, entry)):
            shutil.rmtree(os.path.join(models, entry))
    width = int(total_mb * (1 << 20) / 3 / 2048)
    for i in range(3):
        src = os.path.join(models, f"wide{i}")
        big_mlp(os.path.join(src, "model.onnx"), width=width)
        for f in ("neural_art.json", "big_mlp.mpool"):
            shutil.copyfile(os.path.join(ROOT, "models", "big_mlp", f), os.path.join(src, f))
    scons(repo)   # the simulated generate, once
    for i in range(3):
        src, out = os.path.join(models, f"wide{i}"), os.path.join(repo, "build", f"wide{i}", "st_ai_output")
        shutil.rmtree(src)
        os.makedirs(src)
        for f in os.listdir(out):
            if f.endswith((".c", ".h", ".raw", "_c_info.json")):
                shutil.copyfile(os.path.join(out, f), os.path.join(src, f))
        shutil.rmtree(os.path.join(repo, "build", f"wide{i}"))


def main():
    total_mb = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    with tempfile.TemporaryDirectory() as tmp:
        repo = copy_repo(os.path.join(tmp, "repo"))
        make_models(repo, total_mb)
        raws = [os.path.join(repo, "models", f"wide{i}", "network_atonbuf.xSPI2.raw") for i in range(3)]
        params = sum(os.path.getsize(r) for r in raws)
        changed = os.path.getsize(raws[0])

        clean = scons(repo)
        record = os.path.join(repo, "build", RECORD)
        empty = os.path.join(tmp, "empty")
        os.makedirs(empty)
        open(os.path.join(empty, "SConstruct"), "w").close()
        time.sleep(0.2)   # the build's outputs settle: the next run walks the graph and records it
        pairs = [(scons(repo), scons(empty)) for _ in range(15)]   # interleaved: both see the same machine load
        assert holds(record), "no-ops left no record: they all walked the graph"
        noop, empty_noop = (sorted(p[i] for p in pairs)[7] for i in (0, 1))   # medians: short and noisy runs
        noop_ratio = sorted(a[0] / b[0] for a, b in pairs)[7]
        noop_cpu, noop_cpu_ratio = sorted(a[4] for a, _ in pairs)[7], sorted(a[4] / b[4] for a, b in pairs)[7]

        def walk():   # the no-op after a change elsewhere (the record gone): description read, graph walked
            forget(record)
            return scons(repo)
        walks = [(walk(), scons(empty)) for _ in range(9)]
        walk_t, walk_ratio = sorted(a[0] for a, _ in walks)[4], sorted(a[0] / b[0] for a, b in walks)[4]
        walk_cpu_ratio = sorted(a[4] / b[4] for a, b in walks)[4]

        weights, beyond = [], []
        for k in range(5):   # weight-only: new bytes in one model's params, same size; each paired with a no-op
            with open(raws[0], "r+b") as f:
                f.seek(4096 * (k + 1))
                f.write(os.urandom(64))
            bump(raws[0])
            weights.append(scons(repo))
            after = scons(repo)
            beyond.append((weights[-1][0] - after[0], weights[-1][4] - after[4]))
        weight = min(weights)
        beyond_t, beyond_cpu = (sorted(b[i] for b in beyond)[2] for i in (0, 1))   # medians of the pairs' differences

        def copy_crc():
            dst = os.path.join(tmp, "copy.raw")
            shutil.copyfile(raws[0], dst)
            crc = 0
            with open(dst, "rb") as f:
                while chunk := f.read(1 << 20):
                    crc = zlib.crc32(chunk, crc)
        def signature():   # what the decider does with the new .raw: SCons's sha256 of the whole file
            with open(raws[0], "rb") as f:
                hashlib.file_digest(f, "sha256")

        def timed(fn):
            """(seconds, CPU seconds) of fn(), the least of 3 runs."""
            times = []
            for _ in range(3):
                t = time.perf_counter(), time.process_time()
                fn()
                times.append((time.perf_counter() - t[0], time.process_time() - t[1]))
            return tuple(min(t[i] for t in times) for i in (0, 1))
        (copy_t, copy_cpu), (sig_t, sig_cpu) = timed(copy_crc), timed(signature)

        code = []
        for k in range(3):   # code-only: one model's network.c changes
            c = os.path.join(repo, "models", "wide1", "network.c")
            text = open(c).read()
            open(c, "w").write(text.replace(f".act_max = {127 - k},", f".act_max = {126 - k},", 1))
            bump(c)
            code.append(scons(repo))
        code_t = min(code)
        budgets = json.dumps(board_facts(os.path.join(repo, "firmware", "boards", "stm32n6570-dk.toml")).budgets)
        fixed, fixed_cpu = (min(col) for col in zip(*(
            map(float, subprocess.run([sys.executable, "-c", PACK_FIXED, tmp, budgets], cwd=repo, env=ENV, check=True,
                                      capture_output=True, text=True).stdout.split()) for _ in range(5))))

    print(f"models: 3, params {params / (1 << 20):.1f} MB in total, {changed / (1 << 20):.1f} MB "
          "in the changed model")
    rows = [("clean build", clean, None),
            ("no-op", noop, f"{noop_ratio:.2f}x an empty SConstruct's no-op (median of 15 interleaved pairs; goal "
                            "<= 1.3): nothing changed since the last complete build, no build description read"),
            ("no-op, walking", (walk_t,) + noop[1:], f"{walk_ratio:.2f}x (CPU {walk_cpu_ratio:.2f}x; median of 9): "
                                                     "the first after a change elsewhere, the graph walked"),
            ("weight-only change", weight, f"{weight[0] / copy_t:.2f}x copy+crc32 of its params (goal <= 1.3), "
                                           f"{100 * weight[0] / clean[0]:.1f}% of a clean build (goal <= 5%); "
                                           f"beyond the walking no-op after it: {beyond_t / copy_t:.2f}x "
                                           "copy+crc32 (median of 5 paired runs; goal <= 3); "
                                           f"its pack step: {weight[3] * 1000:.0f} ms = "
                                           f"{weight[3] / copy_t:.2f}x copy+crc32"),
            ("code-only change", code_t, f"{100 * code_t[0] / clean[0]:.1f}% of a clean build")]
    for label, (t, cc, link, *_), note in rows:
        print(f"{label:<20} {t * 1000:8.0f} ms  compiles {cc:3d}  links {link}" + (f"   {note}" if note else ""))
    print(f"{'empty SConstruct':<20} {empty_noop[0] * 1000:8.0f} ms")
    print(f"{'copy + crc32':<20} {copy_t * 1000:8.0f} ms")
    print(f"{'pack, fixed cost':<20} {fixed * 1000:8.0f} ms  (a fresh interpreter: imports, checker, "
          f"report; all of pack but streaming the params; = {fixed / copy_t:.2f}x copy+crc32)")
    print(f"CPU time (user + system; waiting for a core is not counted): no-op {noop_cpu * 1000:.0f} ms = "
          f"{noop_cpu_ratio:.2f}x an empty SConstruct's (goal <= 1.3); weight-only beyond the walking no-op "
          f"{beyond_cpu * 1000:.0f} ms = {beyond_cpu / copy_cpu:.2f}x copy+crc32 (median of 5 paired runs; goal <= 3; "
          f"copy+crc32 {copy_cpu * 1000:.0f} ms); pack's fixed cost {fixed_cpu * 1000:.0f} ms = "
          f"{fixed_cpu / copy_cpu:.2f}x")
    print(f"floor of a weight-only change beyond the no-op, with content signatures: the decider's sha256 of the new "
          f".raw ({sig_t * 1000:.0f} ms, CPU {sig_cpu * 1000:.0f} ms) + copy+crc32 = {(sig_t + copy_t) / copy_t:.2f}x "
          f"copy+crc32; CPU, with pack's sha256 of what it writes (a second thread): "
          f"{(2 * sig_cpu + copy_cpu) / copy_cpu:.2f}x")
    if "PYTHONDONTWRITEBYTECODE" in os.environ:
        print("(PYTHONDONTWRITEBYTECODE was dropped for the measured runs, as in a usual shell)")


if __name__ == "__main__":
    main()
