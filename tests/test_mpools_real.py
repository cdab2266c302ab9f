"""Every .mpool file of ST's test bed (the N6_reloc test mpools, the 3.x workspace's) read as
ST's tool reads it: each one, in a model folder of its own with a bundled model, builds to a
relocatable image. Opt-in: needs N6_REAL_STEDGEAI."""
import glob
import json
import os
import shutil

import pytest

from conftest import MODELS, copy_repo, scons

REAL = os.environ.get("N6_REAL_STEDGEAI")
pytestmark = pytest.mark.skipif(not REAL, reason="set N6_REAL_STEDGEAI to ST's test bed folder")
MODEL = "kws_mlp"        # the bundled model every test-bed memory layout can hold


def real_mpools():
    return sorted(glob.glob(os.path.join(REAL, "2.2", "scripts", "N6_reloc", "test", "mpools", "*.mpool")) +
                  glob.glob(os.path.join(REAL, "ec-workspace", "*.mpool"))) if REAL else []


def test_every_test_bed_mpool_builds_a_bundled_model(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    names = []
    for path in real_mpools():
        name = "mp_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_").lower()
        folder = os.path.join(repo, "models", name)
        os.makedirs(folder)
        shutil.copyfile(os.path.join(MODELS, MODEL, "model.onnx"), os.path.join(folder, "model.onnx"))
        shutil.copyfile(path, os.path.join(folder, "st.mpool"))
        profile = json.load(open(os.path.join(MODELS, MODEL, "neural_art.json")))
        for p in profile["Profiles"].values():
            p["memory_pool"] = "./st.mpool"
        json.dump(profile, open(os.path.join(folder, "neural_art.json"), "w"))
        names.append(name)
    assert len(names) == 12
    scons(repo, *names)
    for name in names:
        assert os.path.getsize(os.path.join(repo, "build", name, "network_rel.bin")) > 0, name
