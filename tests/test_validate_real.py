"""`scons validate` of ST's 2.2 samples (the test bed's real stedgeai outputs, built with the real
install) against LiteRT on their published source models, computed by the NPU model and judged by
the simulated-NPU rule (docs/validate.md): on the simulated board with its own firmware, flashed
with the params pool at its address (0x71000000) and the image at 0x72000000 (a board file whose
firmware reads it there); and on ST's own 2.2 firmware on the DK twin, which reads the image at
0x71000000 only, where the pool lies: prepare moves the pool to 0x71800000 (network.c's addresses
and the pool's descriptor), the image stays at 0x71000000.

Needs the test bed named by N6_REAL_STEDGEAI."""
import json
import os
import re

import pytest

from conftest import name_source, scons
from n6.run.options import NPU_MAX_LSB
from test_real_install import REAL, SAMPLES, _install, repo  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(not (REAL and os.path.isdir(os.path.join(REAL, "sources"))),
                                reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")
RUNS = {"nucleo_mnv1": 6, "blazeface": 2}
ARGS = ("RELOC_ABSOLUTE_FLASH_POOLS=1", "BOARD=pool-dk.toml")


@pytest.fixture(scope="module")
def sources(repo):  # noqa: F811  (repo: the samples as prebuilt models)
    """The samples naming their published source model."""
    for sample in RUNS:
        name_source(repo, REAL, sample)
    return repo


@pytest.mark.parametrize("sample", [s for s in RUNS if SAMPLES.get(s) == "2.2"])
def test_a_real_sample_validates_on_the_simulated_board_by_the_simulated_npu_rule(sources, sample):
    proc = scons(sources, f"validate-{sample}", *ARGS, f"RUNS={RUNS[sample]}", env={"STEDGEAI_CORE_DIR": _install()},
                 check=False, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert f"; simulated NPU: <= {NPU_MAX_LSB} LSB, top-1 within 48 LSB" in proc.stdout
    with open(os.path.join(sources, "build", sample, "run", "validate.json")) as f:
        report = json.load(f)
    assert report["passed"] and report["rule"] == "simulated NPU" and report["simulated"]
    assert report["reference"].startswith("LiteRT ")
    if sample == "nucleo_mnv1":        # a classifier: the same class as LiteRT in every run (ST's acc)
        assert [o["st"]["acc"] for o in report["outputs"]] == [1.0]


@pytest.mark.skipif(any(SAMPLES.get(s) != "2.2" for s in RUNS), reason="the test bed lacks a 2.2 sample")
def test_the_summary_says_which_rule_and_clause_passed_each_sample(sources):
    """A several-model validate's summary: each row names the simulated-NPU rule; blazeface,
    whose strict top-1 differs from LiteRT's on seed 1's runs, passed on the near tie and says so
    beside both figures (docs/validate.md); the JSON carries the same."""
    proc = scons(sources, "validate", "MODEL=nucleo_mnv1,blazeface", *ARGS, "RUNS=2", "SEED=1",
                 env={"STEDGEAI_CORE_DIR": _install()}, check=False, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    with open(os.path.join(sources, "build", "validate-summary.json")) as f:
        rows = {r["model"]: r for r in json.load(f)["models"]}
    assert rows["blazeface"]["top1"] < 1 and rows["blazeface"]["top1_tie"] == 1
    assert [r["rule"] for r in rows.values()] == [f"<= {NPU_MAX_LSB} LSB, top-1 within 48 LSB"] * 2
    table = proc.stdout[proc.stdout.index("validate summary: 2 of 2 models passed"):].splitlines()
    assert re.match(rf"blazeface +passed \(near tie\) +<= {NPU_MAX_LSB} LSB, top-1 within 48 LSB +\d+ +"
                    rf"{100 * rows['blazeface']['top1']:.1f} +100\.0 ", table[3]), table
    assert re.match(rf"nucleo_mnv1 +passed +<= {NPU_MAX_LSB} LSB, top-1 within 48 LSB +\d+ +100\.0 +100\.0 ",
                    table[4]), table


TWIN_RUNS = {"nucleo_mnv1": 2, "blazeface": 1}


@pytest.mark.parametrize("sample", [s for s in TWIN_RUNS if SAMPLES.get(s) == "2.2"])
def test_a_real_sample_validates_on_st_firmware_on_the_twin_with_its_pool_moved(sources, sample):
    proc = scons(sources, f"validate-{sample}", "RELOC_ABSOLUTE_FLASH_POOLS=1", "BUILD_DIR=build-twin",
                 f"SIM_FIRMWARE={_install()}", f"RUNS={TWIN_RUNS[sample]}", env={"STEDGEAI_CORE_DIR": _install()},
                 check=False, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert f"  MOVE     models/{sample}/network.c: absolute flash pool 'xSPI2' 0x71000000 → 0x71800000" in proc.stdout
    with open(os.path.join(sources, "build-twin", sample, "flash", "flash.json")) as f:
        assert [(i["role"], i["address"]) for i in json.load(f)["images"]] == \
            [("pool", "0x71800000"), ("network", "0x71000000")]
    with open(os.path.join(sources, "build-twin", sample, "run", "validate.json")) as f:
        report = json.load(f)
    assert report["passed"] and report["rule"] == "simulated NPU" and report["simulated"]
    if sample == "nucleo_mnv1":
        assert [o["st"]["acc"] for o in report["outputs"]] == [1.0]


@pytest.mark.skipif(SAMPLES.get("nucleo_mnv1") != "2.2", reason="the test bed has no 2.2 nucleo_mnv1 sample")
def test_the_simulated_board_time_holds_the_npu_model_s_cycles(sources):
    """nucleo_mnv1 on the simulated board (seed 0): the IO-only run's cycles, and so its
    ms / inference, are the per-layer run's CPU cycles plus the NPU model's chains' (1 GHz NPU
    cycles as 800 MHz MCU cycles), exactly; its split is not claimed (the reply carries the total)."""
    runs = {}
    for per_layer in ("no", "yes"):
        proc = scons(sources, "run-nucleo_mnv1", "RELOC_ABSOLUTE_FLASH_POOLS=1", "BUILD_DIR=build-cycles", "RUNS=1",
                     f"RUN_PER_LAYER={per_layer}", env={"STEDGEAI_CORE_DIR": _install()}, check=False, timeout=1800)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        with open(os.path.join(sources, "build-cycles", "nucleo_mnv1", "run", "run.json")) as f:
            runs[per_layer], = json.load(f)["runs"]
        runs[per_layer]["stdout"] = proc.stdout
    io, split = runs["no"], runs["yes"]
    assert (split["cpu_cycles"], split["npu_cycles"]) == (671_778, 366_074)
    assert io["cycles"] == split["cycles"] == 671_778 + 366_074 and io["ms"] == pytest.approx(1.2973, abs=1e-4)
    assert (io["cpu_cycles"], io["npu_cycles"]) == (None, None)
    assert "1,037,852 in all (the split needs RUN_PER_LAYER=1)" in io["stdout"]
    assert re.search(r"\nCPU / NPU cycles per inference +671,778 / 366,074\n", split["stdout"])
