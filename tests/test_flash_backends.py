"""Programmer backends: exact argv per case (subprocess wrapper patched), discovery, the failure
lines, recovery, the subprocess wrapper itself, and pyOCD through a fake session."""
import os
import stat
import sys

import pytest

from n6.errors import N6Error
from n6.flash import cubeprogrammer as cp
from n6.flash.backend import Download, ProgrammerError
from n6.flash.cubeprogrammer import CliInstall, CubeProgrammer, call_argv, find_cli, list_argv
from n6.flash.pyocd_backend import PyOCD
from n6.tool_runner import ToolResult, ToolRunner

CLI = "/opt/st/bin/STM32_Programmer_CLI"
LDR = "/opt/st/bin/ExternalLoader/MX66UW1G45G_STM32N6570-DK.stldr"
D1, D2 = Download("/b/71000000.bin", 0x71000000), Download("/b/71820000.bin", 0x71820000)
CONNECT = ["-c", "port=SWD", "mode=hotplug", "freq=2000", "ap=1"]


@pytest.mark.parametrize("argv, expected", [
    (list_argv(CLI), [CLI, "--list", "st-link"]),
    (call_argv(CLI, LDR), [CLI, *CONNECT, "-el", LDR]),
    (call_argv(CLI, LDR, [(0x71000000, 96, "/t/0.bin"), (0x71003B60, 68, "/t/1.bin")], serial="SN1"),
     [CLI, *CONNECT, "sn=SN1", "-el", LDR, "-u", "0x71000000", "96", "/t/0.bin", "-u", "0x71003B60", "68", "/t/1.bin"]),
    (call_argv(CLI, LDR, mode="UR"), [CLI, "-c", "port=SWD", "mode=UR", "freq=2000", "ap=1", "-el", LDR]),
    (call_argv(CLI, LDR, downloads=[D1]), [CLI, *CONNECT, "-el", LDR, "-d", D1.path, "0x71000000", "-v"]),
    (call_argv(CLI, LDR, downloads=[D1, D2], serial="SN1"),
     [CLI, *CONNECT, "sn=SN1", "-el", LDR, "-d", D1.path, "0x71000000", "-v", "-d", D2.path, "0x71820000", "-v"]),
    (call_argv(CLI, LDR, downloads=[D1], verify=False), [CLI, *CONNECT, "-el", LDR, "-d", D1.path, "0x71000000"]),
    (call_argv(CLI, LDR, downloads=[D1], reset="hard"),
     [CLI, *CONNECT, "-el", LDR, "-d", D1.path, "0x71000000", "-v", "-hardRst"]),
    (call_argv(CLI, LDR, downloads=[D1], reset="soft"),
     [CLI, *CONNECT, "-el", LDR, "-d", D1.path, "0x71000000", "-v", "-rst"]),
    (call_argv(CLI, LDR, downloads=[D1], mode="UR"),
     [CLI, "-c", "port=SWD", "mode=UR", "freq=2000", "ap=1", "-el", LDR, "-d", D1.path, "0x71000000", "-v"]),
    # the common case: read back header and rt_ctx, write the changed sectors and verify, one call
    (call_argv(CLI, LDR, [(0x71000000, 96, "/t/0.bin")], [D2], 4000, 1, "SN1", reset="soft"),
     [CLI, "-c", "port=SWD", "mode=hotplug", "freq=4000", "ap=1", "sn=SN1", "-el", LDR,
      "-u", "0x71000000", "96", "/t/0.bin", "-d", D2.path, "0x71820000", "-v", "-rst"]),
])
def test_cubeprogrammer_argv(argv, expected):
    assert argv == expected


class ScriptedRunner:
    """The subprocess wrapper, patched: records argv, answers from a script of (rc, output)."""

    def __init__(self, answers):
        self.answers, self.argvs, self.calls, self.timeout = list(answers), [], 0, 600
        self.echoed = []

    def run(self, argv, on_output=None, timeout=None):
        self.argvs.append(argv)
        self.calls += 1
        rc, out = self.answers.pop(0)
        for path in [argv[i + 3] for i, a in enumerate(argv) if a == "-u"]:
            open(path, "wb").write(b"\xaa" * int(argv[argv.index(path) - 1]))
        if on_output:
            on_output(out)
        return ToolResult(argv, rc, out, 0.1)

    def echo(self, text):
        self.echoed.append(text)


def _backend(runner, serial=None):
    return CubeProgrammer(CliInstall(CLI, False, "test"), runner, "MX66UW1G45G_STM32N6570-DK.stldr", 2000, 1,
                          serial, "build/m/flash/programmer.log")


