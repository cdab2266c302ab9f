"""No stale output survives a change of configuration, `scons -c` removes everything the build
made, a broken model folder stops nothing else, and two builds in one folder do not interleave
(end to end, real toolchain)."""
import json
import os
import shutil
import subprocess
import sys
import threading

import pytest

from conftest import ROOT, copy_repo, flip_bytes, make_prebuilt, scons, stedgeai_output_folder


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = copy_repo(tmp_path_factory.mktemp("stale"))
    scons(repo, "tiny_prebuilt", "kws_mlp")
    return repo


def _out(repo, *rel):
    return os.path.join(repo, "build", *rel)


def _errors(proc):
    return [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]


def test_split_option_back_and_forth_leaves_no_params_file(repo):
    params = _out(repo, "tiny_prebuilt", "network_rel_params.bin")
    scons(repo, "RELOC_SPLIT=1", "tiny_prebuilt")
    assert os.path.exists(params)
    proc = scons(repo, "RELOC_SPLIT=0", "tiny_prebuilt")
    assert not os.path.exists(params)
    assert "  REMOVE   build/tiny_prebuilt/network_rel_params.bin (no longer built)" in proc.stdout
    scons(repo, "RELOC_SPLIT=1", "tiny_prebuilt")
    assert os.path.exists(params)
    scons(repo, "tiny_prebuilt")
    assert not os.path.exists(params)


def test_epoch_controller_off_removes_its_files(repo):
    prof = os.path.join(repo, "models", "kws_mlp", "neural_art.json")
    original = open(prof).read()
    data = json.loads(original)
    data["Profiles"]["default"]["options"] += " --enable-epoch-controller"
    open(prof, "w").write(json.dumps(data))
    ec_files = [_out(repo, "kws_mlp", "st_ai_output", "network_ecblobs.h"),
                _out(repo, "kws_mlp", "reloc", "network_reloc_ecblobs.h")]
    scons(repo, "kws_mlp")
    assert all(os.path.exists(f) for f in ec_files)
    open(prof, "w").write(original)
    proc = scons(repo, "kws_mlp")
    assert [f for f in ec_files if os.path.exists(f)] == []
    assert "  REMOVE   build/kws_mlp/st_ai_output/network_ecblobs.h (no longer built)" in proc.stdout


def test_renamed_model_folder_leaves_no_old_build_folder(repo):
    shutil.copytree(os.path.join(repo, "models", "tiny_prebuilt"), os.path.join(repo, "models", "tiny_a"))
    scons(repo, "tiny_a")
    assert os.path.exists(_out(repo, "tiny_a", "network_rel.bin"))
    os.rename(os.path.join(repo, "models", "tiny_a"), os.path.join(repo, "models", "tiny_b"))
    proc = scons(repo, "tiny_b")
    assert not os.path.exists(_out(repo, "tiny_a"))
    assert "  REMOVE   build/tiny_a/ (no longer built)" in proc.stdout
    assert os.path.exists(_out(repo, "tiny_b", "network_rel.bin"))
    shutil.rmtree(os.path.join(repo, "models", "tiny_b"))
    scons(repo, "tiny_prebuilt")


def test_source_model_turned_prebuilt_packs_the_folders_raw_files(repo):
    """A user replaces a source model by what stedgeai wrote for it (same network.c, same .raw
    bytes, new paths): later .raw edits in the model folder must reach the image."""
    shutil.copytree(os.path.join(repo, "models", "kws_mlp"), os.path.join(repo, "models", "kws_p"))
    scons(repo, "kws_p")
    model = make_prebuilt(repo, "kws_p")
    scons(repo, "kws_p")
    raw = next(os.path.join(model, f) for f in sorted(os.listdir(model)) if f.endswith(".raw"))
    flip_bytes(raw, [0])
    data = open(raw, "rb").read()
    scons(repo, "kws_p")
    assert data in open(_out(repo, "kws_p", "network_rel.bin"), "rb").read()
    shutil.rmtree(model)
    scons(repo, "kws_mlp")


def test_deleted_model_leaves_no_run_or_flash_records(repo):
    """A model folder deleted after it ran: the next build removes its run outputs (the .npy files
    the run wrote beside run.json) and its flash records with the rest of its build folder; a
    file of the user's there stays."""
    shutil.copytree(os.path.join(repo, "models", "tiny_prebuilt"), os.path.join(repo, "models", "tiny_d"))
    scons(repo, "run-tiny_d")
    assert os.path.exists(_out(repo, "tiny_d", "flash", "on_board.json"))
    mine = _out(repo, "tiny_d", "notes.txt")
    open(mine, "w").write("user file")
    shutil.rmtree(os.path.join(repo, "models", "tiny_d"))
    proc = scons(repo, "tiny_prebuilt")
    assert os.listdir(_out(repo, "tiny_d")) == ["notes.txt"], proc.stdout
    assert "  REMOVE   build/tiny_d/run/ (no longer built)" in proc.stdout
    shutil.rmtree(_out(repo, "tiny_d"))


def test_deleted_model_is_removed_by_clean_of_its_old_name(repo):
    shutil.copytree(os.path.join(repo, "models", "tiny_prebuilt"), os.path.join(repo, "models", "tiny_c"))
    scons(repo, "tiny_c")
    shutil.rmtree(os.path.join(repo, "models", "tiny_c"))
    proc = scons(repo, "-c", "tiny_c")
    assert "Removed build/tiny_c/ (no longer built)" in proc.stdout
    assert not os.path.exists(_out(repo, "tiny_c"))


