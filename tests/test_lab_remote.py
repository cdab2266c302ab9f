"""The programmer run on a lab machine (n6.flash.remote) without a coordinator: what SSH failures
look like. The whole path, through labgrid places, is in tests/test_lab.py."""
import os
import re

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


def test_a_real_boards_firmware_is_started_by_the_gdbserver_of_the_lab_machine(tmp_path, monkeypatch):
    """A place's exported ST-LINK: ST-LINK_gdbserver runs on the lab machine (its path from the
    tag n6-gdbserver, -cp the programmer's folder there) behind labgrid's SSH prefix, and gdb here
    reaches it through the port forwarded over that connection, forward cancelled after."""
    import json
    import shlex
    from n6.flash.boards import ExporterProbe
    from n6.run import firmware_start
    from test_firmware_start import FakeRunner, _output
    there = tmp_path / "lab-machine-3"
    there.mkdir()
    gdbserver = there / "ST-LINK_gdbserver"                    # says it listens, as ST's does once it reaches the core
    gdbserver.write_text(f"#!/bin/sh\ncat <<'EOF'\n{_output('gdbserver_listening')}\nEOF\n")
    gdbserver.chmod(0o755)
    gdb = tmp_path / "arm-none-eabi-gdb"
    gdb.write_text("")
    gdb.chmod(0o755)
    (tmp_path / "hosts.json").write_text(json.dumps({"lab-machine-3": {}}))
    log = tmp_path / "hosts.log"
    monkeypatch.setenv("PATH", HOSTS + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("N6_TEST_HOSTS", str(tmp_path / "hosts.json"))
    monkeypatch.setenv("N6_TEST_HOSTS_LOG", str(log))
    monkeypatch.setattr(firmware_start.time, "sleep", lambda s: None)
    runner = FakeRunner(str(tmp_path / "firmware_start.log"), _output("gdb_started"))
    exporter = ExporterProbe("n6-lab-3", "lab-machine-3", "/opt/st/bin/STM32_Programmer_CLI", str(gdbserver))
    firmware_start.start("fw.elf", "/opt/st/bin", 2000, 1, "0042000A0013", environ={"PATH": str(tmp_path)},
                         runner=runner, exporter=exporter)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert {c["host"] for c in calls} == {"lab-machine-3"}
    forward, server, cancel = [c["command"] for c in calls if c["command"] != "cat"]   # cat: labgrid's keepalive
    here = int(re.fullmatch(r"-O forward -L(\d+):localhost:36789", forward)[1])
    assert shlex.split(server) == [str(gdbserver), "-d", "--frequency", "2000", "--apid", "1", "-v", "--port-number",
                                   "36789", "-cp", "/opt/st/bin", "--serial-number", "0042000A0013"]
    assert runner.argvs == [[str(gdb), "-ex", f"target remote :{here}", "-ex", "monitor reset", "-ex", "load", "-ex",
                             "set $pc = Reset_Handler", "-ex", "detach", "-ex", "quit", "fw.elf"]]
    assert cancel == f"-O cancel -L{here}:localhost:36789"


def test_an_exported_probe_without_a_gdbserver_tag_is_one_line_before_anything_runs(tmp_path):
    from n6.errors import N6Error
    from n6.flash.boards import ExporterProbe
    from n6.run import firmware_start
    from test_firmware_start import FakeRunner, _output
    runner = FakeRunner(str(tmp_path / "firmware_start.log"), _output("gdb_started"))
    exporter = ExporterProbe("n6-lab-3", "lab-machine-3", "/opt/st/bin/STM32_Programmer_CLI", "")
    with pytest.raises(N6Error, match=r"^labgrid place n6-lab-3 exports its probe but has no tag n6-gdbserver .*"
                                      r"\(fix: labgrid-client -p n6-lab-3 set-tags n6-gdbserver=\.\.\.\)$"):
        firmware_start.start("fw.elf", "/opt/st/bin", 2000, 1, "0042000A0013", runner=runner, exporter=exporter)
    assert runner.argvs == []
