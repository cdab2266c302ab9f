"""Where ST's tools are on each host: the install layouts of ST Edge AI Core, STM32CubeProgrammer
and STM32CubeIDE on Windows, Linux and macOS (x86 and arm), as ST's own scripts look for them.
Path logic only: the host is a parameter, so every layout can be checked on any machine."""
import glob
import os
import platform
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Host:
    name: str           # ST's folder under Utilities/: windows, linux, mac, macarm
    exe_suffix: str     # what the host's executables end with

    def exe(self, name: str) -> str:
        return name + self.exe_suffix


HOSTS: dict[str | None, Host] = {h.name: h for h in (Host("windows", ".exe"), Host("linux", ""), Host("mac", ""),
                                                      Host("macarm", ""))}
# sys.platform → ST's folder name; a Mac on arm64 is "macarm"
_PLATFORMS = {"win32": "windows", "msys": "windows", "cygwin": "windows", "linux": "linux", "darwin": "mac"}

# STM32CubeIDE plugins that hold each tool (in <plugin>/tools/bin/)
IDE_PLUGINS = {"STM32_Programmer_CLI": "com.st.stm32cube.ide.mcu.externaltools.cubeprogrammer*",
               "ST-LINK_gdbserver": "com.st.stm32cube.ide.mcu.externaltools.stlink-gdb-server*",
               "arm-none-eabi-gdb": "com.st.stm32cube.ide.mcu.externaltools.gnu-tools*"}
# where STM32_CUBE_IDE_DIR may point: the IDE folder (Windows, Linux), or on macOS the app bundle
# or its Contents/Eclipse folder
_IDE_PLUGIN_DIRS = ("plugins", os.path.join("Contents", "Eclipse", "plugins"))
_CUBE_PROGRAMMER = os.path.join("STMicroelectronics", "STM32Cube", "STM32CubeProgrammer")


def current_host(sys_platform: str = sys.platform, machine: str | None = None) -> Host | None:
    """The running host as ST's scripts name it (None: a host ST ships no tools for)."""
    name = _PLATFORMS.get("linux" if sys_platform.startswith("linux") else sys_platform)
    machine = (machine if machine is not None else platform.machine()).lower()
    if name == "mac" and machine in ("arm64", "aarch64"):
        name = "macarm"
    return HOSTS.get(name)


HOST = current_host() or HOSTS["linux"]


def stedgeai_cli(host: Host = HOST) -> str:
    """The `stedgeai` executable relative to an ST Edge AI Core install root."""
    return os.path.join("Utilities", host.name, host.exe("stedgeai"))


def cube_programmer_bins(host: Host = HOST, environ: Mapping[str, str] = os.environ, root: str = os.sep) -> list[str]:
    """The bin folders of STM32CubeProgrammer's installer defaults on `host` (`root`: where the
    file system starts, for laid-out trees)."""
    if host.name == "windows":
        bases = [environ[k] for k in ("ProgramFiles", "ProgramFiles(x86)", "ProgramW6432") if environ.get(k)]
        return [os.path.join(b, _CUBE_PROGRAMMER, "bin") for b in dict.fromkeys(bases)]
    if host.name == "linux":
        homes = [environ["HOME"]] if environ.get("HOME") else []
        return [os.path.join(b, _CUBE_PROGRAMMER, "bin") for b in homes + [os.path.join(root, "usr", "local")]]
    return [os.path.join(root, "Applications", _CUBE_PROGRAMMER, "STM32CubeProgrammer.app", "Contents", "MacOs",
                         "bin")]


def _version_key(path: str) -> list[int | str]:
    plugin = os.path.basename(os.path.dirname(os.path.dirname(os.path.dirname(path))))   # <plugin>/tools/bin/exe
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", plugin)]


def ide_tool(ide: str, name: str, host: Host = HOST) -> str | None:
    """`name` from the newest STM32CubeIDE plugin that ships it (None: no such plugin)."""
    found = [p for sub in _IDE_PLUGIN_DIRS
             for p in glob.glob(os.path.join(glob.escape(ide), sub, IDE_PLUGINS[name], "tools", "bin", host.exe(name)))]
    return max(found, key=_version_key) if found else None


def on_path(name: str, environ: Mapping[str, str] = os.environ, host: Host = HOST) -> str | None:
    return shutil.which(host.exe(name), path=environ.get("PATH", ""))


def executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)
