"""Starting ST's prebuilt aiValidation reloc firmware on a real board (deploy-protocol.md §3.2):
the variant that fits the image, then ST-LINK_gdbserver + arm-none-eabi-gdb, or pyOCD's Python
API, loading it into SRAM and jumping to Reset_Handler. The simulated board needs none of this."""
import os
import shutil
import subprocess
import time

from ..errors import N6Error

GDB_PORT = 36789
PLUGINS = {"ST-LINK_gdbserver": "com.st.stm32cube.ide.mcu.externaltools.stlink-gdb-server*",
           "arm-none-eabi-gdb": "com.st.stm32cube.ide.mcu.externaltools.gnu-tools*"}


def find_tool(name, environ=os.environ):
    """The newest STM32CubeIDE plugin's copy (STM32_CUBE_IDE_DIR), else PATH."""
    from n6.flash.cubeprogrammer import newest_ide_tool
    ide = environ.get("STM32_CUBE_IDE_DIR")
    found = newest_ide_tool(ide, PLUGINS[name], name) if ide else None
    if found:
        return found
    on_path = shutil.which(name, path=environ.get("PATH", ""))
    if not on_path:
        raise N6Error(None, f"{name} not found", "install STM32CubeIDE and set STM32_CUBE_IDE_DIR, or put "
                      f"{name} on PATH")
    return on_path


def gdbserver_argv(gdbserver, cube_bin_dir, frequency=2000, access_port=1, serial=None, port=GDB_PORT):
    argv = [gdbserver, "-d", "--frequency", str(frequency), "--apid", str(access_port), "-v",
            "--port-number", str(port), "-cp", cube_bin_dir]
    return argv + (["--serial-number", serial] if serial else [])


def gdb_argv(gdb, elf, port=GDB_PORT):
    return [gdb, "-ex", f"target remote :{port}", "-ex", "monitor reset", "-ex", "load",
            "-ex", "set $pc = Reset_Handler", "-ex", "detach", "-ex", "quit", elf]


def start(elf, cube_bin_dir, frequency=2000, access_port=1, serial=None, environ=os.environ, runner=subprocess):
    """gdbserver in the background, gdb loads the firmware and starts it, gdbserver stops."""
    server = runner.Popen(gdbserver_argv(find_tool("ST-LINK_gdbserver", environ), cube_bin_dir, frequency,
                                         access_port, serial), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        time.sleep(1)
        proc = runner.run(gdb_argv(find_tool("arm-none-eabi-gdb", environ), elf), capture_output=True, text=True,
                          timeout=120)
        if proc.returncode:
            last = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
            raise N6Error(elf, f"starting the validation firmware failed: {last[0]}",
                          "check the probe and the boot mode (development boot)")
    finally:
        server.terminate()
        server.wait()
    time.sleep(1)


PYOCD_MISSING = N6Error(None, "starting the validation firmware with pyOCD: the pyocd package is not installed",
                        "pip install pyocd && pyocd pack install stm32n657x0hxq, or set the board file's "
                        "[programmer] backend (FLASH_BACKEND=) to stm32cubeprogrammer")


def elf_load(elf):
    """(Reset_Handler address, [(load address, bytes)]): what gdb's `load` writes (the ELF's
    loadable segments' file bytes at their physical addresses) and where `set $pc` points."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    from ..reloc.elf import read_symbols
    try:
        with open(elf, "rb") as f:
            chunks = [(seg["p_paddr"], seg.data()) for seg in ELFFile(f).iter_segments()
                      if seg["p_type"] == "PT_LOAD" and seg["p_filesz"]]
        found = next((s for s in read_symbols(elf) if s.name == "Reset_Handler"), None)
        if found is None:
            raise N6Error(elf, "no Reset_Handler symbol", "use ST's validation firmware ELF (with symbols)")
        return found.value & ~1, chunks
    except (OSError, ELFError) as err:
        raise N6Error(elf, f"cannot read the validation firmware: {err}", "reinstall ST Edge AI Core") from None


def _pyocd_session(serial, target, frequency_khz):
    try:
        import pyocd  # noqa: F401
    except ImportError:
        raise PYOCD_MISSING from None
    from ..flash.pyocd_backend import _open_session
    return _open_session(serial, target, frequency_khz, "attach")


def start_pyocd(elf, target, frequency=2000, serial=None, open_session=_pyocd_session):
    """The gdb sequence through pyOCD: reset and halt, write the firmware's segments into SRAM,
    pc = Reset_Handler (Thumb), resume; the session closes (the core keeps running)."""
    entry, chunks = elf_load(elf)
    with open_session(serial, target, frequency) as session:
        core = session.board.target
        core.reset_and_halt()
        for addr, data in chunks:
            core.write_memory_block8(addr, list(data))
        if any(bytes(core.read_memory_block8(a, len(d))) != d for a, d in chunks):
            raise N6Error(elf, "starting the validation firmware with pyOCD failed: SRAM does not hold the "
                          "firmware after loading", "check the probe and the boot mode (development boot)")
        core.write_core_register("pc", entry)
        core.resume()
    time.sleep(1)