def test_outputs_the_build_did_not_make_are_left_alone(repo):
    mine = _out(repo, "tiny_prebuilt", "notes.txt")
    open(mine, "w").write("user file")
    board = _out(repo, "sim-board")
    os.makedirs(board, exist_ok=True)
    open(os.path.join(board, "probe.json"), "w").write("{}")
    scons(repo, "RELOC_SPLIT=1", "tiny_prebuilt")
    scons(repo, "tiny_prebuilt")
    assert os.path.exists(mine) and os.path.exists(os.path.join(board, "probe.json"))
    os.unlink(mine)
    shutil.rmtree(board)


@pytest.mark.parametrize("keep_state", [False, True])
def test_clean_removes_everything_then_any_single_target_builds_first_time(tmp_path, keep_state):
    """With `keep_state`, the build folder also holds what the build did not make (a simulated
    board's state): `scons -c` keeps it and with it the signature database, whose remembered
    #include lists once let a compile run before the runtime headers were installed again."""
    repo = copy_repo(tmp_path / "repo")
    scons(repo, "tiny_prebuilt", "kws_mlp")
    for target in ("kws_mlp", "tiny_prebuilt", "check"):
        board = os.path.join(repo, "build", "sim-board")
        if keep_state:
            os.makedirs(board, exist_ok=True)
            open(os.path.join(board, "probe.json"), "w").write("{}")
        proc = scons(repo, "-c")
        assert target != "kws_mlp" or "Removed build/kws_mlp/st_ai_output/network.c" in proc.stdout
        left = [os.path.relpath(os.path.join(d, f), repo) for d, _, files in os.walk(os.path.join(repo, "build"))
                for f in files]
        bookkeeping = {"build/.sconsign.dblite", "build/.n6-outputs", "build/.n6-stat", "build/.lock"}
        assert sorted(set(left) - bookkeeping) == (["build/sim-board/probe.json"] if keep_state else []), left
        assert keep_state or not os.path.exists(os.path.join(repo, "build"))
        proc = scons(repo, "-j2", target, check=False)
        assert proc.returncode == 0, (target, proc.stdout[-2000:], proc.stderr)


def test_clean_removes_only_the_folders_the_build_made(tmp_path):
    """`scons -c` takes away the empty folders that held outputs, never an empty folder of the
    user's (before, every empty folder under BUILD_DIR went)."""
    repo = copy_repo(tmp_path / "repo")
    mine = os.path.join(repo, "out", "mine", "empty")
    os.makedirs(mine)
    scons(repo, "BUILD_DIR=out", "tiny_prebuilt")
    scons(repo, "BUILD_DIR=out", "-c")
    assert os.path.isdir(mine) and not os.path.exists(os.path.join(repo, "out", "tiny_prebuilt"))
    os.rmdir(mine)
    os.rmdir(os.path.dirname(mine))
    scons(repo, "BUILD_DIR=out", "-c")
    assert not os.path.exists(os.path.join(repo, "out"))      # a clean build folder is no folder


def test_broken_model_folder_stops_nothing_else(repo):
    broken = os.path.join(repo, "models", "zz_broken")
    os.makedirs(broken)
    open(os.path.join(broken, "model.json"), "w").write('{"reloc": {"split": "true"}}')
    try:
        helped = scons(repo, "-h", check=False)
        assert helped.returncode == 0 and "kws_mlp" in helped.stdout
        assert _errors(helped) == ["scons: *** models/zz_broken/model.json: reloc option 'split' is 'true', not a "
                                   "boolean (fix: write \"split\": true or false (no quotes))"]
        os.unlink(_out(repo, "tiny_prebuilt", "network_rel.bin"))
        proc = scons(repo, check=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert len(_errors(proc)) == 1 and "models/zz_broken/model.json: reloc option 'split'" in _errors(proc)[0]
        assert os.path.exists(_out(repo, "tiny_prebuilt", "network_rel.bin"))   # the others were built first
        assert scons(repo, "zz_broken", check=False).returncode == 2
        assert scons(repo, "kws_mlp", check=False).returncode == 0
    finally:
        shutil.rmtree(broken)


def test_stedgeai_output_folder_builds_as_prebuilt(repo):
    """What a user drops in models/: the whole output folder of `stedgeai generate`, side files
    and all (`_OE_` intermediates, report, license; a SOURCE.txt of their own)."""
    folder = stedgeai_output_folder(os.path.join(repo, "models", "from_stedgeai"))
    (folder / "SOURCE.txt").write_text("where this came from\n")
    try:
        scons(repo, "from_stedgeai", "tiny_prebuilt")
        assert open(_out(repo, "from_stedgeai", "network_rel.bin"), "rb").read() == \
            open(_out(repo, "tiny_prebuilt", "network_rel.bin"), "rb").read()
    finally:
        shutil.rmtree(folder)


def test_second_build_in_the_same_folder_waits(repo):
    raw = os.path.join(repo, "models", "tiny_prebuilt", "network_atonbuf.xSPI2.raw")
    data = bytearray(open(raw, "rb").read())
    data[7] ^= 0xFF
    open(raw, "wb").write(data)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tests", "fixtures", "slow_pack"))
    first = subprocess.Popen([sys.executable, "-u", "-m", "SCons", "-Q", "tiny_prebuilt"], cwd=repo, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watchdog = threading.Timer(180, first.kill)
    watchdog.start()
    try:
        for line in first.stdout:
            if line.startswith("  PACK"):
                break
        second = scons(repo, "tiny_prebuilt")
        rest = first.stdout.read()
        assert first.wait() == 0, rest
    finally:
        watchdog.cancel()
    assert "  WAIT     another build is running in build (pid " in second.stdout
    assert "PACK" not in second.stdout   # it saw the first build's result, up to date
    assert bytes(data) in open(_out(repo, "tiny_prebuilt", "network_rel.bin"), "rb").read()
