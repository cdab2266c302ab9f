"""The reference of `scons validate` is the source model in its own framework: LiteRT for a
.tflite, onnxruntime for an .onnx, fed the board's inputs converted with the source model's own
quantisation and compared on the board's grid; a prebuilt folder names its source in model.json,
and one whose network.c runs on the NPU without a source has no reference (one line)."""
import json
import os
import shutil

import numpy as np
import pytest

from conftest import MODELS
from n6.aivalidation.messages import ModelInfo, TensorDesc
from n6.errors import N6Error
from n6.models import read_model
from n6.run import reference

KWS_IN = TensorDesc("input", "int8", (1, 490), 0.024409782141447067, 0)
KWS_OUT = TensorDesc("q_18", "int8", (1, 12), 1 / 256, -128)
EXACT_RULE = "tolerance: <= 0 LSB (VALIDATE_TOLERANCE), same top-1"   # VALIDATE_TOLERANCE=0's report line


def kws_tflite(path):
    """kws_mlp's QDQ model as a .tflite LiteRT runs (the simulated tool's import, TFLite's schema)."""
    from stedgeai_sim.onnx_import import import_onnx
    from tflite_writer import tflite_bytes
    with open(path, "wb") as f:
        f.write(tflite_bytes(import_onnx(os.path.join(MODELS, "kws_mlp", "model.onnx"))))
    return str(path)


def _inputs(n, size=490, seed=0):
    rng = np.random.default_rng(seed)
    return [[rng.integers(-128, 128, size, dtype=np.int8).tobytes()] for _ in range(n)]


def test_litert_and_onnxruntime_agree_on_the_same_model(tmp_path):
    """The same model through both frameworks: equal on 600 of 600 values (LiteRT as ST's checker
    makes it, with XNNPACK; its builtin kernels put 1 value 1 LSB apart); each reference names
    its framework."""
    model = ModelInfo("kws", [KWS_IN], [KWS_OUT])
    inputs = _inputs(50)
    litert = reference.run_source(kws_tflite(tmp_path / "kws.tflite"), model, inputs)
    ort = reference.run_source(os.path.join(MODELS, "kws_mlp", "model.onnx"), model, inputs)
    assert litert.name.startswith("LiteRT 2.3.0 on ") and ort.name.startswith("onnxruntime ")
    assert litert.lsb == ort.lsb == [1.0] and litert.outputs[0].dtype == np.int8
    diff = np.abs(litert.outputs[0].astype(int) - ort.outputs[0].astype(int))
    assert diff.max() == 0


def test_float_board_io_goes_through_the_source_models_grids(tmp_path):
    """A board with float I/O (--input/output-data-type float32) on an int8 .tflite: the input is
    quantised with the model's own input grid, the output is the int8 output dequantised, and its
    LSB is the output grid's step."""
    tfl = kws_tflite(tmp_path / "kws.tflite")
    x = np.random.default_rng(3).standard_normal((20, 490)).astype(np.float32) * 2
    f32 = ModelInfo("kws", [TensorDesc("input", "float32", (1, 490))], [TensorDesc("q_18", "float32", (1, 12))])
    i8 = ModelInfo("kws", [KWS_IN], [KWS_OUT])
    q = reference.quantize_as_deployed(x, KWS_IN.scale, 0)
    ref_f = reference.run_source(tfl, f32, [[row.tobytes()] for row in x])
    ref_q = reference.run_source(tfl, i8, [[row.tobytes()] for row in q])
    assert ref_f.lsb == [1 / 256] and ref_f.outputs[0].dtype == np.float32
    assert reference.source_lsb(tfl, f32) == [1 / 256] and reference.source_lsb(tfl, i8) == [1.0]   # not run
    f32_onnx = os.path.join(MODELS, "kws_mlp_f32", "model.onnx")
    assert reference.source_lsb(f32_onnx, f32) == reference.run_source(f32_onnx, f32, [[x[0].tobytes()]]).lsb
    assert np.array_equal(ref_f.outputs[0], reference.dequantize_as_deployed(ref_q.outputs[0], 1 / 256, -128))


def test_board_grid_other_than_the_source_models_is_converted(tmp_path):
    """A board output on another grid (uint8, zero point 0) gets the reference requantised onto it."""
    tfl = kws_tflite(tmp_path / "kws.tflite")
    u8 = ModelInfo("kws", [KWS_IN], [TensorDesc("q_18", "uint8", (1, 12), 1 / 256, 0)])
    inputs = _inputs(10)
    got = reference.run_source(tfl, u8, inputs).outputs[0]
    want = reference.run_source(tfl, ModelInfo("kws", [KWS_IN], [KWS_OUT]), inputs).outputs[0]
    assert got.dtype == np.uint8 and np.array_equal(got.astype(int), want.astype(int) + 128)


