"""`scons flash run validate` end to end with the simulated programmer and board: outputs equal
the host build of the same generated C, validation against onnxruntime, reruns only when the
board's content or the options change, board faults as one-line errors leaving no run.json."""
import json
import os
import shutil

import numpy as np
import pytest

from conftest import copy_repo, host_outputs, scons

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return copy_repo(tmp_path_factory.mktemp("run-repo"))


def _bundled():
    models = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")
    return sorted(d for d in os.listdir(models) if os.path.isdir(os.path.join(models, d)))


# What each bundled model meets against its reference, in output LSB (max over the outputs), with
# the same top-1 everywhere. ONNX source models against onnxruntime's default session (integer
# QLinear operators), measured on seeds 5-7: kws_mlp, cifar_cnn, big_mlp 0 (exact: 0 here too) and
# digits_mlp 1 (1 allows a rounding tie), mobilenet_v2 0 (1 on seed 8), tiny_yolo 0 (seeds 5-9). The
# .tflite source (ds_cnn) against LiteRT, the prebuilt folder against the host build of its generated C:
# exact. The board equals the host build exactly in every case. kws_mlp_f32 is kws_mlp built with float
# inputs and outputs: the same tolerance as its int8 form, in LSB of the int8 grid behind its outputs.
TOLERANCE_LSB = {"kws_mlp": 0, "cifar_cnn": 0, "big_mlp": 0, "digits_mlp": 1, "tiny_prebuilt": 0, "ds_cnn": 0,
                 "mobilenet_v2": 0, "tiny_yolo": 0, "fusion_mlp": 0, "kws_mlp_f32": 0, "mobilenet_v2_u8": 0}
# Runs per seed: 3, or 1 where the emulator is slow for the model.
RUNS = {"mobilenet_v2": 1, "ds_cnn": 1, "tiny_yolo": 1, "mobilenet_v2_u8": 1}


def test_every_bundled_model_has_a_tolerance():
    assert sorted(TOLERANCE_LSB) == _bundled()


