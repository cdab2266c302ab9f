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
    for source in ("nucleo_mnv1", "blazeface"):
        model_parts, mpool_parts, _, _ = SOURCES[source]
        folder = os.path.join(repo, "models", source)
        os.makedirs(folder)
        shutil.copyfile(os.path.join(REAL, *model_parts), os.path.join(folder, "model.tflite"))
        shutil.copyfile(os.path.join(REAL, *mpool_parts), os.path.join(folder, "st.mpool"))
        with open(os.path.join(folder, "neural_art.json"), "w") as f:
            json.dump({"Profiles": {"default": {"memory_pool": "./st.mpool",
                                                  "options": "--optimization 3 --all-buffers-info"}}}, f)
    return repo


@pytest.mark.parametrize("source, firmware", [("nucleo_mnv1", "own"), ("blazeface", "own"), ("nucleo_mnv1", "st"),
                                              ("blazeface", "st")])
def test_published_source_runs_on_the_simulated_board(repo_with_sources, source, firmware):
    """flash, run and validate with SCons: the board's outputs equal the host build's (0 LSB),
    which equals LiteRT's (above), with the simulated board's firmware and with ST's validation
    firmware on the DK twin (SIM_FIRMWARE). About 1e9 emulated instructions per inference."""
    from conftest import scons
    extra = [f"SIM_FIRMWARE={os.path.join(REAL, '2.2')}"] if firmware == "st" else []
    scons(repo_with_sources, "flash", "run", "validate", f"MODEL={source}", "RUNS=1", "VALIDATE_TOLERANCE=0", *extra,
          timeout=900)
    val = json.load(open(os.path.join(repo_with_sources, "build", source, "run", "validate.json")))
    assert val["passed"] and all(o["max_abs_lsb"] == 0 and o["top1"] == 1.0 for o in val["outputs"])
