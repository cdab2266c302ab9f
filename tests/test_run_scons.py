"""`scons flash run validate` end to end with the simulated programmer and board: outputs equal
the host build of the same generated C, validation against onnxruntime, reruns only when the
board's content or the options change, board faults as one-line errors leaving no run.json."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import copy_repo, scons


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return copy_repo(tmp_path_factory.mktemp("run-repo"))


def _host(root, model, tmp_path, inputs):
    """The host build of the same generated C (n6.run.host_reference) on the same inputs."""
    from n6.run import host_reference
    folder = os.path.join(root, "build", model, "st_ai_output") if model != "tiny_prebuilt" else \
        os.path.join(root, "models", model)
    out = host_reference.run(folder, os.path.join(root, "build", "stedgeai-sim", "2.2"), [[x] for x in inputs], 1)
    return [o[0] for o in out]


@pytest.mark.parametrize("model", ["kws_mlp", "cifar_cnn", "big_mlp", "tiny_prebuilt"])
def test_flash_run_validate(repo, tmp_path, model):
    proc = scons(repo, "flash", "run", "validate", f"MODEL={model}", "RUNS=3", "SEED=5")
    assert "  RUN      " in proc.stdout and "simulated" in proc.stdout
    run_dir = os.path.join(repo, "build", model, "run")
    run = json.load(open(os.path.join(run_dir, "run.json")))
    assert run["simulated"] and len(run["runs"]) == 3
    (out,) = [f for f in os.listdir(run_dir) if f.startswith("output_")]
    got = np.load(os.path.join(run_dir, out))
    inputs = [bytes.fromhex(bufs[0]) for bufs in run["inputs_data"]]
    assert [g.tobytes() for g in got] == _host(repo, model, tmp_path, inputs)
    val = json.load(open(os.path.join(run_dir, "validate.json")))
    assert val["passed"] and val["outputs"][0]["max_abs_lsb"] <= 2 and val["outputs"][0]["top1"] == 1.0
    assert ("host build" if model == "tiny_prebuilt" else "onnxruntime") in val["reference"]
    if model == "tiny_prebuilt":          # the same code on the same inputs
        assert val["outputs"][0]["max_abs_lsb"] == 0
    again = scons(repo, "run", "validate", f"MODEL={model}", "RUNS=3", "SEED=5")
    assert "  RUN " not in again.stdout and "VALIDATE" not in again.stdout
    other = scons(repo, "run", f"MODEL={model}", "RUNS=3", "SEED=6")
    assert "  RUN " in other.stdout and "  FLASH" not in other.stdout
    timed = scons(repo, "run", f"MODEL={model}", "RUNS=1", "RUN_PER_LAYER=1")
    summary = json.load(open(os.path.join(run_dir, "run.json")))
    assert "ms / inference (simulated" in timed.stdout and summary["ms_per_inference"] > 0
    assert summary["epochs"] and summary["runs"][0]["cycles"] == sum(e["cycles"] for e in summary["epochs"])
    strict = scons(repo, "validate", f"MODEL={model}", "RUNS=3", "SEED=6", "VALIDATE_TOLERANCE=-1", check=False)
    assert strict.returncode != 0 and "beyond -1.0 LSB" in strict.stderr
    assert os.path.exists(os.path.join(run_dir, "validate-failed.json"))
    assert not os.path.exists(os.path.join(run_dir, "validate.json"))


def test_board_fault_is_one_line_and_leaves_no_run_json(repo):
    scons(repo, "flash", "MODEL=kws_mlp")
    run_json = os.path.join(repo, "build", "kws_mlp", "run", "run.json")
    if os.path.exists(run_json):
        os.unlink(run_json)
    env = dict(os.environ, N6_SIM_BOARD_FAULT="silence")
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", "run", "MODEL=kws_mlp"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert len(errors) == 1 and "no answer to SYNC" in errors[0] and "Traceback" not in proc.stderr
    assert not os.path.exists(run_json)


def test_multi_model_board_of_a_3x_release(tmp_path):
    """3.x: both models behind the multi-model header are installed and each run finds its own."""
    repo = copy_repo(tmp_path / "repo")
    (tmp_path / "repo" / "models" / "kws_mlp" / "model.json").write_text(json.dumps({"name": "kws"}))
    proc = scons(repo, "flash", "run", "STEDGEAI_SIM_RELEASE=3.0", "MODEL=kws_mlp,big_mlp", check=False)
    assert "2 models named" not in proc.stderr and proc.returncode == 0, proc.stderr
    assert "multi-model header" in proc.stdout
    runs = {m: json.load(open(os.path.join(repo, "build", m, "run", "run.json"))) for m in ("kws_mlp", "big_mlp")}
    assert runs["kws_mlp"]["model"] == "kws" and runs["big_mlp"]["model"] == "network"
    assert runs["kws_mlp"]["outputs"][0]["shape"] == [12] and runs["big_mlp"]["outputs"][0]["shape"] == [10]