@pytest.mark.parametrize("model", _bundled())
def test_flash_run_validate(repo, model):
    n = RUNS.get(model, 3)
    tol = f"VALIDATE_TOLERANCE={TOLERANCE_LSB[model]}"
    proc = scons(repo, "flash", "run", "validate", f"MODEL={model}", f"RUNS={n}", "SEED=5", tol)
    assert "  RUN      " in proc.stdout and "simulated" in proc.stdout
    run_dir = os.path.join(repo, "build", model, "run")
    run = json.load(open(os.path.join(run_dir, "run.json")))
    assert run["simulated"] and len(run["runs"]) == n
    out = sorted(f for f in os.listdir(run_dir) if f.startswith("output_"))[0]
    got = np.load(os.path.join(run_dir, out))
    inputs = [bytes.fromhex(bufs[0]) for bufs in run["inputs_data"]]
    if len(run["inputs"]) == 1:            # the multi-input model: test_two_inputs_two_outputs
        assert [g.tobytes() for g in got] == host_outputs(repo, model, inputs)
    val = json.load(open(os.path.join(run_dir, "validate.json")))
    assert val["passed"] and len(run["inputs_data"]) == n and len(set(map(str, run["inputs_data"]))) == n
    assert all(o["max_abs_lsb"] <= TOLERANCE_LSB[model] and o["top1"] == 1.0 for o in val["outputs"])
    framework = {"model.onnx": "onnxruntime ", "model.tflite": "LiteRT "}
    source = [f for f in framework if os.path.exists(os.path.join(repo, "models", model, f))]
    assert (framework[source[0]] if source else "host build") in val["reference"]
    test_data = os.path.join(repo, "models", model, "test_data.npz")
    if os.path.exists(test_data):    # the trained model's test set: accuracy on the board next to the reference's
        acc, labels = val["accuracy"], np.load(test_data)["y"]
        assert acc["samples"] == len(labels) and "top-1 accuracy" in proc.stdout
        assert abs(acc["board"]["correct"] - acc["reference"]["correct"]) <= 1 and acc["board"]["accuracy"] > 0.8
    else:
        assert "accuracy" not in val
    again = scons(repo, "run", "validate", f"MODEL={model}", f"RUNS={n}", "SEED=5", tol)
    assert "  RUN " not in again.stdout and "VALIDATE" not in again.stdout
    other = scons(repo, "run", f"MODEL={model}", f"RUNS={n}", "SEED=6")
    assert "  RUN " in other.stdout and "  FLASH" not in other.stdout
    io_only = json.load(open(os.path.join(run_dir, "run.json")))      # timed from the run reply, every run
    assert "ms / inference (simulated: the CPU 1 cycle per instruction at 800 MHz, the NPU model's chains by its " \
        "estimate)" in other.stdout and "in all (the split needs RUN_PER_LAYER=1)" in other.stdout
    assert all(r["cycles"] > 0 and r["cpu_cycles"] is None and r["npu_cycles"] is None for r in io_only["runs"])
    assert io_only["ms_per_inference"] == pytest.approx(io_only["cycles_per_inference"] / 800e3, rel=1e-3)
    timed = scons(repo, "run", f"MODEL={model}", "RUNS=1", "RUN_PER_LAYER=1")
    summary = json.load(open(os.path.join(run_dir, "run.json")))
    assert "ms / inference (simulated" in timed.stdout and summary["ms_per_inference"] > 0
    assert summary["epochs"] and summary["runs"][0]["cycles"] == sum(e["cycles"] for e in summary["epochs"])
    scons(repo, "run", f"MODEL={model}", f"RUNS={n}", "SEED=6")
    damaged = np.load(os.path.join(run_dir, out))      # an output off by far more than an LSB
    damaged.view(np.uint8).flat[damaged.itemsize - 1] ^= 0x40
    kept = open(os.path.join(run_dir, out), "rb").read()
    np.save(os.path.join(run_dir, out), damaged)
    rerun = scons(repo, "validate", f"MODEL={model}", f"RUNS={n}", "SEED=6")    # changed outside the build
    assert "  RUN " in rerun.stdout and open(os.path.join(run_dir, out), "rb").read() == kept
    wrong = {"N6_SIM_BOARD_FAULT": f"wrong-output:{json.load(open(os.path.join(run_dir, 'run.json')))['model']}"}
    strict = scons(repo, "validate", f"MODEL={model}", f"RUNS={n}", "SEED=7", "VALIDATE_TOLERANCE=0", check=False,
                   env=wrong)
    assert strict.returncode != 0 and "beyond 0.0 LSB" in strict.stderr
    assert os.path.exists(os.path.join(run_dir, "validate-failed.json"))
    assert not os.path.exists(os.path.join(run_dir, "validate.json"))


