"""Opt-in (N6_REAL_STEDGEAI): the published source models beside ST's real outputs of them. Each
source run by LiteRT gives a reference whose inputs and outputs match the image's buffer infos
(c_info.json: count, values, type, scale / zero point; input names as ST writes the source's);
`validate` of board outputs fed another way (LiteRT's own outputs moved by known LSBs: the
simulated board stops at the first hardware epoch) runs end to end with the expected figures;
a real sample without a source stops `scons validate` in one line naming model.json `source`."""
import json
import os
import shutil

import numpy as np
import pytest

from n6.aivalidation.messages import ModelInfo, TensorDesc
from n6.errors import N6Error
from n6.run import inference, reference
from n6.run.options import ValidateOptions
from n6.run.steps import validate_step

REAL = os.environ.get("N6_REAL_STEDGEAI", "")
pytestmark = pytest.mark.skipif(not REAL,
                                reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")
# (source model, ST's c_info.json of the image generated from it)
PAIRS = {"blazeface": ("sources/blazeface/model.tflite", "samples/blazeface/network_c_info.json"),
         "nucleo_mnv1": ("sources/nucleo_mnv1/model.tflite", "samples/nucleo_mnv1/network_c_info.json"),
         "yolox_nano": ("ec-workspace/model.tflite", "ec-workspace/c_info.json")}
FORMATS = {"STAI_FORMAT_FLOAT": "float32", "STAI_FORMAT_S8": "int8", "STAI_FORMAT_U8": "uint8"}


def image_io(c_info):
    """The image's inputs and outputs as its buffer infos give them (what the board reports),
    and the source-model names ST recorded for its inputs."""
    with open(c_info) as f:
        info = json.load(f)
    graph, buffers = info["graphs"][0], {b["id"]: b for b in info["buffers"]}

    def desc(b):
        q = b.get("intq") or {}
        return TensorDesc(b["name"], FORMATS[b["format"]], tuple(b["shape"]), float((q.get("scales") or [0])[0]),
                          int((q.get("offsets") or [0])[0]))
    model = ModelInfo("network", [desc(buffers[i]) for i in graph["inputs"]],
                      [desc(buffers[i]) for i in graph["outputs"]])
    return model, [t["name"] for t in graph["original_inputs"]]


def _inputs(model, runs, seed=0):
    rng = np.random.default_rng(seed)
    return [[(rng.uniform(-1, 1, d.size).astype(np.float32) if d.dtype == "float32" else
              rng.integers(0, 256, d.size).astype(d.dtype)).tobytes() for d in model.inputs] for _ in range(runs)]


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_source_reference_matches_the_images_buffer_infos(name):
    source, c_info = (os.path.join(REAL, p) for p in PAIRS[name])
    model, original_inputs = image_io(c_info)
    interp = reference.load_tflite(source)
    ins, outs = interp.get_input_details(), interp.get_output_details()
    reference.check_io(source, model, [d["shape"] for d in ins], [d["shape"] for d in outs])
    assert [d["name"].replace(":", "") for d in ins] == original_inputs
    grids_in, grids_out = reference.tflite_grids(source)
    for theirs, ours, grid in list(zip(model.inputs, ins, grids_in)) + list(zip(model.outputs, outs, grids_out)):
        assert reference.fit(np.zeros(theirs.shape), ours["shape"]).shape == tuple(ours["shape"])
        if theirs.dtype != "float32":          # an integer buffer is on the source tensor's grid
            assert reference.same_grid(reference.board_grid(theirs), grid), (theirs, grid)
        else:                                  # a float one: float in the source too
            assert np.dtype(ours["dtype"]) == np.float32
    ref = reference.run_source(source, model, _inputs(model, 2))
    assert (ref.name.startswith("LiteRT 2.3.0 on ")
            and [o.shape for o in ref.outputs] == [(2, d.size) for d in model.outputs])
    assert [o.dtype for o in ref.outputs] == [np.dtype(d.dtype) for d in model.outputs]
    assert ref.lsb == [g[0] if d.dtype == "float32" else 1.0 for d, g in zip(model.outputs, grids_out)]


def _board_run(tmp_path, model, inputs, outputs):
    """A run folder as `scons run` leaves it: run.json and the outputs' .npy."""
    out_dir = tmp_path / "run"
    out_dir.mkdir()
    run = {"model": model.name, "inputs": [d.as_dict() for d in model.inputs],
           "outputs": [d.as_dict() for d in model.outputs], "inputs_data": [[b.hex() for b in bufs] for bufs in inputs],
           "simulated": False, "mode": "io", "runs": []}
    (out_dir / "run.json").write_text(json.dumps(run))
    for d, values in zip(model.outputs, outputs):
        np.save(inference.output_path(str(out_dir), d.name), values)
    return str(out_dir / "run.json")


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_validate_of_board_outputs_off_by_known_lsb(tmp_path, name):
    """Board outputs = LiteRT's with value 5 of each run off by k LSB (k = 1, 2, ... per output; a
    float output moved k steps of its grid): validate fails at tolerance 0 with max |err| k, mean
    k/n LSB, ST's mae k*step/n, and passes at the largest k."""
    source, c_info = (os.path.join(REAL, p) for p in PAIRS[name])
    model, _ = image_io(c_info)
    inputs = _inputs(model, 2, seed=1)
    ref = reference.run_source(source, model, inputs)
    board = []
    for k, (d, values, step) in enumerate(zip(model.outputs, ref.outputs, ref.lsb), 1):
        moved = values.copy()
        if d.dtype == "float32":
            moved[:, 5] += np.float32(k * step)
        else:
            moved[:, 5] += np.where(moved[:, 5] <= 127 - k, k, -k).astype(moved.dtype)
        board.append(moved)
    run_json = _board_run(tmp_path, model, inputs, board)
    target = str(tmp_path / "run" / "validate.json")
    opts = ValidateOptions(None, None, 0.0, source, os.path.dirname(c_info), "")
    said = []
    with pytest.raises(N6Error):
        validate_step(opts, run_json, "", target, said.append)
    report = json.load(open(tmp_path / "run" / "validate-failed.json"))
    assert report["reference"] == ref.name and not os.path.exists(target)
    for k, (d, out, step) in enumerate(zip(model.outputs, report["outputs"], ref.lsb), 1):
        near = (lambda v: v) if d.dtype != "float32" else (lambda v: pytest.approx(v, rel=1e-4))   # int: exact
        assert out["name"] == d.name and out["max_abs_lsb"] == near(k) and out["mean_abs_lsb"] == near(k / d.size)
        assert out["st"]["mae"] == pytest.approx(k * (step if d.dtype == "float32" else d.scale) / d.size, rel=1e-3)
    assert "LiteRT 2.3.0" in said[0] and "FAIL" in said[0]
    validate_step(ValidateOptions(None, None, len(board) + 1e-3, source, os.path.dirname(c_info), ""), run_json, "",
                  target, said.append)
    assert json.load(open(target))["passed"]


def test_real_sample_without_source_stops_validate_in_one_line(tmp_path):
    from conftest import copy_repo, scons
    repo = copy_repo(tmp_path / "repo")
    folder = os.path.join(repo, "models", "nucleo_mnv1")
    shutil.copytree(os.path.join(REAL, "samples", "nucleo_mnv1"), folder)
    proc = scons(repo, "validate", "MODEL=nucleo_mnv1", check=False)
    assert proc.returncode != 0 and proc.stderr.strip().splitlines() == [
        "scons: *** models/nucleo_mnv1/model.json: no reference to validate network.c against: "
        "30 of its epochs run on the NPU, "
        'which no host build reproduces (fix: name the source model in model.json: '
        '"source": "model.tflite" (or .onnx), '
        'or reference data: "reference_data": "data.npz")']
    assert not os.path.exists(os.path.join(repo, "build", "nucleo_mnv1"))       # stopped before any step

    assert "  PACK     build/nucleo_mnv1/network_rel.bin" in scons(repo, "-n", "run", "MODEL=nucleo_mnv1").stdout
    shutil.copy(os.path.join(REAL, "sources", "nucleo_mnv1", "model.tflite"), folder)
    with open(os.path.join(folder, "model.json"), "w") as f:
        f.write('{"source": "model.tflite"}')
    scons(repo, "-n", "validate", "MODEL=nucleo_mnv1")          # a source: validate is declared


def test_bundled_models_validate_against_their_framework_on_the_dk_twin(tmp_path):
    """ST's validation firmware on the DK twin, every bundled model at SEED=5: each CPU-epoch
    model passes against its framework (ds_cnn against LiteRT at 0 LSB, digits_mlp within 1 LSB
    of onnxruntime, the prebuilt folder against its host build), and those whose epochs go through
    epoch-controller blobs in ST's format (the NPU model runs each blob's label and interrupt)."""
    from conftest import copy_repo, scons
    repo = copy_repo(tmp_path / "repo")
    scons(repo, "-k", "validate", "SEED=5", f"SIM_FIRMWARE={os.path.join(REAL, '2.2')}", check=False, timeout=1800)
    summary = json.load(open(os.path.join(repo, "build", "validate-summary.json")))
    results = {m["model"]: (m["result"], m["max_lsb"]) for m in summary["models"]}
    assert results == {
        "big_mlp": ("passed", 0), "digits_mlp": ("passed", 1), "ds_cnn": ("passed", 0), "fusion_mlp": ("passed", 0),
        "kws_mlp": ("passed", 0), "kws_mlp_f32": ("passed", 0), "tiny_prebuilt": ("passed", 0),
        "cifar_cnn": ("passed", 0), "mobilenet_v2": ("passed", 0), "mobilenet_v2_u8": ("passed", 0),
        "tiny_yolo": ("passed", 0)}
    ds_cnn = json.load(open(os.path.join(repo, "build", "ds_cnn", "run", "validate.json")))
    assert ds_cnn["reference"].startswith("LiteRT 2.3.0 on ") and ds_cnn["simulated"]
