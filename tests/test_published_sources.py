"""ST's published N6 sources (the test bed's sources/ and ec-workspace/ .tflite files, the very
files ST compiled) through the simulated tool: uint8 / float32 inputs through QUANTIZE, float32
outputs through DEQUANTIZE, as ST keeps them. The host build of the generated C against LiteRT
(its default interpreter, as a user runs it) on seeded inputs: exact-match rate and max error in
LSB of each output's int8 grid, printed; top-1 agrees. Opt-in: needs N6_REAL_STEDGEAI."""
import json
import os
import shutil

import numpy as np
import pytest

from conftest import generate, host_build
from stedgeai_sim.emit_info import DATA_FORMAT_TYPES
from test_tflite_litert import compare_with_litert, litert, seeded_inputs

REAL = os.environ.get("N6_REAL_STEDGEAI")
pytestmark = pytest.mark.skipif(not REAL, reason="set N6_REAL_STEDGEAI to ST's test bed folder")
RELOC_MPOOL = ("2.2", "scripts", "N6_reloc", "test", "mpools", "stm32n6_reloc.mpool")
# source → (model, .mpool ST's flow used or one that holds it, inputs, measured max LSB)
SOURCES = {"nucleo_mnv1": (("sources", "nucleo_mnv1", "model.tflite"), RELOC_MPOOL, 4, 0),
           "blazeface": (("sources", "blazeface", "model.tflite"), RELOC_MPOOL, 4, 0),
           "yolox_nano": (("ec-workspace", "model.tflite"), ("ec-workspace", "stm32n6-app2_STM32N6570-DK.mpool"), 2, 0)}


@pytest.mark.parametrize("source", SOURCES)
def test_published_source_builds_and_computes_what_litert_does(sim_install, tmp_path, source):
    model_parts, mpool_parts, n, max_lsb = SOURCES[source]
    model = os.path.join(REAL, *model_parts)
    shutil.copyfile(os.path.join(REAL, *mpool_parts), tmp_path / "st.mpool")
    (tmp_path / "p.json").write_text(json.dumps({"Profiles": {"default": {"memory_pool": "./st.mpool",
                                                                          "options": "--optimization 3"}}}))
    out = generate(model, tmp_path / "st_ai_output", tmp_path / "p.json")
    exe, info = host_build(out, sim_install("2.2"), tmp_path)
    ind = litert(model).get_input_details()[0]
    inp = info["graphs"][0]["original_inputs"][0]
    assert inp["data_format"]["type"] == DATA_FORMAT_TYPES[np.dtype(ind["dtype"]).kind]   # the model's input type
    rows = compare_with_litert(model, exe, tmp_path, seeded_inputs(ind, n))
    for name, equal, lsb, top1 in rows:
        print(f"{source} {name}: {100 * equal:.2f} % equal LiteRT's, max {lsb} LSB, top-1 {top1:.2f}")
    assert all(top1 == 1.0 for *_, top1 in rows)
    assert max(lsb for _, _, lsb, _ in rows) <= max_lsb


@pytest.fixture(scope="module")
def repo_with_sources(tmp_path_factory):
    """A clone with the published sources as model folders (their .mpool from the test bed)."""
    from conftest import copy_repo
    repo = copy_repo(tmp_path_factory.mktemp("sources-repo"))
    for source in SOURCES:
        model_parts, mpool_parts, _, _ = SOURCES[source]
        folder = os.path.join(repo, "models", source)
        os.makedirs(folder)
        shutil.copyfile(os.path.join(REAL, *model_parts), os.path.join(folder, "model.tflite"))
        shutil.copyfile(os.path.join(REAL, *mpool_parts), os.path.join(folder, "st.mpool"))
        with open(os.path.join(folder, "neural_art.json"), "w") as f:
            json.dump({"Profiles": {"default": {"memory_pool": "./st.mpool",
                                                  "options": "--optimization 3 --all-buffers-info"}}}, f)
    return repo


@pytest.mark.parametrize("source, firmware", [(s, f) for s in SOURCES for f in ("own", "st")])
def test_published_source_runs_on_the_simulated_board(repo_with_sources, source, firmware):
    """flash, run and validate with SCons: the board's outputs equal the host build's (0 LSB),
    which equals LiteRT's (above), with the simulated board's firmware and with ST's validation
    firmware on the DK twin (SIM_FIRMWARE). Emulated instructions per inference: 0.3 G (BlazeFace),
    4.3 G (YOLOX nano 480); host time: bench/published_sources.py."""
    from conftest import scons
    extra = [f"SIM_FIRMWARE={os.path.join(REAL, '2.2')}"] if firmware == "st" else []
    scons(repo_with_sources, "flash", "run", "validate", f"MODEL={source}", "RUNS=1", "VALIDATE_TOLERANCE=0", *extra,
          timeout=3600)
    val = json.load(open(os.path.join(repo_with_sources, "build", source, "run", "validate.json")))
    assert val["passed"] and all(o["max_abs_lsb"] == 0 and o["top1"] == 1.0 for o in val["outputs"])