def test_read_learns_the_serial_and_later_calls_select_it(tmp_path):
    runner = ScriptedRunner([(0, "ST-LINK SN  : 0042XYZ\n"), (0, "")])
    b = _backend(runner)
    (tmp_path / "d.bin").write_bytes(b"x")
    serial, data, seconds = b.exchange([(0x71000000, 4)], [Download(str(tmp_path / "d.bin"), 0x71820000)])
    assert (serial, data, seconds) == ("0042XYZ", {0x71000000: b"\xaa" * 4}, [0.0])
    assert runner.argvs[0][:len(CONNECT) + 1] == [CLI, *CONNECT] and runner.argvs[0][-8] == "-u"
    assert runner.argvs[0][-4:] == ["-d", str(tmp_path / "d.bin"), "0x71820000", "-v"]     # one call: read, write
    b.program([])
    assert runner.argvs[1] == call_argv(CLI, b.loader, serial="0042XYZ")


def test_program_reports_progress_and_seconds(tmp_path):
    files = []
    for d, n in ((D1, 1000), (D2, 3000)):
        p = tmp_path / os.path.basename(d.path)
        p.write_bytes(b"x" * n)
        files.append(Download(str(p), d.address))
    prog = ("Download in Progress:\n\r\u2588 50%\r\u2588\u2588 100%\nFile download complete\n"
            "Time elapsed during download operation: 00:00:01.250\n\nVerifying ...\nRead progress:\n\r\u2588 100%\n"
            "Download in Progress:\n\r\u2588 100%\nFile download complete\n"
            "Time elapsed during download operation: 00:00:00.500\n")
    runner = ScriptedRunner([(0, prog)])
    seen = []
    seconds = _backend(runner, serial="SN9").program(files, reset="hard", on_progress=lambda d, t: seen.append((d, t)))
    assert seconds == [1.25, 0.5]
    assert seen == [(500, 4000), (1000, 4000), (4000, 4000)]
    assert runner.argvs[0] == call_argv(CLI, LDR.replace("/opt/st/bin", os.path.dirname(CLI)), (), files, 2000, 1,
                                        "SN9", True, "hard")


def test_hotplug_refused_is_retried_once_under_reset():
    refused = "Error: Unable to get core ID\nError: Cannot connect to access port 1!\n"
    runner = ScriptedRunner([(1, refused), (0, "ST-LINK SN  : S1\n")])
    b = _backend(runner)
    assert b.exchange([], [])[0] == "S1"
    assert [a[3] for a in runner.argvs] == ["mode=hotplug", "mode=UR"]
    assert b.notes == ["hot-plug connect refused: retried with connect under reset (mode=UR)"]
    runner2 = ScriptedRunner([(1, refused), (1, refused)])
    with pytest.raises(ProgrammerError) as e:
        _backend(runner2).exchange([], [])
    assert str(e.value) == ("build/m/flash/programmer.log: cannot connect to the core (hot-plug and "
                            "connect-under-reset both refused) (fix: set development boot, power-cycle the board "
                            "and flash again)")
    assert len(runner2.argvs) == 2                   # tried once, not more


def test_options_validated_against_capabilities():
    class NoSerial(CubeProgrammer):
        capabilities = cp.Capabilities(("none",), False, True, True)
    b = NoSerial(CliInstall(CLI, False, "t"), ScriptedRunner([]), "x.stldr")
    with pytest.raises(N6Error, match="cannot reset 'hard'.*FLASH_RESET=none"):
        b.check_options("hard")
    with pytest.raises(N6Error, match="cannot select a probe by serial number"):
        b.check_options("none", serial="S1")


