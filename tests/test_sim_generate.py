"""The simulated `stedgeai generate`: output set and names, .raw sizes, pool comments, c-name
rules per release, and one-line errors for bad input."""
import json
import os

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from n6.network_c import parse_network_c
from n6.releases import c_symbol, generate_outputs, release

from conftest import BUNDLED, MODELS, ROOT


def _expected(out, rel, name, model_dir):
    info = json.load(open(os.path.join(out, f"{name or 'network'}_c_info.json")))
    prof = json.load(open(os.path.join(model_dir, "neural_art.json")))["Profiles"]["default"]
    raws = [p["fname"].split(".")[1] for p in info["memory_pools"] if p["used_size_bytes"] and
            any(b["is_param"] for b in info["buffers"] if b["id"] in p["buffers"])]
    return set(generate_outputs(release(rel), name, "model", "--enable-epoch-controller" in prof["options"], raws))


@pytest.mark.parametrize("rel", ["2.2", "3.0"])
@pytest.mark.parametrize("name", [None, "kws"])
def test_output_set_and_names(generated, rel, name):
    out = generated("kws_mlp", rel, name)
    assert set(os.listdir(out)) == _expected(out, rel, name, os.path.join(MODELS, "kws_mlp"))
    n = name or "network"
    assert os.path.exists(os.path.join(out, f"{n}_atonbuf.AXISRAM2.raw"))
    ws = os.path.join(out + "_ws", f"neural_art__{n}")
    assert {"atonn_options.ini", "c_info.json", "kws_mlp.mpool", "atonbuf.AXISRAM2.raw", "atonbuf.AXISRAM5.raw"} \
        <= set(os.listdir(ws))
    assert os.path.getsize(os.path.join(ws, "atonbuf.AXISRAM5.raw")) == 0   # activations only: empty


def test_epoch_controller_adds_ecblobs(generated):
    out = generated("cifar_cnn")
    assert "network_ecblobs.h" in os.listdir(out)
    text = open(os.path.join(out, "network.c")).read()
    assert '#include "network_ecblobs.h"' in text and "EpochBlock_Flags_blob" in text
    blobs = open(os.path.join(out, "network_ecblobs.h")).read()
    assert "ECBLOB_CONST_SECTION\nstatic const uint64_t _ec_blob_1[" in blobs
    assert "bool LL_ATON_EC_Network_Init_Default(void)" in blobs


def test_epoch_controller_blobs_are_in_st_format_and_the_operators_run_in_software(generated):
    """Each blob epoch's blob is ST's (magic 0xCA057A7A, the commands ST's firmware hands the
    epoch controller): the epoch's label and the end interrupt; its operators are a list of the
    simulated install's own that the epoch's start function runs (ec_run_ops)."""
    from npu_model.ecblob import blob_words, decode
    from test_npu_ecblob import header_blobs
    out = generated("cifar_cnn")
    blobs = header_blobs(os.path.join(out, "network_ecblobs.h"))
    assert {name: [c.text() for c in decode(blob_words(data))] for name, data in blobs.items()} == \
        {"1": ["label 0x1", "irq 0x0"], "3": ["label 0x3", "irq 0x0"]}
    text = open(os.path.join(out, "network.c")).read()
    for epoch in blobs:
        start = text.index(f"static void _ec_blob_cache_start_func_{epoch}(const void *epoch_block)")
        assert text[start:text.index("\n}\n", start)].splitlines()[2:] == [
            "  LL_ATON_LIB_UNUSED(epoch_block);", f"  ec_run_ops(_ec_ops_{epoch});"]
        assert f"static const uint64_t _ec_ops_{epoch}[" in text


@pytest.mark.parametrize("model", BUNDLED)
def test_raw_size_equals_pool_used_size(generated, model):
    out = generated(model)
    info = json.load(open(os.path.join(out, "network_c_info.json")))
    assert info["json_schema_version"] == "2.0"
    raws = [f for f in os.listdir(out) if f.endswith(".raw")]
    assert raws
    for f in raws:
        pool = next(p for p in info["memory_pools"] if f"network_{p['fname']}" == f)
        assert os.path.getsize(os.path.join(out, f)) == pool["used_size_bytes"] > 0
    assert info["memory_footprint"]["weights"] == sum(os.path.getsize(os.path.join(out, f)) for f in raws)


