"""Shared fixtures: the simulated ST Edge AI Core installed per release, a runner for its CLI,
and copies of the repository for end-to-end SCons runs."""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SITE = os.path.join(ROOT, "site_scons")
SIM = os.path.join(ROOT, "sim", "stedgeai")
MODELS = os.path.join(ROOT, "models")
BUNDLED = ("kws_mlp", "cifar_cnn", "big_mlp")


def every_model():
    """The names of the bundled model folders, as the build finds them (n6.models.discover)."""
    from n6.models import discover
    return [spec.name for spec in discover(MODELS)[0]]


SIM_PROGRAMMER = os.path.join(ROOT, "sim", "programmer")
SIM_BOARD = os.path.join(ROOT, "sim", "board")
SIM_NPU = os.path.join(ROOT, "sim", "npu")
for p in (SITE, SIM, SIM_PROGRAMMER, SIM_BOARD, SIM_NPU, MODELS):
    if p not in sys.path:
        sys.path.insert(0, p)
os.environ.pop("N6_SIM_BOARD", None)     # the tests' builds flash <build dir>/sim-board, not the shell's board
os.environ.pop("N6_SIM_FIRMWARE", None)  # and the simulated board runs its own firmware unless a test says otherwise


@pytest.fixture(scope="session")
def sim_install(tmp_path_factory):
    """sim_install(release) → root of a simulated install tree (without the runtime archive)."""
    from stedgeai_sim.install import materialize
    roots = {}

    def get(release="2.2"):
        if release not in roots:
            root = tmp_path_factory.mktemp(f"stedgeai-{release}")
            materialize(str(root), release)
            roots[release] = str(root)
        return roots[release]
    return get


class Stedgeai:
    def __init__(self, root):
        self.root = root
        self.cli = os.path.join(root, "Utilities", "linux", "stedgeai")

    def run(self, *args, cwd=None):
        return subprocess.run([self.cli, *args], capture_output=True, text=True, cwd=cwd, timeout=300)

    def generate(self, model, out, *extra, profile="default", profile_file=None, cwd=None):
        model_dir = os.path.join(MODELS, model) if not os.path.isabs(model) else os.path.dirname(model)
        model_file = model if model.endswith((".onnx", ".tflite")) else next(
            os.path.join(model_dir, f) for f in sorted(os.listdir(model_dir)) if f.endswith((".onnx", ".tflite")))
        profile_file = profile_file or os.path.join(model_dir, "neural_art.json")
        return self.run("generate", "-m", model_file, "--target", "stm32n6", "--st-neural-art",
                        f"{profile}@{profile_file}", "-o", str(out), "-w", str(out) + "_ws", *extra, cwd=cwd)


@pytest.fixture(scope="session")
def stedgeai(sim_install):
    """stedgeai(release) → a runner for the simulated CLI of that release."""
    return lambda release="2.2": Stedgeai(sim_install(release))


@pytest.fixture(scope="session")
def generated(stedgeai, tmp_path_factory):
    """generated(model, release, name) → output folder of one simulated generate (cached)."""
    cache = {}

    def get(model, release="2.2", name=None):
        key = (model, release, name)
        if key not in cache:
            out = tmp_path_factory.mktemp(f"gen-{model}-{release}") / "st_ai_output"
            proc = stedgeai(release).generate(model, out, *(["-n", name] if name else []))
            assert proc.returncode == 0, proc.stderr
            cache[key] = str(out)
        return cache[key]
    return get


def copy_repo(dest):
    """The files of the repository as a fresh clone has them (tracked + new, not ignored)."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for rel in files:
        src = os.path.join(ROOT, rel)
        if os.path.isfile(src):
            os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, rel))
    return dest


def sample_as_model(repo, bed, name):
    """ST's sample `name` of the test bed `bed` (its stedgeai outputs) as a prebuilt model of `repo`."""
    shutil.copytree(os.path.join(bed, "samples", name), os.path.join(repo, "models", name),
                    ignore=shutil.ignore_patterns("SOURCE.txt"))


def name_source(repo, bed, name):
    """The prebuilt sample `name` naming its published source model (from the test bed `bed`)."""
    folder = os.path.join(repo, "models", name)
    shutil.copy(os.path.join(bed, "sources", name, "model.tflite"), folder)
    with open(os.path.join(folder, "model.json"), "w") as f:
        json.dump({"source": "model.tflite"}, f)


