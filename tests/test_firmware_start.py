"""Starting ST's validation firmware on a real board: the variant chosen for the image with ST's
fallbacks, and the exact gdbserver / gdb command lines (deploy-protocol.md §3.2)."""
import io
import os
import struct
import subprocess
import sys

import pytest

from n6.errors import N6Error
from n6.flash import validation_firmware as vf
from n6.tool_runner import ToolResult, ToolRunner
from n6.run import firmware_start as fw

@pytest.mark.parametrize("kwargs,name", [
    ({}, "stm32n6570-dk-validation-reloc-copy.elf"),
    ({"mode": "xip"}, "stm32n6570-dk-validation-reloc-xip.elf"),
    ({"copy_size": 641 << 10}, "stm32n6570-dk-validation-reloc-copy-ext.elf"),       # ST's COPY fallback
    ({"mode": "xip", "copy_size": 2 << 20}, "stm32n6570-dk-validation-reloc-xip.elf"),
    ({"usbc": True}, "stm32n6570-dk-validation-reloc-copy-usbc.elf"),
    ({"copy_size": 1 << 20, "usbc": True}, "stm32n6570-dk-validation-reloc-copy-ext-usbc.elf"),
    ({"max_speed": True}, "stm32n6570-dk-validation-reloc-copy-5529600.elf"),
])
def test_firmware_variant(kwargs, name):
    assert vf.choose_variant("2.2", **kwargs).name == name


def test_firmware_limits_and_missing_file(tmp_path):
    with pytest.raises(N6Error, match="more external RAM than available"):
        vf.choose_variant("2.2", ext_ram_size=28 << 20)
    assert vf.choose_variant("3.0").name == "stm32n6570-dk-validation-reloc.elf"
    with pytest.raises(N6Error, match="is not available"):
        vf.firmware_path(str(tmp_path), vf.choose_variant("2.2"))


def test_argv():
    assert fw.gdbserver_argv("/ide/ST-LINK_gdbserver", "/cube/bin") == [
        "/ide/ST-LINK_gdbserver", "-d", "--frequency", "2000", "--apid", "1", "-v", "--port-number", "36789",
        "-cp", "/cube/bin"]
    assert fw.gdbserver_argv("g", "c", 4000, 1, "0042")[-2:] == ["--serial-number", "0042"]
    assert fw.gdb_argv("arm-none-eabi-gdb", "fw.elf") == [
        "arm-none-eabi-gdb", "-ex", "target remote :36789", "-ex", "monitor reset", "-ex", "load",
        "-ex", "set $pc = Reset_Handler", "-ex", "detach", "-ex", "quit", "fw.elf"]


def test_tools_from_the_ide_plugins(tmp_path):
    for plugin in ("com.st.stm32cube.ide.mcu.externaltools.stlink-gdb-server.linux64_2.1.0",
                   "com.st.stm32cube.ide.mcu.externaltools.stlink-gdb-server.linux64_2.10.0"):
        d = tmp_path / "plugins" / plugin / "tools" / "bin"
        d.mkdir(parents=True)
        (d / "ST-LINK_gdbserver").write_text("")
    found = fw.find_tool("ST-LINK_gdbserver", {"STM32_CUBE_IDE_DIR": str(tmp_path), "PATH": ""})
    assert "2.10.0" in found
    with pytest.raises(N6Error, match="arm-none-eabi-gdb not found"):
        fw.find_tool("arm-none-eabi-gdb", {"PATH": str(tmp_path)})


OUTPUTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "tool_outputs")


def _output(name):
    with open(os.path.join(OUTPUTS, name + ".txt")) as f:
        return f.read()


class FakeServer:
    """ST-LINK_gdbserver as Popen returns it: prints its output, then runs until terminated
    (or has exited when it printed no `Waiting for debugger connection`)."""

    def __init__(self, output, calls):
        self.stdout, self.calls = io.BytesIO(output.encode()), calls

    def terminate(self):
        self.calls.append(("terminate",))

    def wait(self):
        return 0


