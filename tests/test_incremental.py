"""Incremental builds redo exactly what a change requires (end to end, real toolchain)."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from n6.mpool import read_mpool
from n6.placement import params_pool
from n6.neural_art_profile import read_profile
from n6.releases import generate_outputs, release
from n6.stedgeai_install import CONF_SHARED_SOURCES, SIMULATED_RUNTIME_SOURCES

from conftest import BUNDLED, MODELS, ROOT, bump, copy_repo, scons

ALL_MODELS = sorted(d for d in os.listdir(MODELS)
                    if os.path.isdir(os.path.join(MODELS, d)) and not d.startswith((".", "_")))
STEP = re.compile(r"^  (GEN|PREPARE|CC|AR|LINK|IMAGE|PACK|INSTALL)\s+(\S+)", re.M)


def steps(proc):
    """(verb, model) of every progress line; model is the folder under build/."""
    out = []
    for verb, path in STEP.findall(proc.stdout):
        parts = path.split("/")
        out.append((verb, parts[1] if len(parts) > 1 else path))
    return out




@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = copy_repo(tmp_path_factory.mktemp("incr"))
    scons(repo)
    return repo


def _image(repo, model, build="build"):
    return open(os.path.join(repo, build, model, "network_rel.bin"), "rb").read()


def test_up_to_date_after_build(repo):
    assert scons(repo, "-q", check=False).returncode == 0


def test_touching_inputs_without_change_rebuilds_nothing(repo):
    for rel in ("models/tiny_prebuilt/network_atonbuf.xSPI2.raw", "models/tiny_prebuilt/network.c",
                "models/cifar_cnn/model.onnx", "models/cifar_cnn/cifar_cnn.mpool", "models/kws_mlp/neural_art.json"):
        bump(os.path.join(repo, rel))
    assert steps(scons(repo)) == []
    assert scons(repo, "-q", check=False).returncode == 0


def test_a_no_op_leaves_the_signature_database_as_it_is(repo):
    """A no-op writes nothing (SCons would rewrite the whole .sconsign); a change stores what it
    built, and what it stored decides the next run (a change of the one input, then its undoing,
    each rebuild)."""
    db = os.path.join(repo, "build", ".sconsign.dblite")
    scons(repo)
    before = os.stat(db).st_mtime_ns, open(db, "rb").read()
    assert "up to date" in scons(repo).stdout
    assert (os.stat(db).st_mtime_ns, open(db, "rb").read()) == before
    c = os.path.join(repo, "models", "tiny_prebuilt", "network.c")
    original = open(c, "rb").read()
    try:
        _rewrite(c, original.replace(b".act_max = 127,", b".act_max = 126,", 1))
        assert ("PREPARE", "tiny_prebuilt") in steps(scons(repo))
        assert os.stat(db).st_mtime_ns != before[0]
        assert scons(repo, "-q", check=False).returncode == 0
    finally:
        _rewrite(c, original)
    assert ("PREPARE", "tiny_prebuilt") in steps(scons(repo))
    assert scons(repo, "-q", check=False).returncode == 0


def test_raw_change_runs_pack_only(repo, tmp_path):
    raw = os.path.join(repo, "models", "tiny_prebuilt", "network_atonbuf.xSPI2.raw")
    data = bytearray(open(raw, "rb").read())
    data[100:116] = bytes(range(16))
    open(raw, "wb").write(data)
    bump(raw)
    proc = scons(repo, "--debug=explain")
    assert steps(proc) == [("PACK", "tiny_prebuilt")]
    assert "network_atonbuf.xSPI2.raw' changed" in proc.stdout   # explain names the cause
    clean = copy_repo(tmp_path / "clean")
    shutil.copyfile(raw, os.path.join(clean, "models", "tiny_prebuilt", "network_atonbuf.xSPI2.raw"))
    scons(clean, "tiny_prebuilt")
    assert _image(repo, "tiny_prebuilt") == _image(clean, "tiny_prebuilt")


def test_a_weight_change_reads_each_changed_file_once(repo):
    """A weight-only rebuild reads the new .raw once to decide; pack hashes the image as it
    writes it (its params' CRC-32 from a first pass), so the build reads it back not at all, and
    the results JSON once (SCons's visited() would hash every output a second time)."""
    raw = os.path.join(repo, "models", "tiny_prebuilt", "network_atonbuf.xSPI2.raw")
    with open(raw, "r+b") as f:
        f.seek(16)
        f.write(bytes(8) if f.read(8) != bytes(8) else b"\x01" * 8)
    bump(raw)
    proc = scons(repo, env={"PYTHONPATH": os.path.join(ROOT, "tests", "fixtures", "count_hashes")})
    hashed = re.findall(r"^HASHED (\S+)$", proc.stderr, re.M)
    assert steps(proc) == [("PACK", "tiny_prebuilt")]
    written = [os.path.join("build", "tiny_prebuilt", f) for f in ("network_rel.bin", "network_reloc_results.json")]
    assert [hashed.count(f) for f in [os.path.relpath(raw, repo)] + written] == [1, 0, 1], hashed
    assert len(hashed) == len(set(hashed)), hashed    # nothing read twice (earlier tests may leave racy files)


def test_a_split_weight_change_reads_back_none_of_what_pack_hashed_as_it_wrote(repo):
    """A split image and its params file are written in one pass and hashed as they are written:
    the run that packs them reads neither back; the next run hashes them (written this run: racy)
    and finds the signatures pack gave (-q: up to date)."""
    scons(repo, "RELOC_SPLIT=1")
    raw = os.path.join(repo, "models", "tiny_prebuilt", "network_atonbuf.xSPI2.raw")
    with open(raw, "r+b") as f:
        f.seek(32)
        f.write(os.urandom(8))
    bump(raw)
    counted = {"PYTHONPATH": os.path.join(ROOT, "tests", "fixtures", "count_hashes")}
    try:
        proc = scons(repo, "RELOC_SPLIT=1", env=counted)
        assert steps(proc) == [("PACK", "tiny_prebuilt")], proc.stdout + proc.stderr
        hashed = re.findall(r"^HASHED (\S+)$", proc.stderr, re.M)
        written = [os.path.join("build", "tiny_prebuilt", f) for f in ("network_rel.bin", "network_rel_params.bin",
                                                                       "network_reloc_results.json")]
        assert [hashed.count(f) for f in [os.path.relpath(raw, repo)] + written] == [1, 0, 0, 1], hashed
        proc = scons(repo, "-q", "RELOC_SPLIT=1", env=counted, check=False)
        assert proc.returncode == 0 and all(f in proc.stderr for f in written[:2]), proc.stdout + proc.stderr
    finally:
        scons(repo)


def test_a_new_raw_file_reruns_prepare(repo):
    """Prepare sees the .raw names, not their bytes: a new name must reach it (it picks the raws)."""
    extra = os.path.join(repo, "models", "tiny_prebuilt", "network_atonbuf.AXISRAM9.raw")
    open(extra, "wb").write(bytes(16))
    try:
        assert steps(scons(repo)) == [("PREPARE", "tiny_prebuilt"), ("PACK", "tiny_prebuilt")]
    finally:
        os.unlink(extra)
    assert steps(scons(repo)) == [("PREPARE", "tiny_prebuilt"), ("PACK", "tiny_prebuilt")]


def _rewrite(path, data, mtime_ns=None):
    """Rewrite `path` in place (same inode, like cp), optionally forcing its mtime."""
    with open(path, "r+b") as f:
        f.write(data)
        f.truncate()
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))


