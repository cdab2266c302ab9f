"""Starting ST's prebuilt aiValidation reloc firmware on a real board (deploy-protocol.md §3.2):
the variant that fits the image, then ST-LINK_gdbserver + arm-none-eabi-gdb loading it into SRAM
and jumping to Reset_Handler. The simulated board needs none of this."""
import glob
import os
import re
import shutil
import subprocess
import time

from ..errors import N6Error

FIRMWARE_DIRS = {"2": os.path.join("scripts", "N6_reloc", "test"), "3": os.path.join("scripts", "N6_reloc", "test")}
EXEC_RAM = 640 << 10            # internal exec RAM of the COPY firmwares
EXT_EXEC_RAM = 4 << 20          # the -ext firmwares' exec RAM in PSRAM
EXT_RAM = 27 << 20              # external RAM for the relocatable read/write pool
GDB_PORT = 36789
PLUGINS = {"ST-LINK_gdbserver": "com.st.stm32cube.ide.mcu.externaltools.stlink-gdb-server*",
           "arm-none-eabi-gdb": "com.st.stm32cube.ide.mcu.externaltools.gnu-tools*"}


def firmware_name(release, mode="copy", copy_size=0, ext_ram_size=0, usbc=False, max_speed=False):
    """ST's file name for the firmware variant, with ST's fallbacks: COPY above 640 KB runs from
    PSRAM (`-ext`); more external RAM than 27 MB cannot run."""
    if ext_ram_size > EXT_RAM:
        raise N6Error(None, f"Model requires more external RAM than available {ext_ram_size} > {EXT_RAM}",
                      "reduce the model's external RAM pool")
    if release.startswith("2"):
        ext = mode == "copy" and copy_size > EXEC_RAM
        if ext and copy_size > EXT_EXEC_RAM:
            raise N6Error(None, f"the model needs {copy_size} bytes of exec RAM, more than the {EXT_EXEC_RAM} of "
                          "the -ext firmware", "use XIP mode")
        suffix = "-usbc" if usbc else "-5529600" if max_speed else ""
        return f"stm32n6570-dk-validation-reloc-{mode}{'-ext' if ext else ''}{suffix}.elf"
    return f"stm32n6570-dk-validation-reloc{'-usbc' if usbc else ''}.elf"


def firmware_path(install_root, release, **variant):
    name = firmware_name(release, **variant)
    path = os.path.join(install_root, FIRMWARE_DIRS[release[0]], name)
    if not os.path.isfile(path):
        raise N6Error(path, f"The '{name}' is not available", "use an ST Edge AI Core install with its N6_reloc "
                      "validation firmwares (STEDGEAI_CORE_DIR)")
    return path


def find_tool(name, environ=os.environ):
    """The newest STM32CubeIDE plugin's copy (STM32_CUBE_IDE_DIR), else PATH."""
    ide = environ.get("STM32_CUBE_IDE_DIR")
    if ide:
        found = sorted(glob.glob(os.path.join(ide, "plugins", PLUGINS[name], "tools", "bin", name)),
                       key=lambda p: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", p)])
        if found:
            return found[-1]
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
