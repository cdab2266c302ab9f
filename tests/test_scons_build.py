"""End to end: `scons` in a fresh copy of the repository, with the real toolchain."""
import json
import os
import re
import shutil

import pytest

from conftest import BUNDLED, copy_repo, scons


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    repo = copy_repo(tmp_path_factory.mktemp("repo"))
    proc = scons(repo)
    return repo, proc


def test_default_build_generates_every_model(built):
    repo, proc = built
    for model in BUNDLED:
        out = os.path.join(repo, "build", model, "st_ai_output")
        assert os.path.exists(os.path.join(out, "network.c"))
        info = json.load(open(os.path.join(out, "network_c_info.json")))
        assert info["environment"]["tools"][0]["version"].endswith("(simulated)")
    assert re.search(r"^  GEN      build/kws_mlp/st_ai_output/network\.c$", proc.stdout, re.M)
    assert re.search(r"^  AR       build/stedgeai-sim/2\.2/.*/NetworkRuntime1020_CM55_GCC_PIC\.a$", proc.stdout, re.M)


def test_second_run_is_up_to_date(built):
    repo, _ = built
    assert scons(repo, "-q", check=False).returncode == 0
    assert "up to date" in scons(repo).stdout


def test_touch_without_change_rebuilds_nothing(built):
    repo, _ = built
    model = os.path.join(repo, "models", "kws_mlp", "model.onnx")
    st = os.stat(model)
    os.utime(model, (st.st_atime + 5, st.st_mtime + 5))
    proc = scons(repo)
    assert "GEN" not in proc.stdout and scons(repo, "-q", check=False).returncode == 0


def test_bad_model_folder_is_one_line_error(built, tmp_path):
    repo = copy_repo(tmp_path / "repo")
    mpool = os.path.join(repo, "models", "kws_mlp", "kws_mlp.mpool")
    with open(mpool, "w") as f:
        f.write('{"memory": {"mempools": [ }')
    proc = scons(repo, check=False)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr
    assert "models/kws_mlp/kws_mlp.mpool: malformed .mpool file" in errors[0]


def test_generate_failure_is_one_line_and_leaves_nothing_up_to_date(built, tmp_path):
    repo = copy_repo(tmp_path / "repo")
    shutil.copytree(os.path.join(built[0], "build"), os.path.join(repo, "build"), symlinks=True)
    prof = os.path.join(repo, "models", "kws_mlp", "neural_art.json")
    data = json.load(open(prof))
    data["Profiles"]["default"]["options"] += " --all-buffers-info"   # a change, so generate re-runs
    json.dump(data, open(prof, "w"))
    model = os.path.join(repo, "models", "kws_mlp", "model.onnx")
    with open(model, "wb") as f:
        f.write(b"not an onnx file")
    proc = scons(repo, "kws_mlp", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert len(errors) == 1 and "models/kws_mlp/model.onnx: not a readable ONNX model" in errors[0], proc.stderr
    assert scons(repo, "-q", "kws_mlp", check=False).returncode != 0


def test_sources_that_include_the_model_config_depend_on_it(built):
    """MODEL_CONF is a macro include (no scanner follows it): the model's sources must wait for
    prepare and follow its changes. The reloc callbacks, shared by the models, read none of it."""
    repo, _ = built
    for obj in ("network_reloc.o", "network_reloc_mempools.o"):
        tree = scons(repo, "-n", "--tree=prune", f"build/kws_mlp/reloc/obj/{obj}").stdout
        assert "build/kws_mlp/reloc/network_reloc_conf.h" in tree, obj
    tree = scons(repo, "-n", "--tree=prune", "build/runtime/secure-dbg_info/ll_aton_reloc_callbacks.o").stdout
    assert "ll_aton_reloc_callbacks.c" in tree and "_reloc_conf.h" not in tree


def test_help_lists_every_declared_target_and_each_works(built):
    """`scons -h` lists what the tools declare (validate-<model> was missing from a hand-written
    list); every per-model form named there is a target SCons knows."""
    repo, _ = built
    helped = scons(repo, "-h").stdout
    listed = re.findall(r"^  (\S+)\s{2,}", helped.split("Targets:")[1].split("Models")[0], re.M)
    assert listed == ["build", "<model>", "check", "flash", "flash-<model>", "run", "run-<model>", "validate",
                      "validate-<model>", "profile", "profile-<model>"]
    for name in listed:
        target = name.replace("<model>", "kws_mlp")
        proc = scons(repo, "-n", target, check=False)
        assert "Do not know how to make" not in proc.stderr, (target, proc.stderr)


def test_a_broken_model_asked_for_alone_builds_nothing_else(tmp_path):
    """`scons kws_mlp` with a broken kws_mlp folder: its one line at once, no other model built."""
    repo = copy_repo(tmp_path / "repo")
    with open(os.path.join(repo, "models", "kws_mlp", "kws_mlp.mpool"), "w") as f:
        f.write('{"memory": {"mempools": [ }')
    proc = scons(repo, "kws_mlp", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert len(errors) == 1 and "models/kws_mlp/kws_mlp.mpool: malformed .mpool file" in errors[0], proc.stderr
    assert not re.search(r"^  (GEN|PREPARE|CC|LINK|PACK) ", proc.stdout, re.M), proc.stdout