def test_tight_loop_rewrites_are_always_seen(repo, tmp_path):
    """A script alternates one byte of a .raw and the weights of an ONNX model, building in
    between, as fast as a fast machine does: each rewrite keeps the size and lands in the same
    whole second as the previous one (its mtime moves by a microsecond). Every image must match
    its inputs."""
    raw = os.path.join(repo, "models", "tiny_prebuilt", "network_atonbuf.xSPI2.raw")
    onnx_path = os.path.join(repo, "models", "kws_mlp", "model.onnx")
    raws = [open(raw, "rb").read()]
    raws.append(raws[0][:300] + bytes([raws[0][300] ^ 0x5A]) + raws[0][301:])
    other = tmp_path / "other.onnx"
    shutil.copyfile(onnx_path, other)
    _new_weights(str(other))
    models = [open(onnx_path, "rb").read(), open(other, "rb").read()]
    assert len(models[0]) == len(models[1]) and models[0] != models[1]
    expected = []
    for k in (1, 0):   # what each ONNX version builds to (mtimes well apart)
        _rewrite(onnx_path, models[k])
        bump(onnx_path)
        scons(repo, "kws_mlp")
        expected.insert(0, _image(repo, "kws_mlp"))
    assert expected[0] != expected[1]
    t_raw, t_onnx = os.stat(raw).st_mtime_ns, os.stat(onnx_path).st_mtime_ns
    for i in range(1, 9):
        k = i % 2
        t_raw, t_onnx = t_raw + 1000, t_onnx + 1000   # same second, other microsecond
        _rewrite(raw, raws[k], t_raw)
        _rewrite(onnx_path, models[k], t_onnx)
        scons(repo, "tiny_prebuilt", "kws_mlp")
        image = _image(repo, "tiny_prebuilt")
        assert raws[k] in image and raws[1 - k] not in image, f"stale tiny_prebuilt image after rewrite {i}"
        assert _image(repo, "kws_mlp") == expected[k], f"stale kws_mlp image after rewrite {i}"
    _rewrite(raw, raws[0])
    _rewrite(onnx_path, models[0])
    bump(raw)
    bump(onnx_path)