def test_fit_moves_channels_between_the_boards_and_the_sources_layout():
    x = np.arange(2 * 3 * 4).reshape(1, 2, 3, 4)                  # N, H, W, C as the board lays it out
    chw = reference.fit(x, (1, 4, 2, 3))
    assert np.array_equal(chw, x.transpose(0, 3, 1, 2))
    assert np.array_equal(reference.fit(chw, (1, 2, 3, 4)), x)
    assert np.array_equal(reference.fit(x.reshape(-1), (1, 24)), x.reshape(1, 24))
    assert np.array_equal(reference.fit(np.arange(101), (1, 1, 101, 1)).reshape(-1), np.arange(101))


def test_a_source_litert_refuses_is_one_line(tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"TFL3" + bytes(60))
    with pytest.raises(N6Error) as e:
        reference.run_source(str(bad), ModelInfo("kws", [KWS_IN], [KWS_OUT]), _inputs(1))
    assert "LiteRT cannot load the model" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("suffix", [".tflite", ".onnx"])
def test_source_with_other_io_than_the_image_is_one_line(tmp_path, suffix):
    model = (kws_tflite(tmp_path / "kws.tflite") if suffix == ".tflite"
             else os.path.join(MODELS, "kws_mlp", "model.onnx"))
    with pytest.raises(N6Error) as e:
        reference.run_source(model, ModelInfo("kws", [KWS_IN], [TensorDesc("y", "int8", (1, 10), 1, 0)]), _inputs(1))
    assert str(e.value).startswith(f"{model}: its outputs (12 values) are not the image's (10) (fix: ")


def _prebuilt(tmp_path, npu=False, **model_json):
    folder = tmp_path / "pre"
    shutil.copytree(os.path.join(MODELS, "tiny_prebuilt"), folder)
    if npu:              # one epoch of the generated network marked as the NPU's
        c = folder / "network.c"
        c.write_text(c.read_text().replace("EpochBlock_Flags_pure_sw", "EpochBlock_Flags_pure_hw", 1))
    if model_json:
        (folder / "model.json").write_text(json.dumps(model_json))
    return folder


def test_prebuilt_reference_is_its_source_else_the_host_build_of_cpu_epochs(tmp_path):
    assert reference.source_of(read_model(_prebuilt(tmp_path))) == ""          # CPU epochs: the host build
    folder = _prebuilt(tmp_path / "b", npu=True)
    with pytest.raises(N6Error) as e:
        reference.source_of(read_model(folder))
    assert str(e.value) == (f"{folder}/model.json: no reference to validate network.c against: 1 of its epochs run "
                            "on the NPU, which no host build reproduces (fix: name the source model in model.json: "
                            '"source": "model.tflite" (or .onnx), or reference data: "reference_data": "data.npz")')
    kws_tflite(folder / "model.tflite")                  # beside the generated network: not a model to build
    (folder / "model.json").write_text('{"source": "model.tflite"}')
    spec = read_model(folder)
    assert spec.kind == "prebuilt" and reference.source_of(spec) == str(folder / "model.tflite")


@pytest.mark.parametrize("value, says", [("missing.tflite", "'source' 'missing.tflite' is not found"),
                                         ("network.c", "'source' 'network.c' is not a .tflite or .onnx file")])
def test_bad_model_json_source_is_one_line(tmp_path, value, says):
    folder = _prebuilt(tmp_path, source=value)
    with pytest.raises(N6Error) as e:
        read_model(folder)
    assert str(e.value).startswith(f"{folder}/model.json: {says} (fix: ")


