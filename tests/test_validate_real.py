"""`scons validate` of ST's 2.2 samples (the test bed's real stedgeai outputs, built with the real
install) against LiteRT on their published source models: flashed with the params pool at its
address (0x71000000) and the image at 0x72000000 (a board file whose firmware reads it there),
computed by the NPU model on the simulated board and judged by the simulated-NPU rule
(docs/validate.md). ST's own 2.2 firmware on the DK twin reads the image at 0x71000000 only, where
the pool lies: it finds no model and stops, as it would on a DK.

Needs the test bed named by N6_REAL_STEDGEAI."""
import json
import os
import shutil

import pytest

from conftest import scons
from test_real_install import REAL, SAMPLES, _install, repo  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(not (REAL and os.path.isdir(os.path.join(REAL, "sources"))),
                                reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")
RUNS = {"nucleo_mnv1": 6, "blazeface": 2}
ARGS = ("RELOC_ABSOLUTE_FLASH_POOLS=1", "BOARD=pool-dk.toml")


@pytest.fixture(scope="module")
def sources(repo):  # noqa: F811  (repo: the samples as prebuilt models)
    """The samples naming their published source model, and `pool-dk.toml`."""
    for sample in RUNS:
        dest = os.path.join(repo, "models", sample)
        shutil.copy(os.path.join(REAL, "sources", sample, "model.tflite"), dest)
        with open(os.path.join(dest, "model.json"), "w") as f:
            json.dump({"source": "model.tflite"}, f)
    with open(os.path.join(repo, "firmware", "boards", "stm32n6570-dk.toml")) as f:
        text = f.read()
    with open(os.path.join(repo, "pool-dk.toml"), "w") as f:
        f.write(text.replace("network = 0x71000000", "network = 0x72000000")
                .replace("params = 0x71800000", "params = 0x72800000"))
    return repo


@pytest.mark.parametrize("sample", [s for s in RUNS if SAMPLES.get(s) == "2.2"])
def test_a_real_sample_validates_on_the_simulated_board_by_the_simulated_npu_rule(sources, sample):
    proc = scons(sources, f"validate-{sample}", *ARGS, f"RUNS={RUNS[sample]}", env={"STEDGEAI_CORE_DIR": _install()},
                 check=False, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "; simulated NPU: at most 48 LSB" in proc.stdout
    with open(os.path.join(sources, "build", sample, "run", "validate.json")) as f:
        report = json.load(f)
    assert report["passed"] and report["rule"] == "simulated NPU" and report["simulated"]
    assert report["reference"].startswith("LiteRT ")
    if sample == "nucleo_mnv1":        # a classifier: the same class as LiteRT in every run (ST's acc)
        assert [o["st"]["acc"] for o in report["outputs"]] == [1.0]


@pytest.mark.skipif(SAMPLES.get("nucleo_mnv1") != "2.2", reason="the test bed has no 2.2 nucleo_mnv1 sample")
def test_st_firmware_on_the_twin_finds_no_image_where_the_pool_lies(sources):
    proc = scons(sources, "run-nucleo_mnv1", *ARGS, "BUILD_DIR=build-twin", f"SIM_FIRMWARE={_install()}",
                 env={"STEDGEAI_CORE_DIR": _install()}, check=False, timeout=1800)
    assert proc.returncode == 2
    assert "the simulated board did not start: n6board: breakpoint (BKPT): the firmware stopped itself" in \
        proc.stdout + proc.stderr