def test_same_size_edit_with_restored_mtime_is_seen(repo):
    """`cp -p`, `touch -r` or a checkout tool put an old mtime back on new content: only the
    ctime (set by the kernel) shows the change."""
    raw = os.path.join(repo, "models", "tiny_prebuilt", "network_atonbuf.xSPI2.raw")
    old = time.time_ns() - 100 * 10**9   # long before: its signature is trusted from now on
    os.utime(raw, ns=(old, old))
    scons(repo)
    st = os.stat(raw)
    data = bytearray(open(raw, "rb").read())
    data[200] ^= 0x55
    time.sleep(0.01)
    _rewrite(raw, bytes(data), st.st_mtime_ns)
    assert os.stat(raw).st_mtime_ns == st.st_mtime_ns and os.stat(raw).st_size == st.st_size
    proc = scons(repo, "--debug=explain")
    assert steps(proc) == [("PACK", "tiny_prebuilt")]
    assert "rebuilding `build/tiny_prebuilt/network_rel.bin' because `models/tiny_prebuilt/" \
           "network_atonbuf.xSPI2.raw' changed" in proc.stdout   # the exact cause, nothing else
    assert bytes(data) in _image(repo, "tiny_prebuilt")
    assert steps(scons(repo)) == []   # and the next run trusts the new signature


def test_stat_cache_rehashes_racy_entries_only(tmp_path):
    """Library level: a file is hashed again on every run until it was hashed well after its last
    change; then never again while its stat stays. Runs are placed in time by their moment."""
    from n6.statcache import FINE_MARGIN_NS, StatCache
    f = tmp_path / "a.raw"
    f.write_bytes(b"x" * 10)
    t0 = max(os.stat(f).st_mtime_ns, os.stat(f).st_ctime_ns)
    hashed = []

    def hash_file(p):
        hashed.append(os.path.basename(p))
        return open(p, "rb").read().decode()

    def run(at):
        c = StatCache(str(tmp_path / "cache"), "sha256")
        c.moment = at
        sig = c.signature(str(f), hash_file)
        c.save()
        return sig
    for at in (t0, t0 + FINE_MARGIN_NS // 2, t0 + 2 * FINE_MARGIN_NS, t0 + 3 * FINE_MARGIN_NS):
        assert run(at) == "x" * 10
    assert hashed == ["a.raw"] * 3          # racy twice (hashed within the margin), then trusted
    st = os.stat(f)
    f.write_bytes(b"z" * 10)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))   # same size, the old mtime back: the ctime moved
    assert run(t0 + 10 * FINE_MARGIN_NS) == "z" * 10