def forget_boards(build):
    """Forget every run, flash and simulated board of the build folder `build`: the next run or
    validate flashes and runs every model again."""
    for name in os.listdir(build):
        if name.startswith("sim-board"):
            shutil.rmtree(os.path.join(build, name))
        for step in ("run", "flash"):
            shutil.rmtree(os.path.join(build, name, step), ignore_errors=True)


def scons(cwd, *args, check=True, env=None, timeout=600):
    """`scons -Q args` in `cwd`; `env`: variables set on top of this process's (None: removed)."""
    environ = {k: v for k, v in dict(os.environ, **(env or {})).items() if v is not None}
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=environ)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def generate(model, out, profile_file):
    """`stedgeai generate` run in this process through the simulated CLI's own entry point (no
    interpreter start per model); the default release, install paths as outside an install."""
    from stedgeai_sim.cli import run as stedgeai_cli
    assert stedgeai_cli(["generate", "-m", str(model), "--target", "stm32n6", "--st-neural-art",
                         f"default@{profile_file}", "-o", str(out), "-w", str(out) + "_ws"]) == 0
    return str(out)


def host_build(out, install, workdir):
    """The product's host reference of the generated folder `out`: (executable, c_info)."""
    import json
    from n6.run import host_reference
    with open(os.path.join(out, "network_c_info.json")) as f:
        info = json.load(f)
    return host_reference.build(str(out), install, str(workdir)), info


def host_run(exe, workdir, feed):
    """The host reference on the first input's samples `feed` (any number, in memory layout):
    the first output's bytes, the samples' back to back."""
    import numpy as np
    from n6.run import host_reference
    return host_reference.execute(str(exe), str(workdir), [np.ascontiguousarray(feed).tobytes()], 1)[0]


def host_outputs(root, model, inputs):
    """The host build of the same generated C (n6.run.host_reference) on the same inputs."""
    from n6.run import host_reference
    folder = os.path.join(root, "build", model, "st_ai_output") if model != "tiny_prebuilt" else \
        os.path.join(root, "models", model)
    out = host_reference.run(folder, os.path.join(root, "build", "stedgeai-sim", "2.2"), [[x] for x in inputs], 1)
    return [o[0] for o in out]


_CLOCK = [0]


def flip_bytes(path, offsets):
    """New content at `offsets` of `path`, same size (a weight change), and a later mtime."""
    with open(path, "r+b") as f:
        for at in offsets:
            f.seek(at)
            b = f.read(1)
            f.seek(at)
            f.write(bytes([b[0] ^ 0x5A]))
    bump(path)


def bump(path):
    """Give `path` a whole-second mtime later than any before: SCons compares whole seconds."""
    _CLOCK[0] = max(_CLOCK[0], int(time.time())) + 2
    os.utime(path, (_CLOCK[0], _CLOCK[0]))


def stedgeai_output_folder(dest, network="network"):
    """What `stedgeai generate` leaves in its output folder (the `_OE_` intermediates, license,
    hex dump next to the network), made of the bundled prebuilt network."""
    dest = Path(dest)
    dest.mkdir()
    src = os.path.join(MODELS, "tiny_prebuilt")
    for f in os.listdir(src):
        shutil.copyfile(os.path.join(src, f), dest / f.replace("network", network))
    for side in ("model_OE_3_3_0.onnx", "model_OE_3_3_0_Q.json", "LICENSE.txt", f"{network}_data.hex"):
        (dest / side).write_bytes(b"side file")
    return dest


def absolute_flash_pool(repo, model):
    """Leave `model`'s xSPI2 weights pool in its .mpool at its absolute address (the .mpool's
    default mode: 0x71000000), as ST's samples have it."""
    mpool = os.path.join(repo, "models", model, f"{model}.mpool")
    with open(mpool) as f:
        spec = json.load(f)
    for pool in spec["memory"]["mempools"]:
        if pool["fname"] == "xSPI2":
            del pool["mode"]
    with open(mpool, "w") as f:
        json.dump(spec, f)


def make_prebuilt(repo, model):
    """Turn a built source model into a prebuilt folder of its generated outputs (so a test can
    change one .raw byte); returns the folder."""
    src, out = os.path.join(repo, "models", model), os.path.join(repo, "build", model, "st_ai_output")
    shutil.rmtree(src)
    os.makedirs(src)
    for f in os.listdir(out):
        if f.endswith((".c", ".h", ".raw", "_c_info.json")):
            shutil.copyfile(os.path.join(out, f), os.path.join(src, f))
    return src
