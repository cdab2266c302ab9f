"""The programmer run on a lab machine (n6.flash.remote) without a coordinator: what SSH failures
look like. The whole path, through labgrid places, is in tests/test_lab.py."""
import os

import pytest

from conftest import ROOT
from n6.errors import N6Error
from n6.flash.remote import RemoteRunner
from n6.tool_runner import ToolRunner

HOSTS = os.path.join(ROOT, "tests", "fixtures", "lab_hosts")


def test_a_lab_machine_ssh_cannot_reach_is_one_line_naming_it(tmp_path, monkeypatch):
    (tmp_path / "hosts.json").write_text("{}")
    monkeypatch.setenv("PATH", HOSTS + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("N6_TEST_HOSTS", str(tmp_path / "hosts.json"))
    monkeypatch.setenv("N6_TEST_HOSTS_LOG", str(tmp_path / "hosts.log"))
    runner = RemoteRunner("lab-machine-9", ToolRunner(str(tmp_path / "programmer.log")))
    with pytest.raises(N6Error) as e:
        runner.run(["STM32_Programmer_CLI", "--list", "st-link"])
    line = str(e.value)
    assert "\n" not in line and line.startswith("the programmer's host lab-machine-9: ")
    assert "Could not resolve hostname lab-machine-9" in line
    assert e.value.fix == "set up key-based SSH from this machine to lab-machine-9 (labgrid runs the exporter's " \
                          "tools over SSH)"
    assert not (tmp_path / "hosts.log").exists()          # nothing ran there


def test_a_lab_machines_simulated_board_that_does_not_answer_is_not_reset_from_here(tmp_path):
    """Its state folder is on the lab machine (none here): the step says the board did not answer,
    not that this machine's simulated programmer has no board."""
    import json
    from n6.aivalidation.client import BoardError
    from n6.board_files import DEFAULT_BOARD, board_path
    from n6.run.options import SessionOptions
    from n6.run.session import board_session
    _, silent = os.openpty()
    stamp = tmp_path / "on_board.json"
    stamp.write_text(json.dumps({"simulated": True, "images": []}))
    opts = SessionOptions(board_file=os.path.abspath(board_path(DEFAULT_BOARD)), port=os.ttyname(silent), state="",
                          release="2.2", install_root="", copy_mode=False, backend="auto")
    said = []
    with pytest.raises(BoardError, match="no answer"):
        with board_session(opts, str(stamp), said.append):
            pass
    assert said == []