@pytest.mark.parametrize("mtime, ctime, moment, expected", [
    (10_123_000_000, 10_123_000_000, 10_224_000_000, True),      # stamps below the second: 100 ms
    (10_123_000_000, 10_123_000_000, 10_200_000_000, False),
    (10_000_000_000, 10_000_000_000, 11_500_000_000, False),     # whole seconds (FAT, ...): 2 s
    (10_000_000_000, 10_000_000_000, 12_100_000_000, True),
    (5_000_000_001, 10_123_000_000, 10_200_000_000, False),      # an old mtime set back: the ctime counts
])
def test_stat_cache_margin_follows_the_stamps(mtime, ctime, moment, expected):
    from n6.statcache import settled
    assert settled((mtime, 10, 1, ctime, 1), moment) is expected


def test_outputs_rewritten_within_one_second_still_propagate(repo):
    """Every file the n6 steps write keeps one whole-second mtime here (the prepared sources, the
    code image): compile and pack must still see their new content."""
    env = {"PYTHONPATH": os.path.join(ROOT, "tests", "fixtures", "frozen_mtime")}
    c = os.path.join(repo, "models", "tiny_prebuilt", "network.c")
    images = []
    for old, new in ((127, 126), (126, 125)):
        text = open(c).read()
        open(c, "w").write(text.replace(f".act_max = {old},", f".act_max = {new},", 1))
        bump(c)
        proc = scons(repo, "tiny_prebuilt", env=env)
        assert [v for v, _ in steps(proc)] == ["PREPARE", "CC", "LINK", "IMAGE", "PACK"], (new, proc.stdout)
        images.append(_image(repo, "tiny_prebuilt"))
    assert images[0] != images[1]


def _new_weights(path):
    """Other int8 weight values, same shapes and scales: network.c stays identical."""
    model = onnx.load(path)
    rng = np.random.default_rng(11)
    for init in model.graph.initializer:
        arr = numpy_helper.to_array(init)
        if arr.dtype == np.int8 and arr.ndim >= 2:   # weights, not the zero points
            init.CopyFrom(numpy_helper.from_array(rng.integers(-127, 128, arr.shape, dtype=np.int8), init.name))
    onnx.save(model, path)


def test_weight_change_of_a_source_model_does_not_compile_or_link(repo, tmp_path):
    model = os.path.join(repo, "models", "kws_mlp", "model.onnx")
    before = open(os.path.join(repo, "build", "kws_mlp", "st_ai_output", "network.c")).read()
    _new_weights(model)
    bump(model)
    proc = scons(repo)
    assert steps(proc) == [("GEN", "kws_mlp"), ("PREPARE", "kws_mlp"), ("PACK", "kws_mlp")]
    assert open(os.path.join(repo, "build", "kws_mlp", "st_ai_output", "network.c")).read() == before
    clean = copy_repo(tmp_path / "clean")
    shutil.copyfile(model, os.path.join(clean, "models", "kws_mlp", "model.onnx"))
    scons(clean, "kws_mlp")
    assert _image(repo, "kws_mlp") == _image(clean, "kws_mlp")


def test_network_c_change_recompiles_and_relinks_that_model_only(repo):
    c = os.path.join(repo, "models", "tiny_prebuilt", "network.c")
    text = open(c).read()
    assert ".act_max = 127," in text
    open(c, "w").write(text.replace(".act_max = 127,", ".act_max = 126,", 1))   # a real code change
    bump(c)
    got = steps(scons(repo))
    assert {m for _, m in got} == {"tiny_prebuilt"}
    assert ("CC", "tiny_prebuilt") in got and ("LINK", "tiny_prebuilt") in got and ("PACK", "tiny_prebuilt") in got
    assert sum(1 for v, _ in got if v == "CC") == 1   # network_reloc.o only; the runtime objects stay


