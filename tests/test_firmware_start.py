"""Starting ST's validation firmware on a real board: the variant chosen for the image with ST's
fallbacks, and the exact gdbserver / gdb command lines (deploy-protocol.md §3.2)."""
import struct
import subprocess
import sys

import pytest

from n6.errors import N6Error
from n6.flash import validation_firmware as vf
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


class FakeRunner:
    def __init__(self, rc=0):
        self.calls, self.rc = [], rc

    def Popen(self, argv, **kw):
        self.calls.append(("Popen", argv))
        outer = self

        class P:
            def terminate(self):
                outer.calls.append(("terminate",))

            def wait(self):
                pass
        return P()

    def run(self, argv, **kw):
        self.calls.append(("run", argv))

        class R:
            returncode, stdout, stderr = self.rc, "", "Remote connection closed"
        return R()


def test_start_sequence(monkeypatch, tmp_path):
    monkeypatch.setattr(fw.time, "sleep", lambda s: None)
    for tool in ("ST-LINK_gdbserver", "arm-none-eabi-gdb"):
        (tmp_path / tool).write_text("")
        (tmp_path / tool).chmod(0o755)
    env = {"PATH": str(tmp_path)}
    runner = FakeRunner()
    fw.start("fw.elf", "/cube/bin", environ=env, runner=runner)
    assert [c[0] for c in runner.calls] == ["Popen", "run", "terminate"]
    assert runner.calls[1][1][-1] == "fw.elf" and runner.calls[0][1][0].endswith("ST-LINK_gdbserver")
    with pytest.raises(N6Error, match="starting the validation firmware failed: Remote connection closed"):
        fw.start("fw.elf", "/cube/bin", environ=env, runner=FakeRunner(rc=1))


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
