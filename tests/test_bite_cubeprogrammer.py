"""The CubeProgrammer backend's edges in process (n6.flash.cubeprogrammer): the call's time limit,
the tool's environment, the failure lines when no pattern matches or a signal stops it, the
processes that may hold the probe, the download timer and progress bars, and the hot-plug retry only
after a refused call. Written against the survivors of tools/mutate.py (target `cubeprogrammer`)."""
import os
import sys

import pytest

from n6.flash import cubeprogrammer as cp
from n6.flash.backend import Download, ProgrammerError
from n6.flash.cubeprogrammer import CliInstall, CubeProgrammer, ProgressParser
from n6.tool_runner import ToolResult

from test_flash_backends import CLI, CONNECT, ScriptedRunner, _backend


class TimedRunner(ScriptedRunner):
    def run(self, argv, on_output=None, timeout=None):
        self.timeouts = getattr(self, "timeouts", []) + [timeout]
        return super().run(argv, on_output, timeout)


def test_a_call_may_take_120_s_plus_its_bytes_at_20_kb_per_s(tmp_path):
    (tmp_path / "d.bin").write_bytes(b"x" * 20_000)
    runner = TimedRunner([(0, "ST-LINK SN  : S1\n")])
    _backend(runner).exchange([(0x7100_0000, 40_000)], [Download(str(tmp_path / "d.bin"), 0x7182_0000)])
    assert runner.timeouts == [123.0]


def test_the_tools_environment():
    real, sim = CliInstall(CLI, False, "t"), CliInstall(CLI, True, "t")
    lib = os.path.normpath(os.path.join(os.path.dirname(os.path.realpath(CLI)), "..", "lib"))
    if sys.platform.startswith("linux"):
        assert real.environ({})["LD_LIBRARY_PATH"] == lib
        assert real.environ({"LD_LIBRARY_PATH": "/x"})["LD_LIBRARY_PATH"] == lib + os.pathsep + "/x"
    assert "N6_SIM_PYTHON" not in real.environ({})
    assert sim.environ({})["N6_SIM_PYTHON"] == sys.executable
    assert sim.environ({"N6_SIM_PYTHON": "/py"})["N6_SIM_PYTHON"] == "/py"


def test_an_unknown_failure_names_the_first_error_line():
    assert cp.classify("Connecting\n  Error: bad thing\nError: second\n", "x.stldr") == (
        "programmer failed: Error: bad thing", "see the log; run with VERBOSE=1 to see the commands")
    assert cp.classify("nothing said\n", "x.stldr")[0] == "programmer failed: no error message"


def test_a_stopped_or_timed_out_programmer():
    b = _backend(ScriptedRunner([]))
    with pytest.raises(ProgrammerError, match="programmer stopped by signal 9"):
        b.fail(ToolResult([CLI], -9, "Error: x\n", 1.0))
    with pytest.raises(ProgrammerError, match="programmer did not finish within 600 s"):
        b.fail(ToolResult([CLI], -9, "", 1.0, timed_out=True))
    with pytest.raises(ProgrammerError, match="programmer failed: Error: x"):
        b.fail(ToolResult([CLI], 1, "Error: x\n", 1.0))


def test_processes_holding_the_probe(tmp_path):
    """/proc's comm is cut to 15 characters ("STM32_Programme"); a longer name may extend a holder's
    ("openocd-0.12"); a holder's name under 6 characters counts ("pyocd"); a shorter name that only
    begins a holder's is another program ("ST-LIN", "pyoc")."""
    for pid, name in ((11, "STM32_Programme"), (12, "openocd-0.12"), (13, "ST-LIN"), (14, "ST-LI"), (15, "bash"),
                      (16, "python3"), (17, "pyocd"), (18, "pyoc"), (19, "STM32CubeProgra"),
                      (os.getpid(), "openocd")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "comm").write_text(name + "\n")
    assert cp.holding_processes(str(tmp_path)) == ["STM32CubeProgra pid 19", "STM32_Programme pid 11",
                                                   "openocd-0.12 pid 12", "pyocd pid 17"]


def test_download_seconds_from_hours_minutes_seconds():
    p = ProgressParser([10])
    p.feed("Time elapsed during download operation: 02:03:04.500\n")
    assert p.seconds == [2 * 3600 + 3 * 60 + 4.5]