class FakeRunner(ToolRunner):
    """The ToolRunner that runs gdb: logs as the real one, returns a recorded output."""

    def __init__(self, log_path, output, returncode=0):
        super().__init__(log_path)
        self.output, self.returncode, self.argvs = output, returncode, []

    def run(self, argv, on_output=None, timeout=None):
        self.argvs.append(argv)
        self.log(f"$ {' '.join(argv)}\n{self.output}")
        return ToolResult(argv, self.returncode, self.output, 0.1)


def _start(tmp_path, monkeypatch, server_output, gdb_output, returncode=0):
    monkeypatch.setattr(fw.time, "sleep", lambda s: None)
    for tool in ("ST-LINK_gdbserver", "arm-none-eabi-gdb"):
        (tmp_path / tool).write_text("")
        (tmp_path / tool).chmod(0o755)
    calls, log = [], str(tmp_path / "firmware_start.log")
    runner = FakeRunner(log, gdb_output, returncode)

    def popen(argv, **kw):
        calls.append(("Popen", argv))
        return FakeServer(server_output, calls)
    fw.start("fw.elf", "/cube/bin", environ={"PATH": str(tmp_path)}, log_path=log, popen=popen, runner=runner,
             timeout=5)
    return calls, runner, log


def test_start_sequence(monkeypatch, tmp_path):
    calls, runner, log = _start(tmp_path, monkeypatch, _output("gdbserver_listening"), _output("gdb_started"))
    assert [c[0] for c in calls] == ["Popen", "terminate"] and calls[0][1][0].endswith("ST-LINK_gdbserver")
    assert runner.argvs[0][-1] == "fw.elf" and runner.argvs[0][0].endswith("arm-none-eabi-gdb")
    text = open(log).read()                          # both tools' output, in order
    assert text.index("ST-LINK_gdbserver -d") < text.index("Waiting for debugger") < text.index("Transfer rate")


@pytest.mark.parametrize("server, gdb, returncode, problem", [
    ("gdbserver_no_probe", None, 0, "no ST-LINK probe found (Error: No ST-LINK detected! Please connect ST-LINK and "
                                    "restart the debug session.)"),
    ("gdbserver_no_target", None, 0, "ST-LINK_gdbserver cannot reach the board (Reason: No device found on "
                                     "target.)"),
    ("gdbserver_port_in_use", None, 0, "port 36789 is in use (Failed to bind to port 36789, error code -1: Address "
                                       "already in use)"),
    ("gdbserver_listening", "gdb_target_remote_refused", 0, "gdb's `target remote :36789` was refused (:36789: "
                                                            "Connection refused.)"),
    ("gdbserver_listening", "gdb_load_failed", 0, "gdb could not load the firmware into SRAM (Load failed)"),
    ("gdbserver_listening", "gdb_disconnected", 0, "the board stopped answering gdb (Remote communication error.  "
                                                   "Target disconnected.: Connection reset by peer.)"),
    ("gdbserver_listening", "gdb_started", 1, "gdb reported no load ([Inferior 1 (Remote target) detached])"),
])
def test_a_failed_start_is_one_line_naming_the_log(monkeypatch, tmp_path, server, gdb, returncode, problem):
    """gdb exits 0 when `target remote` fails: each failure is told from the tools' output."""
    with pytest.raises(N6Error) as e:
        _start(tmp_path, monkeypatch, _output(server), _output(gdb) if gdb else "", returncode)
    log = str(tmp_path / "firmware_start.log")
    assert str(e.value).startswith(f"{log}: starting the validation firmware failed: {problem} (fix: ")
    assert "\n" not in str(e.value) and _output(server).splitlines()[-1] in open(log).read()


def test_a_gdbserver_that_never_listens(monkeypatch, tmp_path):
    assert fw.server_failure(_output("gdbserver_listening").replace("Waiting for debugger connection...", ""),
                             exited=False, timeout=20)[0] == \
        "ST-LINK_gdbserver did not listen within 20 s (ST-LINK device initialization OK)"
    assert fw.server_failure("", exited=True)[0] == "ST-LINK_gdbserver exited (no output)"
    assert fw.gdb_failure(_output("gdb_started")) is None


