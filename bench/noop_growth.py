"""What a no-op costs as the project grows, as ratios measured in one run:

    .venv/bin/python bench/noop_growth.py [--clean] [--profile]

Projects of 1, 10 and 40 copies of the prebuilt `tiny_prebuilt` (each built once, outside the
timings). Reported: each no-op's time against an empty SConstruct's no-op (median of interleaved
pairs: both see the same machine load), when nothing changed since the last complete build (no
build description read) and walking (the first no-op after a change elsewhere); the growth per
model from 1 to 40 models (goal <= 3 ms); the peak RSS of the 40-model walking no-op. The floor:
SCons alone on the same graph (FLOOR: per model the same files, steps and targets as a prebuilt
model's image, each step a Python action writing its targets, no tool loaded), measured the same
way. `--clean`: also a 40-model clean build's compiles and time against 40 times one model's.
`--profile`: write a cProfile of each no-op next to the report (noop-<kind>-<N>.prof; `python -m
pstats` reads them)."""
import functools
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from conftest import copy_repo  # noqa: E402
from n6.unchanged import RECORD, forget, holds  # noqa: E402

SIZES = (1, 10, 40)
PAIRS = 9
KINDS = {"no-op": f"medians of {PAIRS} interleaved pairs; nothing changed since the last complete build",
         "walking": "the first no-op after a change elsewhere: the build description read, the graph walked",
         "floor": "SCons alone on the same graph, walked"}
CC = re.compile(r"^  CC\s", re.M)
# Measure what a user's shell does: Python caches the build's own modules as bytecode.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
# The peak RSS of one child, read by a wrapper so that the bench's own memory is not counted.
RSS = "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, capture_output=True); " \
      "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"


def scons(cwd, *args, profile=None):
    """(seconds, CC lines, CPU seconds) of one `scons -Q` that must succeed. CPU time (user +
    system) is the steadier figure on a shared machine: waiting for a core is not counted."""
    # A profile runs SCons's serial scheduler (-j1 and the legacy one): cProfile sees only the main
    # thread, and the default scheduler decides what is up to date in a thread of its own.
    argv = [sys.executable] + (["-m", "cProfile", "-o", profile] if profile else []) + ["-m", "SCons", "-Q", *args] + \
        (["-j1", "--experimental=legacy_sched_deprecated"] if profile else [])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=ENV)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(proc.stdout + proc.stderr)
    return elapsed, len(CC.findall(proc.stdout)), after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def project(tmp, n):
    """A copy of the repository whose models/ holds `n` copies of tiny_prebuilt."""
    repo = copy_repo(os.path.join(tmp, f"repo{n}"))
    models = os.path.join(repo, "models")
    for entry in os.listdir(models):
        if os.path.isdir(os.path.join(models, entry)):
            shutil.rmtree(os.path.join(models, entry))
    for i in range(n):
        shutil.copytree(os.path.join(ROOT, "models", "tiny_prebuilt"), os.path.join(models, f"tiny{i:02d}"))
    return repo


# SCons alone on a prebuilt model's graph: 3 source files; prepare (4 targets), 2 objects (each
# depending on 12 install headers), the link (elf + map, with 7 objects shared by every model and
# the linker script), the code image, pack (2); a code node per step kind; one alias each.
FLOOR = """
import os
def write(target, source, env):
    for t in target:
        with open(str(t), "w") as f:
            f.write(" ".join(s.name for s in source))
env = Environment(tools=[])
env.Decider("content")
shared = [env.Command(f"shared/o{k}.o", f"shared/s{k}.c", write) for k in range(7)]
headers = [f"shared/h{k}.h" for k in range(12)]
code_of = {step: env.Value(step + " code") for step in ("prepare", "compile", "image", "pack")}
for m in sorted(os.listdir("models")):
    b, src = f"build/{m}/", f"models/{m}/"
    prep = env.Command([b + "reloc.c", b + "mempools.c", b + "conf.h", b + "params.json"],
                       [src + "network.c", src + "c_info.json", code_of["prepare"]], write)
    objs = [env.Command(b + "reloc.o", prep[0:3:2] + headers, write),
            env.Command(b + "mempools.o", prep[1:3] + headers, write)]
    elf = env.Command([b + "network.elf", b + "network.map"], objs + shared + ["shared/script.ld"], write)
    code = env.Command(b + "code.bin", [elf[0], code_of["image"]], write)
    image = env.Command([b + "rel.bin", b + "results.json"], code + [prep[3], src + "w.raw", code_of["pack"]], write)
    env.Alias("build", env.Alias(m, image))
Default("build")
"""