def test_float_io_model_validates_like_its_int8_form(repo, tmp_path):
    """kws_mlp_f32 (kws_mlp with "input_data_type"/"output_data_type" float32): the board quantises
    the float inputs and dequantises the int8 outputs, so its outputs are kws_mlp's on the
    quantised inputs, dequantised; validate passes within kws_mlp's tolerance, on inputs with
    rounding ties and out-of-range values too, and counts errors in LSB of the output's int8 grid."""
    from n6.run.reference import dequantize_as_deployed, io_quantization, quantize_as_deployed
    assert TOLERANCE_LSB["kws_mlp_f32"] == TOLERANCE_LSB["kws_mlp"]
    (grid_in,), (grid_out,) = io_quantization(os.path.join(repo, "models", "kws_mlp_f32", "model.onnx"))
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 490)).astype(np.float32)
    x[0, :40] = (np.arange(-20, 20) + 0.5) * np.float32(grid_in[0])      # halfway between two steps
    x[1, :4] = [1e3, -1e3, 127.5 * grid_in[0], -200 * grid_in[0]]       # beyond the int8 range
    np.save(tmp_path / "x.npy", x)
    tol = f"VALIDATE_TOLERANCE={TOLERANCE_LSB['kws_mlp']}"
    proc = scons(repo, "flash", "run", "validate", "MODEL=kws_mlp_f32", "RUNS=3", f"INPUTS={tmp_path / 'x.npy'}", tol)
    assert "input  input_float32: float32 [1, 490]" in proc.stdout
    run_dir = os.path.join(repo, "build", "kws_mlp_f32", "run")
    board = np.load(os.path.join(run_dir, "output_q_18_float32.npy"))
    val = json.load(open(os.path.join(run_dir, "validate.json")))
    assert val["passed"] and val["outputs"][0]["max_abs_lsb"] <= TOLERANCE_LSB["kws_mlp"]

    q = quantize_as_deployed(x, *grid_in)            # the int8 model on the quantised inputs
    np.save(tmp_path / "q.npy", q)
    scons(repo, "flash", "run", "validate", "MODEL=kws_mlp", "RUNS=3", f"INPUTS={tmp_path / 'q.npy'}", tol)
    int8 = np.load(os.path.join(repo, "build", "kws_mlp", "run", "output_q_18.npy"))
    assert board.dtype == np.float32 and int8.dtype == np.int8
    assert np.array_equal(board, dequantize_as_deployed(int8, *grid_out))

    scons(repo, "flash", "run", "MODEL=kws_mlp_f32", "RUNS=3", f"INPUTS={tmp_path / 'x.npy'}")
    board[1, 5] += 2 * np.float32(grid_out[0])     # two LSB of the output's grid: beyond the tolerance
    from n6.run import reference, validate
    from n6.run.inference import RunRecord
    record = RunRecord.load(os.path.join(run_dir, "run.json"))
    ref = reference.run_source(os.path.join(repo, "models", "kws_mlp_f32", "model.onnx"), record.model, record.inputs)
    _, report, passed = validate.validate(record.model, [board], ref.outputs, 1.5, ref.name, ref.lsb)
    assert not passed and report["outputs"][0]["max_abs_lsb"] == pytest.approx(2.0)


def test_board_fault_is_one_line_and_leaves_no_run_json(repo):
    scons(repo, "flash", "MODEL=kws_mlp")
    run_json = os.path.join(repo, "build", "kws_mlp", "run", "run.json")
    if os.path.exists(run_json):
        os.unlink(run_json)
    proc = scons(repo, "run", "MODEL=kws_mlp", env={"N6_SIM_BOARD_FAULT": "silence"}, check=False, timeout=120)
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
    assert runs["kws_mlp"]["outputs"][0]["shape"] == [1, 12] and runs["big_mlp"]["outputs"][0]["shape"] == [1, 10]
    scons(repo, "validate", "MODEL=kws_mlp")       # then 2.2: the 3.x set the board held is no 2.2 set