def test_a_progress_bar_past_the_downloads_it_knows_is_ignored():
    seen = []
    p = ProgressParser([10], lambda done, total: seen.append((done, total)))
    p.feed("Download in Progress:\n\r 40%\r 100%\nFile download complete\nDownload in Progress:\n\r 50%\n")
    assert seen == [(4, 10), (10, 10)]


def test_defaults_address_the_dk_as_st_flow_does():
    runner = ScriptedRunner([(0, "ST-LINK SN  : S1\n")])
    CubeProgrammer(CliInstall(CLI, False, "t"), runner, "x.stldr").exchange([], [])
    assert runner.argvs[0][1:1 + len(CONNECT)] == CONNECT            # freq=2000, ap=1


def test_a_refusal_in_a_successful_calls_output_is_not_retried():
    runner = ScriptedRunner([(0, "Warning: Unable to get core ID\nST-LINK SN  : S1\n")])
    b = _backend(runner)
    assert b.exchange([], [])[0] == "S1"
    assert len(runner.argvs) == 1 and b.mode == "hotplug" and b.notes == []


def test_the_installers_folder_is_found_last_before_the_simulated_programmer(tmp_path):
    from n6.host_layout import HOSTS
    from test_flash_backends import _exe
    cli = _exe(tmp_path / "home" / "STMicroelectronics" / "STM32Cube" / "STM32CubeProgrammer" / "bin" /
               "STM32_Programmer_CLI")
    env = {"PATH": "", "HOME": str(tmp_path / "home")}
    assert cp.find_cli(env, HOSTS["linux"], str(tmp_path)) == CliInstall(cli, False,
                                                                         "STM32CubeProgrammer's install folder")
    os.remove(cli)
    assert cp.find_cli(env, HOSTS["linux"], str(tmp_path)).simulated


def test_a_known_failure_names_the_serial_and_the_holders(monkeypatch):
    monkeypatch.setattr(cp, "holding_processes", lambda: ["openocd pid 7"])
    assert cp.classify("Error: No ST-LINK with serial number\n", "x.stldr", "S1")[0] == \
        "no ST-LINK probe found with serial number S1"
    assert cp.classify("Error: already in use\n", "x.stldr")[0] == \
        "the ST-LINK probe is held by another process (openocd pid 7)"
    monkeypatch.setattr(cp, "holding_processes", lambda: [])
    assert cp.classify("Error: already in use\n", "x.stldr")[0] == "the ST-LINK probe is held by another process"
    assert cp.classify("No debug probe detected\n", "x.stldr")[0] == "no ST-LINK probe found"


def test_progress_bars_without_a_listener_are_only_read():
    p = ProgressParser([10])
    p.feed("Download in Progress:\n\r 50%\r 100%\nFile download complete\n")
    assert (p.index, p.in_download) == (0, False)


def test_a_bar_past_100_percent_counts_the_whole_download():
    seen = []
    ProgressParser([1000], lambda done, total: seen.append(done)).feed("Download in Progress:\n\r 105%\n")
    assert seen == [1000]


def test_only_a_refused_hotplug_connect_is_retried_and_only_once_per_backend():
    refused = "Error: Unable to get core ID\n"
    runner = ScriptedRunner([(1, "Error: No debug probe detected\n")])
    with pytest.raises(ProgrammerError, match="no ST-LINK probe found"):
        _backend(runner).exchange([], [])
    assert len(runner.argvs) == 1                                   # another failure: no retry
    runner = ScriptedRunner([(1, refused), (0, "ST-LINK SN  : S1\n"), (1, refused)])
    b = _backend(runner)
    b.exchange([], [])
    with pytest.raises(ProgrammerError, match="cannot connect to the core"):
        b.exchange([], [])                                          # already under reset: not again
    assert [a[3] for a in runner.argvs] == ["mode=hotplug", "mode=UR", "mode=UR"] and len(b.notes) == 1


def test_a_dry_run_needs_no_serial_and_a_real_call_does():
    class DryRunner(ScriptedRunner):
        def run(self, argv, on_output=None, timeout=None):
            self.argvs.append(argv)
            return ToolResult(argv, 0, "", 0.0, dry_run=True)
    assert _backend(DryRunner([])).exchange([(0x7100_0000, 4)], []) == (None, {}, [])
    with pytest.raises(ProgrammerError, match="the programmer did not report the probe's serial number"):
        _backend(ScriptedRunner([(0, "done\n")])).exchange([], [])