@pytest.mark.parametrize("model", BUNDLED)
def test_pool_comments_parse_by_the_documented_rules(generated, model):
    out = generated(model)
    net = parse_network_c(os.path.join(out, "network.c"))
    info = json.load(open(os.path.join(out, "network_c_info.json")))
    mpool = json.load(open(os.path.join(MODELS, model, f"{model}.mpool")))["memory"]["mempools"]
    assert [(p.index, p.postfix, p.name, p.offset) for p in net.pools] == \
        [(i + 1, m["fname"], m["name"], int(m["offset"]["value"], 0)) for i, m in enumerate(mpool)]
    for p, m in zip(net.pools, mpool):
        assert p.absolute == (m.get("mode") != "USEMODE_RELATIVE")
        assert p.read_write == (m["prop"]["rights"] == "ACC_WRITE")
    relative = [p for p in net.pools if not p.absolute]
    assert [label for label, _ in net.labels] == [f"_mem_pool_{p.postfix}_Default" for p in relative]
    assert net.version == (1, 1, 1, 14) and net.has_option("--all-buffers-info")
    # used size from the buffer tables == c_info used size, pool by pool
    for p in net.pools:
        bufs = [b for b in net.buffers if b.base in (p.offset, f"_mem_pool_{p.postfix}_Default")]
        used = max((b.offset_end for b in bufs), default=0) - min((b.offset_start for b in bufs), default=0)
        assert used == next(q["used_size_bytes"] for q in info["memory_pools"] if q["id"] == p.index)


@pytest.mark.parametrize("rel, sym, guard", [("2.2", "Default", "#  warning"), ("3.0", "network", "#  error")])
def test_c_name_and_version_rules(generated, rel, sym, guard):
    out = generated("cifar_cnn", rel)
    text = open(os.path.join(out, "network.c")).read()
    net = parse_network_c(os.path.join(out, "network.c"))
    assert net.c_name == sym == c_symbol(release(rel), None)
    assert net.version == release(rel).atonn
    assert guard + ' "Possible mismatch in ll_aton library used"' in text
    assert ("ll_aton_cipher.h" in text) == (rel == "3.0")
    blobs = open(os.path.join(out, "network_ecblobs.h")).read()
    assert (f"_ec_blob_{sym}_1" in blobs) == (rel == "3.0")
    info = json.load(open(os.path.join(out, "network_c_info.json")))
    assert info["environment"]["generated_model"]["name"] == sym
    assert ("intq" in info["buffers"][0]) == (rel == "3.0")


def test_named_network_uses_name_everywhere(generated):
    out = generated("cifar_cnn", "2.2", "cnn")
    net = parse_network_c(os.path.join(out, "cnn.c"))
    assert net.c_name == "cnn" and net.labels == [("_mem_pool_xSPI2_cnn", 112 << 20)]
    assert '#include "cnn_ecblobs.h"' in open(os.path.join(out, "cnn.c")).read()


def test_version_output(stedgeai):
    assert stedgeai("2.2").run("--version").stdout.strip() == "ST Edge AI Core v2.2.0-20266 2adc00962 (simulated)"
    assert stedgeai("3.0").run("--version").stdout.startswith("ST Edge AI Core v3.0.0")


# -- bad input ---------------------------------------------------------------------------------

def _one_line_error(proc, *needles):
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and lines[0].startswith("stedgeai: error: ")
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def _float_model(path, op="Relu"):
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])
    w = numpy_helper.from_array(np.eye(4, dtype=np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), helper.make_node(op, ["h"], ["y"], name="act")]
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w])), path)


def _qdq_with(path, op, dims=(1, 4)):
    """input → Q → DQ → <op> → Q → DQ → output."""
    g = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q0"),
         helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq0"),
         helper.make_node(op, ["xd"], ["h"], name="weird"),
         helper.make_node("QuantizeLinear", ["h", "s", "z"], ["hq"], name="q1"),
         helper.make_node("DequantizeLinear", ["hq", "s", "z"], ["y"], name="dq1")]
    inits = [numpy_helper.from_array(np.float32(0.1), "s"), numpy_helper.from_array(np.int8(0), "z")]
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(dims))
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, list(dims))
    onnx.save(helper.make_model(helper.make_graph(g, "g", [x], [y], inits)), path)