def test_3x_models_of_one_c_name_take_the_board_in_turn(tmp_path):
    """The bundled models are all `network` on the board, and ST's firmware runs the first model of
    a name: a 3.x whole-project validate puts them on the board one set each, and a flash of two
    of them together is refused in one line before anything is written."""
    from programmer_sim.board_state import BoardState
    repo = copy_repo(tmp_path / "repo")
    release, three = "STEDGEAI_SIM_RELEASE=3.0", ["big_mlp", "digits_mlp", "kws_mlp"]
    proc = scons(repo, "validate", release, "MODEL=" + ",".join(three))
    assert json.load(open(os.path.join(repo, "build", "validate-summary.json")))["failed"] == 0, proc.stdout
    assert [json.load(open(os.path.join(repo, "build", m, "flash", "on_board.json")))["set"] for m in three[2:]] == \
        [["kws_mlp"]]
    state = BoardState(os.path.join(repo, "build", "sim-board"))
    calls = len(state.events("call"))
    proc = scons(repo, "flash", release, "MODEL=kws_mlp,big_mlp", check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert proc.returncode == 2 and len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "build/big_mlp/network_rel.bin: its model is named 'network' on the board, as build/kws_mlp/" \
        "network_rel.bin's is" in errors[0] and "(fix: give each model its own c-name" in errors[0]
    assert len(state.events("call")) == calls
    kept = scons(repo, "-k", "flash", "run", release, "MODEL=kws_mlp,big_mlp", check=False)   # the set's step failed:
    rows = json.load(open(os.path.join(repo, "build", "run-summary.json")))["models"]      # each model's error row
    assert kept.returncode == 2 and [(r["model"], r["result"]) for r in rows] == [("big_mlp", "error"),
                                                                                 ("kws_mlp", "error")], kept.stdout
    assert "not run:" not in kept.stdout


def test_two_inputs_two_outputs(repo, tmp_path):
    """fusion_mlp: an .npz with one array per input (any batch: the runs), both outputs saved with
    the runs on the first axis, per-epoch tensors with RUN_PER_LAYER=data, a perf-only run that
    brings no outputs back (and nothing to validate)."""
    rng = np.random.default_rng(3)
    audio, motion = (rng.integers(-128, 128, (2, 1, n)).astype(np.int8) for n in (40, 24))
    inputs = tmp_path / "in.npz"
    np.savez(inputs, audio=audio, motion=motion)
    proc = scons(repo, "flash", "run", "validate", "MODEL=fusion_mlp", "RUNS=2", f"INPUTS={inputs}",
                 "RUN_PER_LAYER=data", "VALIDATE_TOLERANCE=0")
    assert "input  audio: int8 [1, 40]" in proc.stdout and "input  motion: int8 [1, 24]" in proc.stdout
    run_dir = os.path.join(repo, "build", "fusion_mlp", "run")
    run = json.load(open(os.path.join(run_dir, "run.json")))
    outs = [np.load(os.path.join(run_dir, f"output_{o['name']}.npy")) for o in run["outputs"]]
    assert [o.shape for o in outs] == [(2, 6), (2, 3)]
    assert bytes.fromhex(run["inputs_data"][1][1]) == motion[1].tobytes()
    saved = {e["tensor"]: np.load(os.path.join(run_dir, e["file"])) for e in run["epoch_tensors"]}
    assert set(saved) == {o["name"] for o in run["outputs"]}          # each output, at the epoch writing it
    assert all(np.array_equal(saved[o["name"]], out) for o, out in zip(run["outputs"], outs))
    perf = scons(repo, "run", "MODEL=fusion_mlp", "RUNS=2", "RUN_MODE=perf")
    assert "ms / inference" in perf.stdout and not any(f.startswith("output_") for f in os.listdir(run_dir))
    assert json.load(open(os.path.join(run_dir, "run.json")))["mode"] == "perf"
    refused = scons(repo, "validate", "MODEL=fusion_mlp", "RUNS=2", "RUN_MODE=perf", check=False)
    assert refused.returncode != 0 and "RUN_MODE=io" in refused.stderr and "Traceback" not in refused.stderr


def _deploy_lines(stdout):
    """(verb, model) of the RUN / FLASH / VALIDATE / PROFILE progress lines, in order."""
    out = []
    for line in stdout.splitlines():
        parts = line.split()
        if line.startswith("  ") and parts and parts[0] in ("RUN", "FLASH", "VALIDATE", "PROFILE"):
            out.append((parts[0], parts[1].split("/")[1]))
    return out


def test_a_step_says_flash_before_it_runs_on_the_board(repo):
    """A run, a validate with a test set and a profile put their model on the board first: the
    FLASH line comes before the step's own line, not after it."""
    scons(repo, "run", "MODEL=kws_mlp")
    proc = scons(repo, "run", "validate", "MODEL=digits_mlp", "RUNS=1")
    assert _deploy_lines(proc.stdout) == [("FLASH", "digits_mlp"), ("RUN", "digits_mlp"), ("VALIDATE", "digits_mlp")]
    proc = scons(repo, "profile", "MODEL=kws_mlp")
    assert _deploy_lines(proc.stdout) == [("FLASH", "kws_mlp"), ("PROFILE", "kws_mlp")]


def test_whole_project_validate_one_model_at_a_time(repo):
    """`scons validate` without MODEL= on a one-model (2.x) board: each model put on the board
    right before its run (and nothing else in between), one summary (table + JSON); nothing run or
    flashed again when nothing changed. A model whose board output differs from its reference
    (the simulated board's `wrong-output` fault) fails the command; with -k every other model is
    still validated and the summary reports all of them."""
    bad = os.path.join(repo, "models", "kws_bad")
    shutil.copytree(os.path.join(repo, "models", "kws_mlp"), bad)
    with open(os.path.join(bad, "model.json"), "w") as f:
        json.dump({"name": "kws_bad"}, f)
    models = sorted(_bundled() + ["kws_bad"])
    summary_json = os.path.join(repo, "build", "validate-summary.json")
    try:
        proc = scons(repo, "validate", "SEED=11")
        lines = _deploy_lines(proc.stdout)
        runs = [m for verb, m in lines if verb == "RUN"]
        assert sorted(runs) == models
        assert lines[-1][0] != "FLASH"
        for (verb, m), after in zip(lines, lines[1:]):       # a flash only right before its model's RUN line
            assert verb != "FLASH" or after == ("RUN", m)
        summary = json.load(open(summary_json))
        assert [r["model"] for r in summary["models"]] == models and summary["failed"] == 0
        assert all(r["result"] == "passed" and r["max_lsb"] <= 2 and r["inf_per_s"] > 0 for r in summary["models"])
        assert f"validate summary: {len(models)} of {len(models)} models passed" in proc.stdout
        table = proc.stdout[proc.stdout.index("validate summary"):].splitlines()
        assert table[1].split() == ["model", "result", "rule", "max", "err", "LSB", "top-1", "agree", "%", "test-set",
                                    "top-1", "%", "inf/s", "ms", "(simulated)"]
        digits = next(line for line in table if line.startswith("digits_mlp"))
        assert digits.split()[1:9] == ["passed", "<=", "2", "LSB,", "same", "top-1", "1", "100.0"]
        assert digits.split()[9] == "97.0"       # 291 of 300 on the board
        again = scons(repo, "validate", "SEED=11")
        assert not _deploy_lines(again.stdout) and "is up to date" in again.stdout
        assert f"{len(models)} of {len(models)} models passed" in again.stdout

        fault = {"N6_SIM_BOARD_FAULT": "wrong-output:kws_bad"}
        stopped = scons(repo, "validate", "SEED=12", env=fault, check=False)
        assert stopped.returncode == 2 and "Traceback" not in stopped.stderr
        assert [line for line in stopped.stderr.splitlines() if line.startswith("scons: ***")] == \
            ["scons: *** [build/kws_bad/run/validate.json] build/kws_bad/run/validate.json: outputs differ from the "
             "reference beyond 2.0 LSB (see validate-failed.json) (fix: check the model and VALIDATE_TOLERANCE=)"]
        rows = {r["model"]: r for r in json.load(open(summary_json))["models"]}
        assert rows["kws_bad"]["result"] == "failed" and rows["kws_bad"]["max_lsb"] > 2
        # the sets go on the board in name order (the held one first): kws_bad is never last, so the
        # models after it were not reached
        not_run = [r for r in rows.values() if r["result"] == "not run"]
        assert not_run and all(r["inf_per_s"] is None and r["max_lsb"] is None for r in not_run)
        assert "not run: the build stopped at the first failure" in stopped.stdout
        kept = scons(repo, "-k", "validate", "SEED=13", env=fault, check=False)
        assert kept.returncode == 2 and sorted(m for v, m in _deploy_lines(kept.stdout) if v == "VALIDATE") == models
        summary = json.load(open(summary_json))
        assert (summary["passed"], summary["failed"]) == (len(models) - 1, 1)
        rows = {r["model"]: r for r in summary["models"]}
        assert rows["kws_bad"]["result"] == "failed" and "beyond 2.0 LSB" in rows["kws_bad"]["error"]
        assert all(r["result"] == "passed" for m, r in rows.items() if m != "kws_bad")
        assert f"validate summary: {len(models) - 1} of {len(models)} models passed" in kept.stdout
        for m in models:
            run = json.load(open(os.path.join(repo, "build", m, "run", "run.json")))
            assert run["inputs_data"] != [] and os.path.exists(os.path.join(
                repo, "build", m, "run", "validate-failed.json" if m == "kws_bad" else "validate.json"))
    finally:
        shutil.rmtree(bad)


def test_3x_board_keeps_the_flashed_set_and_validates_in_sets_of_four(tmp_path):
    """3.x: running one model of the four-model set on the board keeps the set (no programmer
    call, the board's header still names all four); a several-model validate puts the set the
    board holds first and the rest in sets of up to four, one programmer call per set."""
    from programmer_sim.board_state import BoardState
    repo = copy_repo(tmp_path / "repo")
    release = "STEDGEAI_SIM_RELEASE=3.0"
    first = ["digits_mlp", "fusion_mlp", "kws_mlp", "kws_mlp_f32"]
    six = first + ["big_mlp", "cifar_cnn"]
    for m in six:                      # models on one board need names of their own
        path = tmp_path / "repo" / "models" / m / "model.json"
        spec = json.loads(path.read_text()) if path.exists() else {}
        path.write_text(json.dumps(dict(spec, name=m)))
    state = BoardState(os.path.join(repo, "build", "sim-board"))
    scons(repo, "flash", release, "MODEL=" + ",".join(first))
    header = state.read(0x71000000, 64)
    calls = len(state.events("call"))
    proc = scons(repo, "run", release, "MODEL=kws_mlp")
    assert "  RUN " in proc.stdout and "FLASH" not in proc.stdout and len(state.events("call")) == calls
    assert state.read(0x71000000, 64) == header
    assert json.load(open(os.path.join(repo, "build", "kws_mlp", "flash", "on_board.json")))["set"] == first
    proc = scons(repo, "validate", release, "MODEL=" + ",".join(six))
    assert len(state.events("call")) == calls + 1                  # the held set as it is, then the other two
    assert json.load(open(os.path.join(repo, "build", "big_mlp", "flash", "on_board.json")))["set"] == \
        ["big_mlp", "cifar_cnn"]
    summary = json.load(open(os.path.join(repo, "build", "validate-summary.json")))
    assert [r["model"] for r in summary["models"]] == sorted(six) and summary["failed"] == 0


def test_summary_names_models_that_cannot_be_built(repo):
    """`scons -k run` over the project: a model whose generate fails is an error row with that
    step's line (not the ok of an older run.json), a model folder that cannot be read is one too,
    the other models run, and the command fails."""
    gen_bad, unreadable = os.path.join(repo, "models", "kws_gen_bad"), os.path.join(repo, "models", "zz_unreadable")
    shutil.copytree(os.path.join(repo, "models", "kws_mlp"), gen_bad)
    with open(os.path.join(gen_bad, "model.json"), "w") as f:
        json.dump({"name": "kws_gen_bad"}, f)
    os.makedirs(unreadable)
    with open(os.path.join(unreadable, "model.json"), "w") as f:
        f.write("{bad")
    try:
        scons(repo, "run", "MODEL=kws_gen_bad")                     # a run.json the failure must not show as ok
        with open(os.path.join(gen_bad, "model.onnx"), "r+b") as f:
            f.truncate(300)
        proc = scons(repo, "-k", "run", check=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        rows = {r["model"]: r for r in json.load(open(os.path.join(repo, "build", "run-summary.json")))["models"]}
        assert sorted(rows) == sorted(_bundled() + ["kws_gen_bad", "zz_unreadable"])
        assert rows["kws_gen_bad"]["result"] == "error" and rows["kws_gen_bad"]["inf_per_s"] is None
        assert rows["kws_gen_bad"]["error"].startswith("stedgeai generate of models/kws_gen_bad/model.onnx failed")
        assert (rows["zz_unreadable"]["result"] == "error"
                and "malformed model options" in rows["zz_unreadable"]["error"])
        assert all(r["result"] == "ok" for m, r in rows.items() if m in _bundled())
        named = scons(repo, "run", "MODEL=zz_unreadable", check=False)
        assert (named.returncode == 2 and "malformed model options" in named.stderr
                and "no such model" not in named.stderr)
    finally:
        shutil.rmtree(gen_bad)
        shutil.rmtree(unreadable)


def test_image_name_is_the_name_the_run_asks_for_and_unknown_targets_are_one_line(repo):
    """RELOC_NAME= names the image and so the model on the board: the run asks for that name. A
    misspelt `<verb>-<model>` target is one line naming the models, not SCons's "Do not know"."""
    proc = scons(repo, "run-digits_mlp", "RELOC_NAME=dig", "BUILD_DIR=build-named")
    assert "model dig on simulated STM32N6" in proc.stdout
    assert json.load(open(os.path.join(repo, "build-named", "digits_mlp", "run", "run.json")))["model"] == "dig"
    for target in ("validate-kws_mpl", "profile-kws_mpl", "flash-kws_mpl"):
        bad = scons(repo, target, check=False)
        assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
            f"scons: *** {target}: no model kws_mpl (fix: choose from {', '.join(_bundled())})"]


def test_bundled_nucleo_board_file_validates_on_the_simulated_board(repo):
    """The NUCLEO board file has no external RAM (size 0): the simulated board maps nothing there
    and the model runs (it stopped with a HardFault at initialisation)."""
    proc = scons(repo, "validate", "MODEL=kws_mlp", "BOARD=nucleo-n657x0-q", "BUILD_DIR=build-nucleo")
    assert "  VALIDATE" in proc.stdout and json.load(open(os.path.join(
        repo, "build-nucleo", "kws_mlp", "run", "validate.json")))["passed"]


def test_inputs_file_sets_the_runs_unless_runs_is_given(repo, tmp_path):
    """INPUTS= with three samples and no RUNS=: three runs, one per sample; RUNS=5 takes them in
    turn. Bytes that are no numpy file: one line saying so (not numpy's advice on pickles)."""
    x = np.random.default_rng(4).integers(-128, 128, (3, 1, 490)).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    scons(repo, "run", "MODEL=kws_mlp", f"INPUTS={tmp_path / 'x.npy'}")
    run = json.load(open(os.path.join(repo, "build", "kws_mlp", "run", "run.json")))
    assert [bytes.fromhex(b[0]) for b in run["inputs_data"]] == [s.tobytes() for s in x]
    scons(repo, "run", "MODEL=kws_mlp", f"INPUTS={tmp_path / 'x.npy'}", "RUNS=5")
    run = json.load(open(os.path.join(repo, "build", "kws_mlp", "run", "run.json")))
    assert [bytes.fromhex(b[0]) for b in run["inputs_data"]] == [s.tobytes() for s in (*x, *x[:2])]
    (tmp_path / "noise.npy").write_bytes(bytes(range(256)) * 4)
    bad = scons(repo, "run", "MODEL=kws_mlp", f"INPUTS={tmp_path / 'noise.npy'}", check=False)
    assert bad.returncode == 2 and "numpy finds no array in it" in bad.stderr and "pickle" not in bad.stderr