def test_runtime_objects_are_shared_by_the_models_with_the_same_flags(repo):
    """The LL_ATON sources are compiled once per flag set (the reloc callbacks too, with a neutral
    configuration header): one model's own flags change → its own two objects and a second set of
    runtime objects, no other model's; back → its two objects only (the first set was kept)."""
    shared = sorted(os.listdir(os.path.join(repo, "build", "runtime", "secure-dbg_info")))
    assert shared == sorted(s[:-2] + ".o" for s in SIMULATED_RUNTIME_SOURCES + CONF_SHARED_SOURCES)
    assert not any(os.path.exists(os.path.join(repo, "build", m, "reloc", "obj", o))
                   for m in ALL_MODELS for o in ("ll_aton.o", "ll_aton_reloc_callbacks.o"))
    spec = os.path.join(repo, "models", "tiny_prebuilt", "model.json")
    with open(spec, "w") as f:
        json.dump({"reloc": {"secure": False}}, f)
    got = steps(scons(repo))
    compiled = sorted(m for v, m in got if v == "CC")
    assert compiled == ["runtime"] * len(SIMULATED_RUNTIME_SOURCES + CONF_SHARED_SOURCES) + ["tiny_prebuilt"] * 2, got
    assert {m for _, m in got} == {"runtime", "tiny_prebuilt"}
    assert os.path.isfile(os.path.join(repo, "build", "runtime", "nonsecure-dbg_info", "ll_aton_reloc_callbacks.o"))
    os.unlink(spec)
    got = steps(scons(repo))
    assert sorted(m for v, m in got if v == "CC") == ["tiny_prebuilt"] * 2, got


def test_a_new_configuration_header_compiles_that_model_only(repo, tmp_path):
    """Another image name gives the model another configuration header (MODEL_CONF): its own two
    objects compile again, the reloc callbacks it shares with every model do not; its image is
    the one a clean build makes."""
    spec = os.path.join(repo, "models", "tiny_prebuilt", "model.json")
    try:
        with open(spec, "w") as f:
            json.dump({"reloc": {"name": "tiny"}}, f)
        got = steps(scons(repo))
        assert sorted((v, m) for v, m in got if v == "CC") == [("CC", "tiny_prebuilt")] * 2, got
        assert {m for _, m in got} == {"tiny_prebuilt"}
        clean = copy_repo(tmp_path / "clean")
        shutil.copytree(os.path.dirname(spec), os.path.join(clean, "models", "tiny_prebuilt"), dirs_exist_ok=True)
        scons(clean, "tiny_prebuilt")
        image = os.path.join("build", "tiny_prebuilt", "tiny_rel.bin")
        assert open(os.path.join(repo, image), "rb").read() == open(os.path.join(clean, image), "rb").read()
    finally:
        os.unlink(spec)
    assert sorted(m for v, m in steps(scons(repo)) if v == "CC") == ["tiny_prebuilt"] * 2


def test_profile_and_mpool_changes_regenerate(repo):
    prof = os.path.join(repo, "models", "cifar_cnn", "neural_art.json")
    data = json.load(open(prof))
    data["Profiles"]["default"]["options"] += " --Oalt-sched"
    json.dump(data, open(prof, "w"))
    bump(prof)
    got = steps(scons(repo))
    assert got[0] == ("GEN", "cifar_cnn") and {m for _, m in got} == {"cifar_cnn"}
    mpool = os.path.join(repo, "models", "cifar_cnn", "cifar_cnn.mpool")
    data = json.load(open(mpool))
    data["memory"]["mempools"][0]["prop"]["read_power"] = 19.0
    json.dump(data, open(mpool, "w"))
    bump(mpool)
    assert steps(scons(repo))[0] == ("GEN", "cifar_cnn")


def test_split_option_repacks_without_recompiling(repo):
    got = steps(scons(repo, "RELOC_SPLIT=1"))
    assert got and {v for v, _ in got} == {"PACK"}
    assert {m for _, m in got} == set(ALL_MODELS)
    assert os.path.exists(os.path.join(repo, "build", "big_mlp", "network_rel_params.bin"))
    assert {v for v, _ in steps(scons(repo))} == {"PACK"}     # and back


@pytest.mark.parametrize("rel, expected", [
    ("runtime/secure-dbg_info/ll_aton.o", ["CC"]),
    ("big_mlp/reloc/network_reloc_params.json", ["PREPARE"]),
    ("cifar_cnn/reloc/network.elf", ["LINK"]),
    ("cifar_cnn/reloc/network_rel_code.bin", ["IMAGE"]),
    ("tiny_prebuilt/network_rel.bin", ["PACK"]),
    # generate rewrites c_info.json, which holds the generation time and which prepare reads
    ("kws_mlp/st_ai_output/network_atonbuf.AXISRAM2.raw", ["GEN", "PREPARE"]),
])
def test_deleted_output_reruns_exactly_its_step(repo, rel, expected):
    """The producing step runs again; its dependents only where their inputs' content changed."""
    path = os.path.join(repo, "build", rel)
    before = open(path, "rb").read()
    os.unlink(path)
    assert steps(scons(repo)) == [(step, rel.split("/")[0]) for step in expected]
    assert open(path, "rb").read() == before
    assert scons(repo, "-q", check=False).returncode == 0


