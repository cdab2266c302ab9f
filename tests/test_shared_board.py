"""One board, several build folders: each step that flashes or runs holds the board's lock, the
board's record says which build flashed it last, and a run checks that the board runs the image
it flashed before it stores anything (n6.flash.shared_board, n6.run.identity)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, copy_repo, scons

pytestmark = pytest.mark.slow

MODELS = {"b1": "kws_mlp", "b2": "big_mlp"}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return copy_repo(tmp_path_factory.mktemp("shared-board-repo"))


def _board_env(repo):
    return {"N6_SIM_BOARD": os.path.join(repo, "shared-board")}


def _scons_bg(repo, *args, env=None):
    environ = dict(os.environ, **(env or {}))
    return subprocess.Popen([sys.executable, "-m", "SCons", "-Q", *args], cwd=repo, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=environ)


def _own_result(repo, build, model):
    """The stored run is `model`'s: the outputs as its ONNX model shapes them, and validated."""
    run_dir = os.path.join(repo, build, model, "run")
    run = json.load(open(os.path.join(run_dir, "run.json")))
    image = os.path.join(repo, build, model, "network_rel.bin")
    from n6.run.identity import ImageIdentity
    assert run["activations"] == ImageIdentity.of(image).activations
    import onnxruntime
    session = onnxruntime.InferenceSession(os.path.join(repo, "models", model, "model.onnx"))
    want = [int(np.prod(o.shape)) for o in session.get_outputs()]
    assert [int(np.prod(o["shape"])) for o in run["outputs"]] == want
    assert json.load(open(os.path.join(run_dir, "validate.json")))["passed"]


def test_two_build_folders_validate_different_models_on_one_board_concurrently(repo):
    env = _board_env(repo)
    for build, model in MODELS.items():
        scons(repo, "flash", f"MODEL={model}", f"BUILD_DIR={build}", env=env)
    for seed in range(20):
        procs = {build: _scons_bg(repo, "validate", f"MODEL={model}", f"BUILD_DIR={build}", f"SEED={seed}",
                                  "RUNS=1", "VALIDATE_TOLERANCE=0", env=env)
                 for build, model in MODELS.items()}
        for build, proc in procs.items():
            out = proc.communicate(timeout=600)[0]
            assert proc.returncode == 0, f"round {seed}, {build}: {out}"
            assert "  RUN " in out, f"round {seed}, {build}: {out}"
        for build, model in MODELS.items():
            _own_result(repo, build, model)


def test_port_of_a_board_holding_another_model_is_refused_before_anything_is_stored(repo):
    from n6.run.session import simulated_board
    env = _board_env(repo)
    scons(repo, "flash", "MODEL=kws_mlp", "BUILD_DIR=b1", env=env)
    run_dir = os.path.join(repo, "b1", "kws_mlp", "run")
    if os.path.isdir(run_dir):
        for name in os.listdir(run_dir):
            os.unlink(os.path.join(run_dir, name))
    other = os.path.join(repo, "b2", "big_mlp", "network_rel.bin")
    if not os.path.exists(other):
        scons(repo, "flash", "MODEL=big_mlp", "BUILD_DIR=b2", env=env)
    board_file = os.path.join(ROOT, "firmware", "boards", "stm32n6570-dk.toml")
    with simulated_board(board_file, image=other) as port:
        proc = scons(repo, "run", "MODEL=kws_mlp", "BUILD_DIR=b1", f"PORT={port}", check=False, env=env)
    errors = [line for line in proc.stdout.splitlines() + proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert proc.returncode != 0 and len(errors) == 1 and "Traceback" not in proc.stderr
    assert f"{port}: the board's model 'network' is not the one in b1/kws_mlp/network_rel.bin: activations" \
        in errors[0] and "(fix: flash this board with the model" in errors[0]
    assert not os.path.exists(os.path.join(run_dir, "run.json"))
    assert not [f for f in os.listdir(run_dir) if f.startswith("output_")] if os.path.isdir(run_dir) else True
    # the stamp went: the next run (without PORT=) flashes the model again, and runs it
    again = scons(repo, "run", "MODEL=kws_mlp", "BUILD_DIR=b1", env=env)
    assert "  FLASH" in again.stdout and os.path.exists(os.path.join(run_dir, "run.json"))