def _oe_session(model, **options):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    for key, value in options.items():
        setattr(opts, key, value)
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def test_blazeface_model_oe_departs_from_onnxruntime_only_where_float_rounding_decides(sim_install, tmp_path):
    """ST's `model_OE.onnx` holds float Conv weights and biases between Q/DQ activations.
    onnxruntime's default session does not compute that model: its WeightBiasQuantization
    re-quantises each float Conv weight fed by a DequantizeLinear per tensor, asymmetric ((max - min)
    / 255, zero point 27 on the first Conv, whose weights the model holds on a per-channel grid).
    Without graph optimisations it computes the Convs in float32; the simulated tool sums the
    integer codes exactly. At the first Conv (both sides read the same input codes) they differ only
    where the exact value, computed here in float64 from the file's floats, lies within 1e-3 LSB of a
    rounding tie: float32 rounding, not a departure in the arithmetic (docs/source-models.md)."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from n6.run import host_reference
    path = os.path.join(REAL, "sources", "blazeface", "model_OE.onnx")
    src = onnx.load(path)
    inits = {i.name: numpy_helper.to_array(i) for i in src.graph.initializer}
    conv = next(n for n in src.graph.node if n.op_type == "Conv")
    quant = next(n for n in src.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == conv.output[0])
    src.graph.output.append(helper.make_tensor_value_info(quant.output[0], TensorProto.INT8, None))
    model = str(tmp_path / "model_OE.onnx")
    onnx.save(src, model)
    shutil.copyfile(os.path.join(REAL, *RELOC_MPOOL), tmp_path / "st.mpool")
    (tmp_path / "p.json").write_text(json.dumps({"Profiles": {"default": {"memory_pool": "./st.mpool",
                                                                          "options": "--optimization 3"}}}))
    exe, info = host_build(generate(model, tmp_path / "st_ai_output", tmp_path / "p.json"), sim_install("2.2"),
                           tmp_path)
    graph = info["graphs"][0]
    grid = graph["original_inputs"][0]["data_format"]
    codes = [np.random.default_rng(seed).integers(-128, 128, (1, 128, 128, 3)).astype(np.int8) for seed in (0, 1)]
    # the tool's 4-D tensors are channel-last of the logical (N, C, H, W): this NHWC input's memory is (d2, d3, d1)
    got = host_reference.execute(exe, tmp_path, [b"".join(c.transpose(0, 2, 3, 1).tobytes() for c in codes)],
                                 len(graph["original_outputs"]))
    ours = np.frombuffer(got[[o["name"] for o in graph["original_outputs"]].index(quant.output[0])], np.int8)
    ours = ours.reshape(2, 64, 64, 24).transpose(0, 3, 1, 2).astype(int)
    plain = _oe_session(model, graph_optimization_level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    xs = [((c.astype(np.float32) - grid["zero"][0]) * np.float32(grid["scale"][0])).astype(np.float32) for c in codes]
    theirs = np.stack([plain.run([quant.output[0]], {plain.get_inputs()[0].name: x})[0][0] for x in xs]).astype(int)
    # the exact value of each differing element, in LSB of the Conv's output grid
    w, b = inits[conv.input[1]].astype(np.float64), inits[conv.input[2]].astype(np.float64)
    s_out = np.float64(inits[quant.input[1]])
    top, left = 1, 1                                                       # the Conv's pads begin (1, 1)
    differ = np.argwhere(ours != theirs)
    for n, o, y, x in differ:
        planes = np.pad(xs[n][0].transpose(2, 0, 1).astype(np.float64), ((0, 0), (top, 3), (left, 3)))
        exact = (np.sum(planes[:, 2 * y:2 * y + 5, 2 * x:2 * x + 5] * w[o]) + b[o]) / s_out
        assert abs(exact - np.floor(exact) - 0.5) < 1e-3, (n, o, y, x, exact)
    print(f"first Conv: {len(differ)} of {ours.size} codes differ, each at a rounding tie")
    # the default session's own weights for that Conv: one scale and a zero point, not the model's grid
    optimised = str(tmp_path / "optimised.onnx")
    _oe_session(path, optimized_model_filepath=optimised)
    opt = onnx.load(optimised)
    made = {i.name: numpy_helper.to_array(i) for i in opt.graph.initializer}
    first = next(n for n in opt.graph.node if n.op_type == "QLinearConv")
    wf = inits[conv.input[1]]
    assert made[first.input[4]].size == 1 and made[first.input[4]] == np.float32((wf.max() - wf.min()) / 255)
    assert made[first.input[5]] == 27