def _flip(path):
    with open(path, "r+b") as f:
        f.seek(-1, 2)
        last = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([last[0] ^ 0xFF]))


def _flip_keeping_mtime(path):
    """A same-size edit, then the old mtime put back (`touch -r` from a copy taken before)."""
    st = os.stat(path)
    _flip(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _truncate(path):
    os.truncate(path, os.path.getsize(path) // 2)


@pytest.mark.parametrize("damage", [_flip, _truncate, _flip_keeping_mtime, os.unlink],
                         ids=["flip", "truncate", "touch-r", "delete"])
@pytest.mark.parametrize("rel, expected", [
    ("tiny_prebuilt/network_rel.bin", ["PACK"]),
    ("runtime/secure-dbg_info/ll_aton.o", ["CC"]),
    ("cifar_cnn/reloc/network_rel_code.bin", ["IMAGE"]),
])
def test_output_changed_outside_the_build_is_rebuilt(repo, rel, expected, damage):
    """An output is trusted only while it holds what the build wrote: the next build rebuilds
    it (its step only: the result is the same bytes), `-q` says so first, and `scons check`
    finds nothing wrong."""
    path = os.path.join(repo, "build", rel)
    before = open(path, "rb").read()
    damage(path)
    assert scons(repo, "-q", check=False).returncode != 0
    explained = scons(repo, "--debug=explain")
    assert f"rebuilding `build/{rel}' because it was changed outside the build" in explained.stdout or \
        damage is os.unlink
    assert steps(explained) == [(step, rel.split("/")[0]) for step in expected]
    assert open(path, "rb").read() == before
    assert scons(repo, "-q", check=False).returncode == 0
    assert "rejected" not in scons(repo, "check").stderr


def test_interrupted_pack_leaves_nothing_up_to_date(repo):
    raw = os.path.join(repo, "models", "tiny_prebuilt", "network_atonbuf.xSPI2.raw")
    data = bytearray(open(raw, "rb").read())
    data[0] ^= 0xFF
    open(raw, "wb").write(data)
    bump(raw)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tests", "fixtures", "slow_pack"))
    proc = subprocess.Popen([sys.executable, "-u", "-m", "SCons", "-Q", "tiny_prebuilt"], cwd=repo, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watchdog = threading.Timer(120, proc.kill)   # never hang the suite
    watchdog.start()
    out = os.path.join(repo, "build", "tiny_prebuilt")
    try:
        for line in proc.stdout:
            if line.startswith("  PACK"):
                while proc.poll() is None and not [f for f in os.listdir(out) if ".tmp" in f]:
                    time.sleep(0.01)        # the step is writing (slowly) once its temporary is there
                time.sleep(0.2)
                proc.send_signal(signal.SIGKILL)
                break
        proc.wait()
    finally:
        watchdog.cancel()
    partial = [f for f in os.listdir(out) if ".tmp" in f]
    assert partial, "the kill should have hit the pack step while it was writing"
    assert not os.path.exists(os.path.join(out, "network_rel.bin"))   # never renamed into place
    assert scons(repo, "-q", "tiny_prebuilt", check=False).returncode != 0
    assert steps(scons(repo, "tiny_prebuilt")) == [("PACK", "tiny_prebuilt")]
    assert scons(repo, "-q", check=False).returncode == 0
    assert not [f for f in os.listdir(out) if ".tmp" in f]          # stale temp files are swept


@pytest.mark.parametrize("rel", ["2.2", "3.0"])
@pytest.mark.parametrize("model", BUNDLED)
@pytest.mark.parametrize("name", [None, "net"])
def test_emitter_prediction_equals_what_the_tool_writes(generated, rel, model, name):
    out = generated(model, rel, name)
    profile = read_profile(os.path.join(MODELS, model, "neural_art.json"), "default")
    pool = params_pool(read_mpool(profile.memory_pool))
    predicted = generate_outputs(release(rel), name, "model", profile.epoch_controller, [pool.fname])
    assert sorted(predicted) == sorted(os.listdir(out))


def test_parallel_clean_build(tmp_path):
    repo = copy_repo(tmp_path / "par")
    proc = scons(repo, "-j2")
    assert len([v for v, _ in steps(proc) if v == "PACK"]) == len(ALL_MODELS)
    assert scons(repo, "-q", check=False).returncode == 0


def test_cache_dir_is_opt_in_and_restores_outputs(tmp_path):
    repo = copy_repo(tmp_path / "cached")
    scons(repo, f"CACHE_DIR={tmp_path / 'cache'}", "kws_mlp")
    assert os.listdir(tmp_path / "cache")
    image = _image(repo, "kws_mlp")
    shutil.rmtree(os.path.join(repo, "build", "kws_mlp"))
    proc = scons(repo, f"CACHE_DIR={tmp_path / 'cache'}", "kws_mlp")
    assert "Retrieved" in proc.stdout and _image(repo, "kws_mlp") == image
    other = copy_repo(tmp_path / "nocache")   # without CACHE_DIR nothing is stored or retrieved
    for _ in range(2):
        proc = scons(other, "kws_mlp", env={"N6_CACHE_DIR": None})
        assert "Retrieved" not in proc.stdout
        shutil.rmtree(os.path.join(other, "build", "kws_mlp"))


EPOCH_CONTROLLER_MODELS = ["cifar_cnn", "mobilenet_v2", "tiny_yolo"]   # the images that embedded the checkout's path


def test_two_checkouts_build_the_same_images_and_share_a_cache(tmp_path):
    """Signatures and images do not depend on where the checkout lies: a second checkout in a
    folder of another path length builds byte-identical images on its own, and with the first's
    CACHE_DIR it retrieves every target and runs no step (the simulated install is laid out
    when the build is read, not a step)."""
    first = copy_repo(tmp_path / "a")
    second = copy_repo(tmp_path / "a-checkout-in-a-folder-with-a-longer-name")
    alone = copy_repo(tmp_path / "alone")
    cache = f"CACHE_DIR={tmp_path / 'cache'}"
    scons(first, cache, *EPOCH_CONTROLLER_MODELS, "tiny_prebuilt")
    scons(alone, *EPOCH_CONTROLLER_MODELS, "tiny_prebuilt", env={"N6_CACHE_DIR": None})
    proc = scons(second, cache, *EPOCH_CONTROLLER_MODELS, "tiny_prebuilt")
    assert [v for v, _ in steps(proc)] == ["INSTALL"], proc.stdout
    assert proc.stdout.count("Retrieved") > 4 * 9
    steps_retrieved = re.search(r"^  CACHE    (\d+) of (\d+) steps retrieved from ", proc.stdout, re.M)
    assert steps_retrieved and steps_retrieved[1] == steps_retrieved[2], proc.stdout
    for model in EPOCH_CONTROLLER_MODELS + ["tiny_prebuilt"]:
        assert _image(second, model) == _image(first, model) == _image(alone, model), model


def _rebuild_after_appending(tmp_path, relpath, text):
    """Build a fresh copy, append `text` to one of its files, rebuild: (the copy, the progress steps)."""
    repo = copy_repo(tmp_path / "appended")
    scons(repo)
    with open(os.path.join(repo, relpath), "a") as f:
        f.write(text)
    return repo, steps(scons(repo))


def test_packer_change_repacks_without_regenerating_or_compiling(tmp_path):
    _, got = _rebuild_after_appending(tmp_path, "site_scons/n6/reloc/pack.py", "\n# a change of the packer's code\n")
    assert {v for v, _ in got} == {"IMAGE", "PACK"}        # the steps that import it: not prepare
    assert len([1 for v, _ in got if v == "PACK"]) == len(ALL_MODELS)


def test_runtime_library_change_relinks_without_regenerating(tmp_path):
    _, got = _rebuild_after_appending(tmp_path, "sim/stedgeai/runtime_lib/nr_kernels.c",
                                      "\nint nr_build_note(void) { return 1; }\n")
    assert "GEN" not in {v for v, _ in got} and "PREPARE" not in {v for v, _ in got}
    assert len([1 for v, _ in got if v == "LINK"]) == len(ALL_MODELS)


def test_simulated_install_change_recompiles_without_regenerating(tmp_path):
    _, got = _rebuild_after_appending(tmp_path, "sim/stedgeai/install/Middlewares/ST/AI/Npu/ll_aton/ll_aton.h",
                                      "\n/* a change of an installed header */\n")
    assert got[0] == ("INSTALL", "stedgeai-sim") and "GEN" not in {v for v, _ in got}
    compiled = [m for v, m in got if v == "CC"]
    assert sorted(set(compiled)) == sorted(ALL_MODELS + ["runtime"])   # what includes it
    assert len(compiled) > len(ALL_MODELS)
    assert "LINK" not in {v for v, _ in got}   # a comment: the same objects, nothing relinks


def test_board_parser_change_reruns_only_the_steps_whose_board_facts_change(tmp_path):
    """Each step depends on the modules its action imports (at any depth), not on the whole
    library. The build's steps read no board file: the size gate's budgets, read from it once per
    content of the file and of the parser, are in pack's options. A parser change that leaves them
    as they are reruns nothing; one that changes them repacks every model."""
    repo, got = _rebuild_after_appending(tmp_path, "site_scons/n6/board.py", "\n# a change of the board parser\n")
    assert got == []
    with open(os.path.join(repo, "site_scons", "n6", "board.py"), "a") as f:
        f.write("\n_budgets = Board.budgets.fget\n"
                "Board.budgets = property(lambda b: dict(_budgets(b), exec_ram=1 << 20))\n")
    proc = scons(repo)
    assert sorted(steps(proc)) == [("PACK", m) for m in ALL_MODELS] and f"of {1 << 20} bytes)" in proc.stdout


@pytest.mark.parametrize("args", [(), ("RELOC_ABSOLUTE_FLASH_POOLS=1", "BUILD_DIR=build-absolute")])
def test_board_budgets_are_read_once_per_board_file_content(repo, args):
    """A no-op and a weight change load no board code (the budgets, and with absolute flash pools
    the image area, are remembered with the board file's signature); a board edit is read again,
    and repacks every model only where a budget changed."""
    board = os.path.join(repo, "firmware", "boards", "stm32n6570-dk.toml")
    original = open(board).read()

    def build():
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "SCons", "-Q", *args], cwd=repo,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return sorted(steps(proc)), re.search(r"\| +n6\.board$", proc.stderr, re.M) is not None, proc.stdout

    def edit(old, new):
        assert old in original
        open(board, "w").write(original.replace(old, new))
        bump(board)
    try:
        scons(repo, *args)
        assert build()[:2] == ([], False)
        raw = os.path.join(repo, "models", "tiny_prebuilt", "network_atonbuf.xSPI2.raw")
        with open(raw, "r+b") as f:
            f.seek(40)
            f.write(os.urandom(8))
        bump(raw)
        assert build()[:2] == ([("PACK", "tiny_prebuilt")], False)
        edit("frequency = 2000", "frequency = 4000")
        assert build()[:2] == ([], True)
        edit("exec_ram = { base = 0x34060000, size = 0xA0000 }", "exec_ram = { base = 0x34060000, size = 0x90000 }")
        got, loaded, out = build()
        assert got == [("PACK", m) for m in ALL_MODELS] and loaded and f"of {0x90000} bytes)" in out
    finally:
        open(board, "w").write(original)
        bump(board)
        scons(repo, *args)


def test_simulated_tool_change_regenerates_every_source_model(tmp_path):
    _, got = _rebuild_after_appending(tmp_path, "sim/stedgeai/stedgeai_sim/emit_c.py", "\n# a change of the tool\n")
    assert sorted(m for v, m in got if v == "GEN") == sorted(m for m in ALL_MODELS if m != "tiny_prebuilt")
    assert "CC" not in {v for v, _ in got}   # same generated code: nothing recompiles