def floor(tmp, n):
    """FLOOR's project of `n` models."""
    top = os.path.join(tmp, f"floor{n}")
    os.makedirs(os.path.join(top, "shared"))
    for name in [f"s{k}.c" for k in range(7)] + [f"h{k}.h" for k in range(12)] + ["script.ld"]:
        open(os.path.join(top, "shared", name), "w").write(name)
    for i in range(n):
        os.makedirs(os.path.join(top, "models", f"m{i:02d}"))
        for f in ("network.c", "c_info.json", "w.raw"):
            open(os.path.join(top, "models", f"m{i:02d}", f), "w").write(f"{i} {f}")
    open(os.path.join(top, "SConstruct"), "w").write(FLOOR)
    return top


def main():
    clean, profile = "--clean" in sys.argv, "--profile" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty")
        os.makedirs(empty)
        open(os.path.join(empty, "SConstruct"), "w").close()
        repos = {n: project(tmp, n) for n in SIZES}
        floors = {n: floor(tmp, n) for n in SIZES}
        builds = {n: scons(repo) for n, repo in repos.items()}
        for top in floors.values():
            scons(top)
        time.sleep(0.2)   # the builds' outputs settle: the first no-op walks the graph and records it

        def walk(repo, **kwargs):   # the no-op after a change elsewhere (the record gone): the graph walked
            forget(os.path.join(repo, "build", RECORD))
            return scons(repo, **kwargs)
        noop, ratio, cpu, cpu_ratio = {}, {}, {}, {}
        runs = [(("no-op", n), functools.partial(scons, r)) for n, r in repos.items()] + \
            [(("walking", n), functools.partial(walk, r)) for n, r in repos.items()] + \
            [(("floor", n), functools.partial(scons, top)) for n, top in floors.items()]
        for key, run in runs:
            pairs = [(run(), scons(empty)) for _ in range(PAIRS)]
            assert key[0] != "no-op" or holds(os.path.join(repos[key[1]], "build", RECORD)), \
                f"{key[1]} model(s): the no-ops left no record, they all walked the graph"
            noop[key] = statistics.median(a[0] for a, _ in pairs)
            ratio[key] = statistics.median(a[0] / b[0] for a, b in pairs)
            cpu[key] = statistics.median(a[2] for a, _ in pairs)
            cpu_ratio[key] = statistics.median(a[2] / b[2] for a, b in pairs)
            if profile and key[0] != "floor":
                run(profile=os.path.abspath(f"noop-{key[0]}-{key[1]}.prof"))
        empty_runs = [scons(empty) for _ in range(PAIRS)]
        empty_t, empty_cpu = (statistics.median(r[i] for r in empty_runs) for i in (0, 2))
        forget(os.path.join(repos[40], "build", RECORD))   # the walk's memory: a no-op that reads nothing needs less
        rss = subprocess.run([sys.executable, "-c", RSS, sys.executable, "-m", "SCons", "-Q"], cwd=repos[40],
                             capture_output=True, text=True, env=ENV, check=True).stdout.split()[-1]
        if clean:
            one = project(os.path.join(tmp, "clean"), 1)   # a fresh one: repo1 is built already
            shutil.rmtree(os.path.join(repos[40], "build"))
            many = scons(repos[40])
            single = scons(one)

    print(f"empty SConstruct no-op {empty_t * 1000:7.0f} ms, CPU {empty_cpu * 1000:6.0f} ms")
    for kind, what in KINDS.items():
        for n in SIZES:
            print(f"{kind + ',':<8} {n:2d} model(s) {noop[kind, n] * 1000:7.0f} ms  = {ratio[kind, n]:.2f}x an empty "
                  f"SConstruct's; CPU {cpu[kind, n] * 1000:6.0f} ms = {cpu_ratio[kind, n]:.2f}x ({what})")
    for kind in KINDS:
        print(f"growth per model (1 → 40), {kind}: {(noop[kind, 40] - noop[kind, 1]) / 39 * 1000:.2f} ms, CPU "
              f"{(cpu[kind, 40] - cpu[kind, 1]) / 39 * 1000:.2f} ms" + (" (goal <= 3 ms)" if kind == "no-op" else ""))
    print(f"peak RSS of the 40-model walking no-op: {int(rss) / 1024:.0f} MB")
    print("first builds: " + ", ".join(f"{n} model(s) {t:.1f} s, {cc} compiles" for n, (t, cc, _) in builds.items()))
    if clean:
        print(f"clean build of 40 models: {many[0]:.1f} s, {many[1]} compiles = {many[0] / (40 * single[0]):.2f}x "
              f"the time and {many[1] / (40 * single[1]):.2f}x the compiles of 40 one-model builds")


if __name__ == "__main__":
    main()
