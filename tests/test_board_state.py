"""The simulated board's state folder that cannot be written (issue 34): the flash step stops in
one line naming the folder and the fix, leaves nothing a later step trusts. Tests run as root,
where a read-only mode does not bite: a path through a file, and EROFS in the programmer's
process (tests/fixtures/read_only_state)."""
import os

import pytest

from conftest import ROOT, copy_repo, scons

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = copy_repo(tmp_path_factory.mktemp("state-repo"))
    scons(repo, "tiny_prebuilt")
    return repo


def _stops(repo, env, line):
    proc = scons(repo, "flash-tiny_prebuilt", check=False, env=env)
    errors = [e for e in proc.stderr.splitlines() if e.startswith("scons: ***")]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(errors) == 1, proc.stderr
    assert errors[0] == f"scons: *** [build/tiny_prebuilt/flash/on_board.json] {line}"
    assert not os.path.exists(os.path.join(repo, "build", "tiny_prebuilt", "flash", "on_board.json"))
    assert scons(repo, "-q", "flash-tiny_prebuilt", check=False, env=env).returncode == 1


def test_a_state_folder_whose_path_runs_through_a_file_is_one_line(repo, tmp_path):
    (tmp_path / "afile").write_text("x")
    state = str(tmp_path / "afile" / "state")
    _stops(repo, {"N6_SIM_BOARD": state}, f"{state}: cannot write the board's lock there: Not a directory (fix: a "
           "part of that path is a file: name a folder (N6_SIM_BOARD names the simulated board's))")


def test_a_state_folder_the_programmer_cannot_write_is_one_line_naming_it(repo, tmp_path):
    state = str(tmp_path / "state")
    fixture = os.path.join(ROOT, "tests", "fixtures", "read_only_state")
    env = {"N6_SIM_BOARD": state, "PYTHONPATH": os.pathsep.join(filter(None, (fixture, os.environ.get("PYTHONPATH"))))}
    _stops(repo, env, "build/tiny_prebuilt/flash/programmer.log: cannot write the simulated board's state in "
           f"{state}: Read-only file system (fix: make that folder writable, or point N6_SIM_BOARD at a folder of "
           "its own)")
