"""ST's real images end to end on the simulated board with every hardware epoch computed by the
NPU model, no NPU_MODEL opt-in (N6_REAL_STEDGEAI): ST's 2.2 image of nucleo_mnv1 (ST's flow on the
test bed's install, its params at their absolute flash address) gives LiteRT's class on the
source model, each epoch compared with LiteRT's tensor (bench/npu_image.py). Simulated results:
the judge is LiteRT, not the silicon."""
import os
import sys

import numpy as np
import pytest

from conftest import ROOT
from test_real_install import REAL, SAMPLES

pytestmark = pytest.mark.skipif(not (REAL and os.path.isdir(os.path.join(REAL, "2.2"))),
                                reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")
sys.path.insert(0, os.path.join(ROOT, "bench"))


@pytest.mark.skipif(SAMPLES.get("nucleo_mnv1") != "2.2", reason="the test bed has no 2.2 nucleo_mnv1")
def test_st_nucleo_mnv1_image_gives_litert_class_with_every_epoch_computed():
    import npu_samples
    from npu_image import infer, outputs_against_litert
    from npu_layers import Sample
    model = npu_samples.installed("nucleo_mnv1", "stop")
    sample = Sample("nucleo_mnv1", 0)
    rows, outputs = infer(sample, model)
    assert model.npu.not_computed == []
    by_epoch = {r["epoch"]: r for r in rows}
    assert by_epoch[3]["exact"] > 0.985 and by_epoch[3]["max_lsb"] == 1          # the first layer, as alone
    assert by_epoch[30]["exact"] > 0.7 and by_epoch[31]["max_lsb"] <= 8            # drift carried to the logits
    [out] = outputs_against_litert(sample, model, outputs)
    assert out["top1_agrees"] and out["max_difference"] < 0.1
    want = sample.it.get_tensor(sample.it.get_output_details()[0]["index"]).ravel()
    assert np.argmax(np.frombuffer(outputs[0], dtype=np.float32)) == np.argmax(want)


@pytest.mark.skipif(SAMPLES.get("blazeface") != "2.2", reason="the test bed has no 2.2 blazeface")
def test_st_blazeface_image_runs_to_its_end_its_first_layer_as_litert():
    """Crops (epoch 4's row-split 5x5 kernel), channel pads (ZFBIAS) and the runtime's transposes
    (library_ops.py) all computed; the first convolution compared (94.8% exact, 4 LSB measured)."""
    import npu_samples
    from npu_image import infer
    from npu_layers import Sample
    model = npu_samples.installed("blazeface", "stop")
    rows, outputs = infer(Sample("blazeface", 0), model)
    assert model.npu.not_computed == [] and len(outputs) == 4
    first = next(r for r in rows if r["epoch"] == 6)
    assert first["exact"] > 0.94 and first["max_lsb"] <= 4
    assert all(r["exact"] > 0.3 for r in rows if r["epoch"] < 60)          # drift, not garbage (0.4%)