def _write_profile(tmp_path, mpool, name="default"):
    (tmp_path / "p.mpool").write_text(mpool)
    (tmp_path / "p.json").write_text(json.dumps({"Profiles": {name: {"memory_pool": "./p.mpool",
                                                                     "options": "--all-buffers-info"}}}))
    return str(tmp_path / "p.json")


def test_unsupported_operator(stedgeai, tmp_path):
    _qdq_with(tmp_path / "m.onnx", "Erf")
    proc = stedgeai().generate(str(tmp_path / "m.onnx"), tmp_path / "o",
                               profile_file=f"{MODELS}/kws_mlp/neural_art.json")
    _one_line_error(proc, str(tmp_path / "m.onnx"), "node 'weird'", "operator 'Erf'", "fix:")
    assert not (tmp_path / "o").exists()


def test_empty_onnx_file(stedgeai, tmp_path):
    (tmp_path / "m.onnx").write_bytes(b"")
    proc = stedgeai().generate(str(tmp_path / "m.onnx"), tmp_path / "o",
                               profile_file=f"{MODELS}/kws_mlp/neural_art.json")
    _one_line_error(proc, str(tmp_path / "m.onnx"), "empty", "fix:")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("content, problem", [(b"", "empty"), (b"\x10\x00\x00\x00NOPE" + bytes(16), "not a TFLite")])
def test_bad_tflite_file(stedgeai, tmp_path, content, problem):
    (tmp_path / "m.tflite").write_bytes(content)
    proc = stedgeai().generate(str(tmp_path / "m.tflite"), tmp_path / "o",
                               profile_file=f"{MODELS}/kws_mlp/neural_art.json")
    _one_line_error(proc, str(tmp_path / "m.tflite"), problem, "fix:")
    assert not (tmp_path / "o").exists()


def test_unsupported_tflite_operator_names_it(stedgeai, tmp_path):
    """A TFLite operator the tool does not lower: one line naming its output tensor and the operator."""
    import tflite_writer
    from stedgeai_sim.onnx_import import import_onnx
    from tflite.BuiltinOperator import BuiltinOperator
    net = import_onnx(os.path.join(MODELS, "kws_mlp", "model.onnx"))
    w = tflite_writer._Writer()
    for layer in net.layers:
        w.layer(layer)
    w.opcodes[w.opcodes.index(BuiltinOperator.SOFTMAX)] = BuiltinOperator.ELU
    (tmp_path / "m.tflite").write_bytes(w.finish(net))
    proc = stedgeai().generate(str(tmp_path / "m.tflite"), tmp_path / "o",
                               profile_file=f"{MODELS}/kws_mlp/neural_art.json")
    _one_line_error(proc, str(tmp_path / "m.tflite"), f"'{net.outputs[0].name}' (ELU)", "operator 'ELU'", "fix:")


@pytest.mark.parametrize("dims, refusal", [(["N", 4], None), ([1, "L"], "input 'x' has a dynamic dimension 1"),
                                           ([1, 0], "input 'x' has dimension 1 of size 0")])
def test_dynamic_dimensions(stedgeai, tmp_path, dims, refusal):
    """A symbolic batch runs as batch 1; any other dynamic dimension is refused, never taken as 1;
    a dimension of size 0 is said as such (not as a dynamic one)."""
    _qdq_with(tmp_path / "m.onnx", "Relu", dims)
    proc = stedgeai().generate(str(tmp_path / "m.onnx"), tmp_path / "o",
                               profile_file=f"{MODELS}/kws_mlp/neural_art.json")
    if refusal is None:
        assert proc.returncode == 0, proc.stderr
        info = json.loads((tmp_path / "o" / "network_c_info.json").read_text())
        assert info["graphs"][0]["original_inputs"][0]["shape"] == [1, 4]
    else:
        _one_line_error(proc, str(tmp_path / "m.onnx"), refusal, "fix:")
        assert not (tmp_path / "o").exists()