@pytest.mark.slow
def test_tflite_source_validates_against_litert_and_a_3_lsb_board_error_fails(tmp_path):
    """kws_mlp as a .tflite source: the simulated board equals LiteRT to the LSB and the report
    names LiteRT; with the board's first output value 3 LSB off (N6_SIM_BOARD_FAULT lsb-error)
    validate fails with max 3 LSB, mean 3/12 LSB, and ST's rmse sqrt(9/12) and mae 3/12 of the
    output's step (1/256), l2r and cos those of that error."""
    from conftest import copy_repo, scons
    from n6.run.validate import st_metrics
    repo = copy_repo(tmp_path / "repo")
    folder = os.path.join(repo, "models", "kws_tfl")
    os.makedirs(folder)
    kws_tflite(os.path.join(folder, "model.tflite"))
    for f in ("neural_art.json", "kws_mlp.mpool"):
        shutil.copy(os.path.join(MODELS, "kws_mlp", f), folder)
    args = ("validate", "MODEL=kws_tfl", "RUNS=3", "SEED=5", "VALIDATE_TOLERANCE=0")
    proc = scons(repo, *args)
    run_dir = os.path.join(repo, "build", "kws_tfl", "run")
    val = json.load(open(os.path.join(run_dir, "validate.json")))
    assert f"  reference: LiteRT 2.3.0 on {folder}/model.tflite; {EXACT_RULE}" in proc.stdout
    assert "XNNPACK" not in proc.stdout + proc.stderr           # LiteRT's own INFO line kept out of the report
    assert val["passed"] and val["outputs"][0]["max_abs_lsb"] == 0 and val["outputs"][0]["st"]["rmse"] == 0
    failed = scons(repo, *args[:3], "SEED=6", args[4], env={"N6_SIM_BOARD_FAULT": "lsb-error:network:3"}, check=False)
    assert failed.returncode != 0 and "beyond 0.0 LSB (see validate-failed.json)" in failed.stderr
    out = json.load(open(os.path.join(run_dir, "validate-failed.json")))["outputs"][0]
    assert (out["max_abs_lsb"], out["mean_abs_lsb"]) == (3, 0.25)
    assert out["st"]["rmse"] == pytest.approx(np.sqrt(9 / 12) / 256, rel=1e-6)
    assert out["st"]["mae"] == pytest.approx(3 / 12 / 256, rel=1e-6)
    board = np.load(os.path.join(run_dir, "output_q_18.npy")).reshape(3, 12)
    ref = board.copy()
    ref[:, 0] -= np.where(board[:, 0] >= -125, 3, -3).astype(np.int8)     # the fault, undone
    assert out["st"] == st_metrics(board, ref, KWS_OUT)
    assert f"{out['st']['rmse']:.8f}" in failed.stdout and "FAIL" in failed.stdout


@pytest.mark.slow
def test_reference_data_inputs_run_on_the_board_against_their_outputs(tmp_path):
    """model.json "reference_data": its m_inputs_1 run on the board, compared with its
    m_outputs_1 (in the board's type, or as float values put on the output's grid); one expected
    value 2 LSB off fails validate with max 2 LSB."""
    from conftest import copy_repo, scons
    repo = copy_repo(tmp_path / "repo")
    folder = os.path.join(repo, "models", "tiny_prebuilt")
    run_dir = os.path.join(repo, "build", "tiny_prebuilt", "run")
    scons(repo, "validate", "MODEL=tiny_prebuilt", "RUNS=4", "SEED=3", "VALIDATE_TOLERANCE=0")   # the host build's
    run = json.load(open(os.path.join(run_dir, "run.json")))
    (i_desc,), (o_desc,) = run["inputs"], run["outputs"]
    x = np.stack([np.frombuffer(bytes.fromhex(bufs[0]), i_desc["dtype"]) for bufs in run["inputs_data"]])
    y = np.load(os.path.join(run_dir, f"output_{o_desc['name']}.npy")).reshape(4, -1)
    with open(os.path.join(folder, "model.json"), "w") as f:
        json.dump({"reference_data": "data.npz"}, f)
    real = (y.astype(np.float32) - o_desc["zero_point"]) * np.float32(o_desc["scale"]) if o_desc["scale"] else y
    for expected in (y, real):
        np.savez(os.path.join(folder, "data.npz"), m_inputs_1=x, m_outputs_1=expected)
        proc = scons(repo, "validate", "MODEL=tiny_prebuilt", "VALIDATE_TOLERANCE=0")
        assert f"  reference: reference data {folder}/data.npz; {EXACT_RULE}" in proc.stdout
    off = y.copy()
    off[1, 2] += 2 if off[1, 2] < 100 else -2
    np.savez(os.path.join(folder, "data.npz"), m_inputs_1=x, m_outputs_1=off)
    failed = scons(repo, "validate", "MODEL=tiny_prebuilt", "VALIDATE_TOLERANCE=0", check=False)
    assert failed.returncode != 0
    out = json.load(open(os.path.join(run_dir, "validate-failed.json")))["outputs"][0]
    assert out["max_abs_lsb"] == 2 and out["mean_abs_lsb"] == pytest.approx(2 / y.size)
    np.savez(os.path.join(folder, "data.npz"), m_inputs_1=x)          # inputs only: no source, no outputs
    scons(repo, "validate", "MODEL=tiny_prebuilt", "VALIDATE_TOLERANCE=0")     # the host build computes them


def test_reference_data_of_other_shape_is_one_line(tmp_path):
    model = ModelInfo("kws", [KWS_IN], [KWS_OUT])
    np.savez(tmp_path / "d.npz", m_inputs_1=np.zeros((3, 490), np.int8), m_outputs_1=np.zeros((3, 10), np.int8))
    with pytest.raises(N6Error) as e:
        reference.read_data(str(tmp_path / "d.npz"), model)
    assert "'q_18' takes 3 x 12 int8 values, the data holds int8 [3, 10]" in str(e.value)
    np.savez(tmp_path / "d.npz", x=np.zeros((3, 490), np.int8))
    with pytest.raises(N6Error) as e:
        reference.read_data(str(tmp_path / "d.npz"), model)
    assert "holds x: not one m_inputs_<k> per input (1)" in str(e.value)