FIRMWARE = """
.syntax unified
.thumb
.section .vectors, "a"
.word 0x34100000
.word Reset_Handler
.text
.thumb_func
.global Reset_Handler
Reset_Handler:
    b .
.data
.word 0x12345678, 0x9abcdef0
"""


class FakeTarget:
    """pyOCD's target API as far as start_pyocd uses it; records every call."""

    def __init__(self, calls, corrupt=False):
        self.calls, self.memory, self.corrupt = calls, {}, corrupt

    def reset_and_halt(self):
        self.calls.append(("reset_and_halt",))

    def write_memory_block8(self, addr, data):
        self.calls.append(("write", addr, bytes(data)))
        self.memory[addr] = bytes(data) if not self.corrupt else bytes(len(data))

    def read_memory_block8(self, addr, n):
        self.calls.append(("read", addr, n))
        return list(self.memory[addr][:n])

    def write_core_register(self, reg, value):
        self.calls.append(("reg", reg, value))

    def resume(self):
        self.calls.append(("resume",))


def _fake_session(calls, corrupt=False):
    class Session:
        def __init__(self):
            self.board = type("Board", (), {"target": FakeTarget(calls, corrupt)})()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            calls.append(("close",))

    def open_session(serial, target, frequency):
        calls.append(("open", serial, target, frequency))
        return Session()
    return open_session


def test_pyocd_start_sequence(monkeypatch, tmp_path):
    monkeypatch.setattr(fw.time, "sleep", lambda s: None)
    (tmp_path / "f.s").write_text(FIRMWARE)
    subprocess.run(["arm-none-eabi-as", "-mthumb", "-march=armv8-m.main", "f.s", "-o", "f.o"], cwd=tmp_path, check=True)
    subprocess.run(["arm-none-eabi-ld", "-Ttext=0x34180400", "-Tdata=0x34190000", "--section-start=.vectors=0x34180000",
                    "-e", "Reset_Handler", "f.o", "-o", "f.elf"], cwd=tmp_path, check=True)
    elf = str(tmp_path / "f.elf")
    calls = []
    fw.start_pyocd(elf, "stm32n657x0hxq", 2000, "003A00293433510237363934", open_session=_fake_session(calls))
    writes = [c for c in calls if c[0] == "write"]
    assert calls[0] == ("open", "003A00293433510237363934", "stm32n657x0hxq", 2000)
    assert calls[1] == ("reset_and_halt",)
    def at(addr, n):          # what the writes left in SRAM at addr
        for _, base, data in writes:
            if base <= addr and addr + n <= base + len(data):
                return data[addr - base:addr + n - base]
    assert at(0x34180000, 8) == struct.pack("<II", 0x34100000, 0x34180401)      # vectors
    assert at(0x34180400, 2) == bytes.fromhex("fee7")                            # b .
    assert at(0x34190000, 8) == struct.pack("<II", 0x12345678, 0x9ABCDEF0)      # .data
    assert calls[-3:] == [("reg", "pc", 0x34180400), ("resume",), ("close",)]
    calls = []
    with pytest.raises(N6Error, match="SRAM does not hold the firmware"):
        fw.start_pyocd(elf, "stm32n657x0hxq", open_session=_fake_session(calls, corrupt=True))
    assert ("resume",) not in calls and calls[-1] == ("close",)


def test_pyocd_missing_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pyocd", None)       # import pyocd → ImportError
    (tmp_path / "f.elf").write_bytes(b"")
    with pytest.raises(N6Error) as e:
        fw._pyocd_session(None, "stm32n657x0hxq", 2000)
    assert "pyocd package is not installed" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(N6Error, match="cannot read the validation firmware"):
        fw.start_pyocd(str(tmp_path / "f.elf"), "stm32n657x0hxq")
