"""A no-op that reads no build description: taken only when nothing the last complete build
depended on changed; every kind of change walks the graph and rebuilds what it must."""
import os
import pickle
import shutil
import subprocess
import sys
import time

import pytest

from n6 import unchanged
from n6.statcache import FINE_MARGIN_NS
from n6.unchanged import FOLDER, LISTED, LSTAT, STAT, Record, Watcher, holds, look, record

from conftest import copy_repo, flip_bytes
from test_incremental import steps

TAKEN = "scons: nothing changed since the last complete build"
MODEL = os.path.join("models", "tiny_prebuilt")


def settle():
    """Wait until every file written so far is older than the racy margin."""
    time.sleep(2 * FINE_MARGIN_NS / 1e9)


def run(repo, *args, check=True):
    """`scons args` without -Q: SCons says when it reads no build description."""
    proc = subprocess.run([sys.executable, "-m", "SCons", *args], cwd=repo, capture_output=True, text=True,
                          timeout=600)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


# -- the library ----------------------------------------------------------------------------------

def test_look_tells_a_file_a_folder_and_nothing_apart(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x")
    assert look(str(tmp_path / "absent"), STAT) is None
    assert look(str(tmp_path), STAT) == FOLDER
    assert look(str(f), STAT)[1] == 1
    listed = look(str(tmp_path), LISTED)
    settle()
    (tmp_path / "g").write_bytes(b"")   # an entry more: the listed folder moves, the stat'ed one is a folder still
    assert look(str(tmp_path), STAT) == FOLDER and look(str(tmp_path), LISTED) != listed


def test_a_record_vouches_only_for_what_settled_before_the_run(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"x")
    started = time.time_ns()
    assert record(("argv",), [(str(f), STAT)], started) is None     # written just before the run started: racy
    settle()
    made = record(("argv",), [(str(f), STAT), (str(tmp_path / "absent"), STAT)], time.time_ns())
    assert made is not None
    assert made.first_change(("argv",)) is None
    assert made.first_change(("other",)) == "the command line, working folder or environment"
    (tmp_path / "absent").write_bytes(b"")
    assert made.first_change(("argv",)) == str(tmp_path / "absent")
    os.unlink(tmp_path / "absent")
    f.write_bytes(b"y")                          # same size: the stat key still moves (mtime, ctime)
    assert made.first_change(("argv",)) == str(f)


def test_a_path_gone_or_made_a_folder_during_the_run_is_vouched_for_by_its_folder(tmp_path):
    """A file read and then removed (or replaced by a folder) before the run ended: its stat says
    absent (or folder), which a record could not tell from absent all along; the folder holding
    it moved during the run."""
    gone, kind = tmp_path / "gone", tmp_path / "kind"
    gone.write_bytes(b"x")
    kind.write_bytes(b"x")
    settle()
    started = time.time_ns()
    assert record(("argv",), [(str(gone), STAT), (str(kind), STAT), (str(tmp_path / "never" / "there"), STAT)],
                  started) is not None
    gone.unlink()
    assert record(("argv",), [(str(gone), STAT)], started) is None
    kind.unlink()
    kind.mkdir()
    assert record(("argv",), [(str(kind), STAT)], started) is None
    settle()
    assert record(("argv",), [(str(gone), STAT), (str(kind), STAT)], time.time_ns()) is not None


def test_a_record_survives_its_file_and_a_damaged_one_is_none(tmp_path):
    made = Record(("argv",), {("a", STAT): None})
    made.save(str(tmp_path / "r"))
    assert Record.load(str(tmp_path / "r")) == made
    (tmp_path / "r").write_bytes(b"\x80garbage")
    assert Record.load(str(tmp_path / "r")) is None
    (tmp_path / "r").write_bytes(pickle.dumps((unchanged.FORMAT, ("argv",), ["not", "a", "dict"])))
    assert Record.load(str(tmp_path / "r")) is None
    (tmp_path / "r").write_bytes(b"cno_such_module\nThing\n.")   # a record naming code that is gone
    assert Record.load(str(tmp_path / "r")) is None
    assert Record.load(str(tmp_path / "missing")) is None


def test_the_watcher_notes_reads_listings_and_lookups_not_writes(tmp_path):
    (tmp_path / "read").write_text("x")
    watcher = Watcher(lambda p, how: p.endswith("ignored"))
    try:
        open(tmp_path / "read").read()
        open(tmp_path / "written", "w").write("x")
        open(tmp_path / "ignored", "w").close()
        open(tmp_path / "ignored").read()
        os.listdir(tmp_path)
        os.path.exists(tmp_path / "absent")
        os.path.islink(tmp_path / "read")
        assert watcher.other == ""
        here, fd = os.getcwd(), os.open(tmp_path, os.O_RDONLY)
        try:
            os.fchdir(fd)   # a change of folder by descriptor: noted, and the change happens
            assert os.getcwd() == str(tmp_path) and watcher.other == "os.chdir"
        finally:
            os.chdir(here)
            os.close(fd)
        watcher.other = ""
        subprocess.run(["true"], check=True)
    finally:
        watcher.stop()
    os.path.exists(tmp_path / "after")
    assert watcher.other == "subprocess.Popen"
    looked = set(watcher.looked)
    assert (str(tmp_path / "read"), STAT) in looked
    assert (str(tmp_path), LISTED) in looked
    assert (str(tmp_path / "absent"), STAT) in looked
    assert (str(tmp_path / "read"), LSTAT) in looked
    assert not {p for p, _ in looked if p.endswith(("written", "ignored", "after"))}
    assert os.stat is unchanged._STAT and os.lstat is unchanged._LSTAT


# -- the build ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A project of one prebuilt model, built."""
    repo = copy_repo(tmp_path_factory.mktemp("unchanged"))
    for name in os.listdir(os.path.join(repo, "models")):
        if os.path.isdir(os.path.join(repo, "models", name)) and name != "tiny_prebuilt":
            shutil.rmtree(os.path.join(repo, "models", name))
    run(repo)
    return repo


def record_stat(repo):
    """The record's stat key (None: no record holds): a run that makes one writes a new file."""
    path = os.path.join(repo, "build", ".n6-unchanged")
    return look(path, STAT) if holds(path) else None


def recorded(repo, *args):
    """A record of `scons args` in place: the next identical run reads no build description. One
    walk makes it once what the last run wrote has settled, whatever that run was (a build, or a
    run that emptied the record)."""
    settle()
    run(repo, *args)
    assert record_stat(repo) is not None, "a walk after everything settled left no record"


def test_a_no_op_after_a_complete_one_reads_nothing_and_says_the_same(repo):
    recorded(repo)
    before = record_stat(repo)
    proc = run(repo)
    assert TAKEN in proc.stdout and "scons: `build' is up to date." in proc.stdout
    assert record_stat(repo) == before
    walked = run(repo, "-Q", "--debug=explain")   # not plain: walks, and the record goes
    assert record_stat(repo) is None
    recorded(repo, "-Q")
    before = record_stat(repo)
    quiet = run(repo, "-Q")
    assert quiet.stdout == walked.stdout == "scons: `build' is up to date.\n"
    assert record_stat(repo) == before


def _edit(path, old, new):
    with open(path, "rb") as f:
        data = f.read()
    assert old in data
    with open(path, "wb") as f:
        f.write(data.replace(old, new, 1))
    return data


CHANGES = {   # name → (change(repo) returning its undo, the step that must run)
    "weights": (lambda repo: _flip(os.path.join(repo, MODEL, "network_atonbuf.xSPI2.raw")), ("PACK", "tiny_prebuilt")),
    "network.c": (lambda repo: _rewrite(os.path.join(repo, MODEL, "network.c"), b".act_max = 127,",
                                        b".act_max = 126,"), ("PREPARE", "tiny_prebuilt")),
    "a new model": (lambda repo: _copy_model(repo, "tiny_new"), ("PACK", "tiny_new")),
    "model.json": (lambda repo: _new_file(os.path.join(repo, MODEL, "model.json"),
                                          '{"reloc": {"split": true}}'), ("PACK", "tiny_prebuilt")),
    "the packer's code": (lambda repo: _rewrite(os.path.join(repo, "site_scons", "n6", "reloc", "pipeline.py"),
                                                b'"""', b'"""# edited\n'), ("PACK", "tiny_prebuilt")),
    "an output": (lambda repo: _flip(os.path.join(repo, "build", "tiny_prebuilt", "network_rel.bin")),
                  ("PACK", "tiny_prebuilt")),
    "an output deleted": (lambda repo: _delete(os.path.join(repo, "build", "tiny_prebuilt", "reloc", "network.elf")),
                          ("LINK", "tiny_prebuilt")),
    "SCons's signatures deleted": (lambda repo: _delete(os.path.join(repo, "build", ".sconsign.dblite")),
                                   ("PACK", "tiny_prebuilt")),
    "a board budget": (lambda repo: _rewrite(os.path.join(repo, "firmware", "boards", "stm32n6570-dk.toml"),
                                             b"size = 0xA0000 }", b"size = 0x9F000 }"), ("PACK", "tiny_prebuilt")),
}


def _flip(path):
    data = open(path, "rb").read()
    flip_bytes(path, [len(data) // 2])
    return lambda: open(path, "wb").write(data)


def _rewrite(path, old, new):
    data = _edit(path, old, new)
    return lambda: open(path, "wb").write(data)


def _copy_model(repo, name):
    shutil.copytree(os.path.join(repo, MODEL), os.path.join(repo, "models", name))
    return lambda: shutil.rmtree(os.path.join(repo, "models", name))


def _new_file(path, text):
    with open(path, "w") as f:
        f.write(text)
    return lambda: os.unlink(path)


def _delete(path):
    os.unlink(path)
    return lambda: None


@pytest.mark.parametrize("change", CHANGES)
def test_every_change_walks_and_rebuilds(repo, change):
    make, step = CHANGES[change]
    recorded(repo)
    undo = make(repo)
    try:
        proc = run(repo)
        assert TAKEN not in proc.stdout
        assert step in steps(proc), proc.stdout
    finally:
        undo()
        run(repo)


def test_a_variable_or_the_environment_walks(repo):
    recorded(repo)
    assert ("PACK", "tiny_prebuilt") in steps(run(repo, "RELOC_SPLIT=1"))
    recorded(repo, "RELOC_SPLIT=1")
    env = dict(os.environ, N6_UNRELATED="1")
    proc = subprocess.run([sys.executable, "-m", "SCons", "RELOC_SPLIT=1"], cwd=repo, capture_output=True, text=True,
                          env=env, check=True)
    assert TAKEN not in proc.stdout
    assert ("PACK", "tiny_prebuilt") in steps(run(repo))   # the record was of RELOC_SPLIT=1: back without it


def test_another_interpreter_flag_or_a_module_ahead_on_the_import_path_walks(repo):
    """The same arguments to another interpreter command line (-X utf8) walk; so does a module put
    in the project's top folder, ahead on the import path of the one the build imports."""
    recorded(repo)
    proc = subprocess.run([sys.executable, "-X", "utf8", "-m", "SCons"], cwd=repo, capture_output=True, text=True,
                          check=True)
    assert TAKEN not in proc.stdout
    recorded(repo)
    shadow = os.path.join(repo, "difflib.py")   # the build description imports difflib
    with open(shadow, "w") as f:
        f.write("raise SystemExit('difflib shadowed')\n")
    try:
        assert TAKEN not in run(repo, check=False).stdout
    finally:
        os.unlink(shadow)


def test_a_site_init_scons_would_load_walks(repo):
    """SCons looks for site_scons/site_init.py before the SConstruct runs: one added is seen."""
    recorded(repo)
    site_init = os.path.join(repo, "site_scons", "site_init.py")
    with open(site_init, "w") as f:
        f.write("print('SITE INIT LOADED')\n")
    try:
        proc = run(repo)
        assert "SITE INIT LOADED" in proc.stdout and TAKEN not in proc.stdout
    finally:
        os.unlink(site_init)


def test_a_failed_build_or_another_command_leaves_no_record(repo):
    record_file = os.path.join(repo, "build", ".n6-unchanged")
    recorded(repo)
    undo = _new_file(os.path.join(repo, MODEL, "model.json"), "{")
    try:
        assert run(repo, check=False).returncode == 2
        assert not holds(record_file)
        settle()
        assert run(repo, check=False).returncode == 2     # a broken model: the second run walks again
        assert not holds(record_file)
    finally:
        undo()
    settle()
    run(repo)   # the model back: its outputs are listed again (the build folder's stamp moves), the next walk records
    recorded(repo)
    run(repo, "-c")
    assert not holds(record_file)
    run(repo)
    recorded(repo)
    run(repo, "tiny_prebuilt")   # a run that may write the build folder: the record goes first
    assert not holds(record_file)


def test_a_python_error_while_the_build_is_read_leaves_no_record(repo):
    """SCons exits 2 after a Python error in the build description without setting its exit status:
    such a run must not be taken for a complete build, or the next plain run would say nothing
    changed and succeed."""
    recorded(repo)
    undo = _rewrite(os.path.join(repo, "SConstruct"), b"env.N6ProjectTargets()",
                    b"env.N6ProjectTargets()\nraise RuntimeError('broken SConstruct')")
    try:
        assert run(repo, check=False).returncode == 2
        settle()
        again = run(repo, check=False)
        assert again.returncode == 2 and TAKEN not in again.stdout
        assert not holds(os.path.join(repo, "build", ".n6-unchanged"))
    finally:
        undo()


def test_a_dry_run_or_a_question_keeps_the_record(repo):
    """-n and -q write nothing, take no lock and leave the record: the next plain run reads nothing."""
    recorded(repo)
    run(repo, "-n")
    assert run(repo, "-q", check=False).returncode == 0
    assert TAKEN in run(repo).stdout


def test_an_edit_of_a_module_the_build_imports_walks(repo):
    """A module read only by importing it, before the watch began (its cached bytecode checked out
    of sight), is seen."""
    recorded(repo)
    module = os.path.join(repo, "site_scons", "site_tools", "n6_project.py")
    undo = _rewrite(module, b"def exists(env):", b"print('n6_project edited')\n\n\ndef exists(env):")
    try:
        proc = run(repo)
        assert "n6_project edited" in proc.stdout and TAKEN not in proc.stdout
    finally:
        undo()


def test_a_record_holds_each_path_once_and_a_link_both_ways(tmp_path, monkeypatch):
    f, link = tmp_path / "f", tmp_path / "link"
    f.write_bytes(b"x")
    os.symlink(f, link)
    settle()
    monkeypatch.chdir(tmp_path)
    made = record(("argv",), [("f", STAT), (str(f), STAT), (str(f), LSTAT), ("link", STAT), ("link", LSTAT)],
                  time.time_ns())
    assert sorted(made.seen) == [(str(f), STAT), (str(link), STAT), (str(link), LSTAT)]
    os.unlink(link)
    os.symlink(tmp_path / "elsewhere", link)   # the link moved: its target's stat says absent, its own a new key
    assert made.first_change(("argv",)) == str(link)
