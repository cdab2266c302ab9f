"""ST's own host package (stm_ai_runner, unmodified, from the test bed) against the simulated board,
for every bundled model: connect and summary, invoke with batch 1 and batch 3 (ST's batching),
IO-only, per-layer, per-layer-with-data and perf-only (constant-value inputs) runs, then ST's
checker.py and npu_profiler.py to their end. ST's outputs equal `scons run`'s outputs for the same
inputs, byte for byte. Needs N6_REAL_STEDGEAI (its st_ai_runner.sh); skipped otherwise."""
import json
import os
import subprocess

import numpy as np
import pytest

from conftest import ROOT, copy_repo, every_model, scons
from n6.aivalidation import Client
from n6.run.inference import output_path
from n6.run.session import simulated_board

REAL = os.environ.get("N6_REAL_STEDGEAI", "")
RUNNER = os.path.join(REAL, "st_ai_runner.sh")
EXAMPLES = os.path.join(REAL, "st-validation", "client", "examples")
pytestmark = [pytest.mark.skipif(not (REAL and os.path.exists(RUNNER)),
                                 reason="no ST client in the test bed (set N6_REAL_STEDGEAI to its folder)"),
              pytest.mark.slow]
BOARD_FILE = os.path.join(ROOT, "firmware", "boards", "stm32n6570-dk.toml")
MODELS = every_model()

# Run in ST's client's Python: every mode ST's AiRunner offers, outputs and per-node facts saved.
SCRIPT = r"""
import json, sys
import numpy as np
from stm_ai_runner import AiRunner
port, inputs_path, out_path = sys.argv[1:4]
r = AiRunner()
assert r.connect(f"serial:{port}:921600"), r.get_error()
r.summary()
loaded = np.load(inputs_path)
batch = [loaded[k] for k in sorted(loaded.files)]
facts, saved = {"inputs": [[i.name, list(i.shape), str(np.dtype(i.dtype))] for i in r.get_inputs()]}, {}
for b in (1, 3):
    outs, _ = r.invoke([x[:b] for x in batch])
    for j, o in enumerate(outs):
        saved[f"b{b}_{j}"] = o
for mode in ("IO_ONLY", "PER_LAYER", "PER_LAYER_WITH_DATA", "PERF_ONLY"):
    outs, prof = r.invoke([x[:1] for x in batch], mode=getattr(AiRunner.Mode, mode))
    facts[mode] = {"outputs": [list(o.shape) for o in outs], "nodes": len(prof.get("c_nodes", [])),
                   "with_data": sum(d is not None and d.size > 0 for n in prof.get("c_nodes", []) for d in n["data"])}
    for j, o in enumerate(outs):
        saved[f"{mode}_{j}"] = o
np.savez(out_path, **saved)
print("FACTS " + json.dumps(facts))
r.disconnect()
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return copy_repo(tmp_path_factory.mktemp("st-client") / "repo")


def _st(*argv, timeout=900):
    proc = subprocess.run([RUNNER, *argv], capture_output=True, text=True, timeout=timeout, cwd=os.path.dirname(RUNNER))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize("model", MODELS)
def test_st_client_runs_every_mode_and_equals_scons_run(repo, tmp_path, model):
    scons(repo, "flash", f"MODEL={model}")
    with simulated_board(BOARD_FILE, state=os.path.join(repo, "build", "sim-board")) as port, \
            Client.open(port) as c:
        c.connect()
        descs = c.model().inputs
    rng = np.random.default_rng(7)
    batch = {f"in{i}": rng.integers(-128, 128, size=(3,) + tuple(d.shape[1:])).astype(d.dtype)
             for i, d in enumerate(descs)}
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, **batch)
    ours = scons(repo, "run", f"MODEL={model}", "RUNS=3", f"INPUTS={inputs}")
    assert "  RUN " in ours.stdout
    run_dir = os.path.join(repo, "build", model, "run")
    run = json.load(open(os.path.join(run_dir, "run.json")))
    outs = [np.load(output_path(run_dir, o["name"])) for o in run["outputs"]]
    st_out = tmp_path / "st.npz"
    with simulated_board(BOARD_FILE, state=os.path.join(repo, "build", "sim-board")) as port:
        facts = json.loads(_st("-c", SCRIPT, port, str(inputs), str(st_out)).split("FACTS ", 1)[1])
        _st(os.path.join(EXAMPLES, "checker.py"), "-d", f"serial:{port}:921600")
        _st(os.path.join(EXAMPLES, "checker.py"), "-d", f"serial:{port}:921600", "--perf-only")
        prof = _st(os.path.join(EXAMPLES, "npu_profiler.py"), "-d", f"serial:{port}:921600")
    st = np.load(st_out)
    assert facts["inputs"][0][1][0] == 1             # the board's shape starts with the batch
    for j, ours_j in enumerate(outs):
        assert np.array_equal(st[f"b3_{j}"], ours_j)                 # ST's batch of 3 = three `scons run` runs
        assert np.array_equal(st[f"b1_{j}"], ours_j[:1])
        for mode in ("IO_ONLY", "PER_LAYER", "PER_LAYER_WITH_DATA"):
            assert np.array_equal(st[f"{mode}_{j}"], ours_j[:1])
    assert facts["PER_LAYER"]["nodes"] == len(run.get("epochs") or []) or facts["PER_LAYER"]["nodes"] > 0
    assert facts["PER_LAYER_WITH_DATA"]["with_data"] > 0           # the simulated board sends epoch data
    assert all(s == [0] for s in facts["PERF_ONLY"]["outputs"])     # perf-only: no output data comes back
    assert "Summary" in prof and "inf/s" in prof


def _descriptor(proto, tmp_path):
    """{message: {field: (number, type, label, type name, default)}}, {enum: {name: value}} of a .proto."""
    import shutil
    import sys
    from google.protobuf import descriptor_pb2
    tmp_path.mkdir()
    shutil.copy(proto, tmp_path)
    out = tmp_path / (os.path.basename(proto) + ".pb")
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp_path}", f"--descriptor_set_out={out}",
                    os.path.basename(proto)], check=True, cwd=tmp_path)
    f = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file[0]
    messages = {m.name: {x.name: (x.number, x.type, x.label, x.type_name.split(".")[-1], x.default_value)
                         for x in m.field} for m in f.message_type}
    return messages, {e.name: {v.name: v.number for v in e.value} for e in f.enum_type}


def test_our_schema_is_st_schema(tmp_path):
    """Every message and enum of ST's stm32msg.proto is ours, field for field (number, type,
    required/optional/repeated, default); ours adds only the 1-byte-header board's sysinfo."""
    st = _descriptor(os.path.join(REAL, "st-validation", "client", "stm_ai_runner", "nanopb", "stm32msg.proto"),
                     tmp_path / "st")
    ours = _descriptor(os.path.join(ROOT, "site_scons", "n6", "aivalidation", "n6_aivalidation.proto"),
                       tmp_path / "ours")
    for kind in (0, 1):
        assert {k: v for k, v in ours[kind].items() if not k.endswith("Legacy")} == st[kind]