def _exe(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "w").write("#!/bin/sh\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return str(path)


def test_discovery_order(tmp_path):
    explicit = _exe(tmp_path / "x" / "STM32_Programmer_CLI")
    ide = tmp_path / "ide"
    old = _exe(ide / "plugins" / "com.st.stm32cube.ide.mcu.externaltools.cubeprogrammer.linux64_2.1.100.2023"
               / "tools" / "bin" / "STM32_Programmer_CLI")
    new = _exe(ide / "plugins" / "com.st.stm32cube.ide.mcu.externaltools.cubeprogrammer.linux64_2.10.0.2025"
               / "tools" / "bin" / "STM32_Programmer_CLI")
    on_path = _exe(tmp_path / "path" / "STM32_Programmer_CLI")
    env = {"STM32_PROGRAMMER_CLI": explicit, "STM32_CUBE_IDE_DIR": str(ide), "PATH": str(tmp_path / "path")}
    assert find_cli(env) == CliInstall(explicit, False, "STM32_PROGRAMMER_CLI")
    del env["STM32_PROGRAMMER_CLI"]
    assert find_cli(env).cli == new and old != new            # newest plugin, by version not by text
    del env["STM32_CUBE_IDE_DIR"]
    assert find_cli(env) == CliInstall(on_path, False, "PATH")
    sim = find_cli({"PATH": ""})
    assert (sim.simulated and sim.cli == os.path.join(cp.SIM_PROGRAMMER_BIN, "STM32_Programmer_CLI")
            and os.access(sim.cli, os.X_OK))
    with pytest.raises(N6Error, match="STM32_PROGRAMMER_CLI does not name an executable"):
        find_cli({"STM32_PROGRAMMER_CLI": str(tmp_path / "nope")})
    environ = CliInstall(new, False, "t").environ({"LD_LIBRARY_PATH": "/usr/lib/x"})
    if sys.platform.startswith("linux"):
        assert environ["LD_LIBRARY_PATH"] == os.path.normpath(os.path.join(os.path.dirname(new), "..", "lib")) + \
            ":/usr/lib/x"
    assert CliInstall(new, False, "t").loader("A.stldr") == os.path.join(os.path.dirname(new), "ExternalLoader",
                                                                          "A.stldr")


def test_runner_logs_verbose_dry_run_and_timeout(tmp_path):
    log = tmp_path / "p.log"
    echoed = []
    r = ToolRunner(str(log), verbose=True, echo=echoed.append, timeout=1)
    res = r.run([sys.executable, "-c", "print('Error: boom')"])
    assert (res.returncode == 0 and res.output == "Error: boom\n"
            and echoed[0].endswith("-c 'print('\"'\"'Error: boom'\"'\"')'"))
    res = r.run([sys.executable, "-c", "import time; time.sleep(30)"])
    assert res.timed_out and res.seconds < 10
    text = log.read_text()
    assert "Error: boom" in text and "timed out" in text and r.calls == 2
    dry = ToolRunner(None, dry_run=True, echo=echoed.append)
    assert dry.run(["/nonexistent/tool", "-x"]).dry_run and echoed[-1] == "  DRY-RUN  /nonexistent/tool -x"
    assert dry.calls == 0
    res = ToolRunner(None).run(["/nonexistent/tool"])
    assert res.returncode == 127 and "cannot start" in res.output


class FakeTarget:
    class ResetType:
        HW, SW = "hw", "sw"

    def __init__(self):
        self.mem, self.resets = {}, []

    def read_memory_block8(self, addr, n):
        return [self.mem.get(addr + i, 0xFF) for i in range(n)]

    def reset(self, reset_type=None):
        self.resets.append(reset_type)


class FakeSession:
    def __init__(self, target, serial):
        self.board = type("B", (), {"target": target})()
        self.probe = type("P", (), {"unique_id": serial})()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


class FakeLoader:
    def __init__(self, target, progress, log):
        self.target, self.progress, self.log, self.data = target, progress, log, []

    def add_data(self, address, data):
        self.data.append((address, bytes(data)))

    def commit(self):
        for address, data in self.data:
            self.log.append(("commit", address, len(data)))
            for i, b in enumerate(data):
                self.target.mem[address + i] = b
            self.progress(1.0)


def test_pyocd_backend_with_fake_session(tmp_path):
    target, log, opened = FakeTarget(), [], []

    def open_session(serial, tgt, freq, mode):
        opened.append((serial, tgt, freq, mode))
        return FakeSession(target, "0670FF")
    b = PyOCD("stm32n657x0hxq", 2000, None, open_session=open_session,
              memory_loader=lambda session, progress: FakeLoader(target, progress, log))
    f = tmp_path / "a.bin"
    f.write_bytes(b"\x01\x02\x03")
    seen = []
    assert b.program([Download(str(f), 0x71000000)], reset="hard", on_progress=lambda d, t: seen.append(d)) != []
    assert log == [("commit", 0x71000000, 3)] and target.resets == ["hw"] and seen == [3]
    assert b.exchange([(0x71000000, 4)], [])[:2] == ("0670FF", {0x71000000: b"\x01\x02\x03\xff"})
    assert opened[0] == (None, "stm32n657x0hxq", 2000, "attach") and b.serial == "0670FF"
    f.write_bytes(b"\x09")                                # read back and write in one session
    serial, data, seconds = b.exchange([(0x71000000, 2)], [Download(str(f), 0x71000001)])
    assert (serial, data, len(seconds), len(opened)) == ("0670FF", {0x71000000: b"\x01\x02"}, 1, 3)
    assert target.read_memory_block8(0x71000000, 3) == [1, 9, 3]
    bad = PyOCD("t", open_session=open_session, memory_loader=lambda s, p: type("L", (), {
        "add_data": lambda self, a, d: None, "commit": lambda self: None})())
    with pytest.raises(ProgrammerError, match="verify failed at 0x71000010"):
        bad.program([Download(str(f), 0x71000010)])


def test_pyocd_missing_is_one_line(monkeypatch):
    import n6.flash.pyocd_backend as pb
    monkeypatch.setitem(sys.modules, "pyocd", None)
    monkeypatch.setitem(sys.modules, "pyocd.core.helpers", None)
    with pytest.raises(N6Error) as e:
        pb._open_session(None, "t", 2000, "attach")
    assert "pyocd package is not installed" in str(e.value) and "pyocd pack install" in str(e.value)


def test_probe_list_from_the_simulated_programmer(tmp_path):
    install = find_cli({"PATH": ""})
    env = install.environ(dict(os.environ, N6_SIM_BOARD=str(tmp_path / "b")))
    b = CubeProgrammer(install, ToolRunner(None, env=env), "x.stldr")
    assert b.probes() == ["004200000000000000000001"]
    env["N6_SIM_PROGRAMMER_FAIL"] = "no-probe"
    assert CubeProgrammer(install, ToolRunner(None, env=env), "x.stldr").probes() == []
