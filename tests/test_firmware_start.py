"""Starting ST's validation firmware on a real board: the variant chosen for the image with ST's
fallbacks, and the exact gdbserver / gdb command lines (deploy-protocol.md §3.2)."""
import pytest

from n6.errors import N6Error
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
    assert fw.firmware_name("2.2", **kwargs) == name


def test_firmware_limits_and_missing_file(tmp_path):
    with pytest.raises(N6Error, match="more external RAM than available"):
        fw.firmware_name("2.2", ext_ram_size=28 << 20)
    assert fw.firmware_name("3.0") == "stm32n6570-dk-validation-reloc.elf"
    with pytest.raises(N6Error, match="is not available"):
        fw.firmware_path(str(tmp_path), "2.2")


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