def test_non_int8_model(stedgeai, tmp_path):
    _float_model(tmp_path / "f.onnx")
    proc = stedgeai().generate(str(tmp_path / "f.onnx"), tmp_path / "o",
                               profile_file=f"{MODELS}/kws_mlp/neural_art.json")
    _one_line_error(proc, "f.onnx", "not int8", "quantise the model")


def test_missing_profile_file(stedgeai, tmp_path):
    proc = stedgeai().generate("kws_mlp", tmp_path / "o", profile_file=str(tmp_path / "none.json"))
    _one_line_error(proc, "none.json", "profile file not found")


def test_profile_name_not_in_json(stedgeai, tmp_path):
    proc = stedgeai().generate("kws_mlp", tmp_path / "o", profile="fast")
    _one_line_error(proc, "neural_art.json", "profile 'fast' is not defined", "defined: default")


def test_malformed_mpool(stedgeai, tmp_path):
    proc = stedgeai().generate("kws_mlp", tmp_path / "o", profile_file=_write_profile(tmp_path, '{"memory": [}'))
    _one_line_error(proc, "p.mpool", "malformed .mpool file", "line 1")


def test_pool_too_small_for_weights(stedgeai, tmp_path):
    mpool = json.load(open(f"{MODELS}/kws_mlp/kws_mlp.mpool"))
    mpool["memory"]["mempools"][0]["size"] = {"value": "64", "magnitude": "KBYTES"}
    proc = stedgeai().generate("kws_mlp", tmp_path / "o", profile_file=_write_profile(tmp_path, json.dumps(mpool)))
    _one_line_error(proc, "p.mpool", "pool 'AXISRAM2' (65536 bytes) is too small for the weights")
    assert not (tmp_path / "o").exists()


def test_an_activation_pool_with_a_long_fname_generates(stedgeai, tmp_path):
    """A pool without params writes no .raw, so its fname names no file: ST's tool takes it."""
    mpool = json.load(open(f"{MODELS}/kws_mlp/kws_mlp.mpool"))
    mpool["memory"]["mempools"][1]["fname"] = "A" * 230   # npuRAM5: activations
    proc = stedgeai().generate("kws_mlp", tmp_path / "o", profile_file=_write_profile(tmp_path, json.dumps(mpool)))
    assert proc.returncode == 0, proc.stderr
    assert [f for f in os.listdir(tmp_path / "o") if f.endswith(".raw")] == ["network_atonbuf.AXISRAM2.raw"]


def test_unknown_cli_option(stedgeai, tmp_path):
    proc = stedgeai().generate("kws_mlp", tmp_path / "o", "--turbo")
    _one_line_error(proc, "unrecognized arguments: --turbo", "stedgeai generate --help")


def _n6_imports(path):
    """The n6 modules one Python file imports, at any depth of its code, absolute or relative."""
    import ast
    package = os.path.relpath(os.path.dirname(path), os.path.join(ROOT, "site_scons")).replace(os.sep, ".")
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "n6"}
        elif isinstance(node, ast.ImportFrom) and node.level and package.startswith("n6"):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            target = f"{base}.{node.module}" if node.module else base
            found |= {target} | {f"{target}.{a.name}" for a in node.names}    # a name may be a submodule
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "n6":
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return found


def _closure(modules):
    seen, todo = set(), set(modules)
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            path = os.path.join(ROOT, "site_scons", *module.split(".")) + ".py"
            if not os.path.isfile(path):
                path = os.path.join(ROOT, "site_scons", *module.split("."), "__init__.py")
            todo |= _n6_imports(path) if os.path.isfile(path) else set()
            todo |= {module.rpartition(".")[0]} if "." in module else set()
    return seen


def test_step_code_is_the_import_closure():
    """A step reruns when a module its code imports changes (and only then): the closure the build
    reads from import lines equals the one Python's own parser finds, for the simulated tool's
    code (generation) and for the steps' entry modules."""
    import glob
    from n6.simulators import CODE
    from site_tools.n6_run import RUN_MODULES
    sim = glob.glob(os.path.join(ROOT, "sim", "stedgeai", "stedgeai_sim", "*.py"))
    entries = [{m for f in sim for m in _n6_imports(f)}, ["n6.reloc.prepare"],   # seeded by Python's parser too
               ["n6.reloc.pipeline", "n6.board"], ["n6.flash.step"], RUN_MODULES]
    for modules in entries:
        want = {os.path.realpath(p) for p in _n6_files(modules)}
        assert {os.path.realpath(p) for p in CODE.closure(modules)} == want


READS = r"""
import json, sys
read = set()
sys.addaudithook(lambda event, args: read.add(args[0]) if event == "open" and isinstance(args[0], str) else None)
from stedgeai_sim.cli import run
for model, out in json.loads(sys.argv[1]):
    assert run(["generate", "-m", model, "--target", "stm32n6", "--st-neural-art",
                "default@" + model.rsplit("/", 1)[0] + "/neural_art.json", "-o", out, "-w", out + "_ws"]) == 0
read |= {getattr(m, "__file__", None) or "" for m in list(sys.modules.values())}
print(json.dumps(sorted(read)))
"""


def test_a_generate_reads_no_project_file_its_step_does_not_depend_on(sim_install, tmp_path):
    """The generate step depends on the simulated tool's code as its load() and import lines name it
    (n6_scons.sim_tool_code): every file of the project a generate opens or imports
    (onnx and tflite models, epoch-controller blobs) is in that list, so a change to any regenerates."""
    import subprocess
    import sys
    from n6.simulators import code_files, sources
    runs = [[os.path.join(MODELS, m, f), str(tmp_path / m)] for m, f in
            [("cifar_cnn", "model.onnx"), ("ds_cnn", "model.tflite"), ("kws_mlp_f32", "model.onnx")]]
    env = dict(os.environ, STEDGEAI_SIM_ROOT=sim_install("2.2"),
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "sim", "stedgeai"), os.path.join(ROOT, "site_scons")]))
    proc = subprocess.run([sys.executable, "-c", READS, json.dumps(runs)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    code = [os.path.join(ROOT, d) for d in ("sim", "site_scons")]
    read = {os.path.realpath(f) for f in json.loads(proc.stdout) if f.startswith(tuple(code)) and os.path.isfile(f)}
    ecblob = os.path.realpath(os.path.join(ROOT, "sim", "npu", "npu_model", "ecblob.py"))
    assert ecblob in read   # loaded by name, not imported
    assert sorted(read - {os.path.realpath(f) for f in code_files(sources("stedgeai_sim"))}) == []


def _n6_files(modules):
    """The files of the n6 modules `modules` and of those they import (Python's own parser)."""
    base = [os.path.join(ROOT, "site_scons", *m.split(".")) for m in _closure(modules)]
    return {p for b in base for p in (b + ".py", os.path.join(b, "__init__.py")) if os.path.isfile(p)}


def test_the_simulator_modules_a_file_loads_are_followed_through_its_imports_and_tables():
    """emit_c.py loads the blob format by name; it imports the register map, which names its table;
    the n6 modules it imports are followed as Python's parser finds them."""
    from n6.simulators import PACKAGES, code_files
    emit_c = os.path.join(PACKAGES["stedgeai_sim"], "emit_c.py")
    got = code_files([emit_c])
    npu = PACKAGES["npu_model"]
    assert [f for f in got if not f.startswith(os.path.join(ROOT, "site_scons"))] == \
        [os.path.join(npu, f) for f in ("__init__.py", "aton_map.txt", "ecblob.py", "registers.py")] + \
        [os.path.join(PACKAGES["stedgeai_sim"], f) for f in ("__init__.py", "emit_c.py")]
    assert {f for f in got if f.startswith(os.path.join(ROOT, "site_scons"))} == _n6_files(_n6_imports(emit_c))


def test_code_files_follow_subpackages_and_other_simulator_packages():
    """A module of a subpackage brings its packages' __init__.py; an import of another simulator
    package's module (n6board's memory map reads the programmer's board state) is followed."""
    from n6.simulators import PACKAGES, code_files
    board, programmer = PACKAGES["n6board"], PACKAGES["programmer_sim"]
    assert code_files([os.path.join(board, "dk", "memory_map.py")]) == [
        os.path.join(board, "__init__.py"), os.path.join(board, "dk", "__init__.py"),
        os.path.join(board, "dk", "memory_map.py"), os.path.join(programmer, "__init__.py"),
        os.path.join(programmer, "board_state.py")]
