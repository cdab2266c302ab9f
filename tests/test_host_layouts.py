"""ST's tools found in the install layouts of each host ST ships for (Windows, Linux, macOS on x86
and arm), from trees laid out as those installs lay them out: the path logic, on any machine."""
import os

import pytest

from n6.errors import N6Error
from n6.flash.cubeprogrammer import find_cli
from n6.host_layout import HOSTS, current_host
from n6.run.firmware_start import find_tool
from n6.stedgeai_install import LL_ATON, PLATFORM, check_install

LOADER = "MX66UW1G45G_STM32N6570-DK.stldr"
# the host tag of each host's STM32CubeIDE plugins, as ST names them
PLUGIN_TAG = {"windows": "win32", "linux": "linux64", "mac": "macos64", "macarm": "macosaarch64"}


def _exe(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("")
    os.chmod(path, 0o755)
    return str(path)


@pytest.mark.parametrize("sys_platform, machine, name", [
    ("win32", "AMD64", "windows"), ("cygwin", "x86_64", "windows"), ("msys", "x86_64", "windows"),
    ("linux", "x86_64", "linux"), ("linux", "aarch64", "linux"), ("darwin", "x86_64", "mac"),
    ("darwin", "arm64", "macarm")])
def test_the_host_as_st_s_scripts_name_it(sys_platform, machine, name):
    assert current_host(sys_platform, machine) == HOSTS[name]


def test_a_host_st_ships_nothing_for():
    assert current_host("freebsd14", "amd64") is None


@pytest.mark.parametrize("host", HOSTS)
def test_stedgeai_install_of_each_host(tmp_path, host):
    root = tmp_path / "STEdgeAI" / "2.2"
    os.makedirs(root / LL_ATON)
    os.makedirs(root / PLATFORM)
    exe = "stedgeai.exe" if host == "windows" else "stedgeai"
    _exe(root / "Utilities" / host / exe)
    assert check_install(str(root), HOSTS[host]) == str(root)
    other = "linux" if host != "linux" else "windows"
    with pytest.raises(N6Error) as e:
        check_install(str(root), HOSTS[other])
    assert f"not an ST Edge AI Core install (no {os.path.join('Utilities', other, 'stedgeai')}" in str(e.value)


def _ide(tmp_path, host):
    """An STM32CubeIDE tree of `host`: (what STM32_CUBE_IDE_DIR names, {tool: path})."""
    if host == "windows":
        ide = tmp_path / "ST" / "STM32CubeIDE_1.18.0" / "STM32CubeIDE"
        plugins = ide / "plugins"
    elif host == "linux":
        ide = tmp_path / "opt" / "st" / "stm32cubeide_1.18.0"
        plugins = ide / "plugins"
    else:
        ide = tmp_path / "Applications" / "STM32CubeIDE.app"
        plugins = ide / "Contents" / "Eclipse" / "plugins"
    tag, ext = PLUGIN_TAG[host], ".exe" if host == "windows" else ""
    tools = {}
    for plugin, tool in (("cubeprogrammer", "STM32_Programmer_CLI"), ("stlink-gdb-server", "ST-LINK_gdbserver"),
                         ("gnu-tools-for-stm32.13.3.rel1", "arm-none-eabi-gdb")):
        for version in ("2.2.9.202401010000", "2.2.100.202508131133"):     # the newest by version, not by text
            path = _exe(plugins / f"com.st.stm32cube.ide.mcu.externaltools.{plugin}.{tag}_{version}" / "tools" /
                        "bin" / f"{tool}{ext}")
        tools[tool] = path
    _exe(os.path.join(os.path.dirname(tools["STM32_Programmer_CLI"]), "ExternalLoader", LOADER))
    return ide, tools


@pytest.mark.parametrize("host", HOSTS)
def test_cube_ide_plugin_tree_of_each_host(tmp_path, host):
    ide, tools = _ide(tmp_path, host)
    env = {"STM32_CUBE_IDE_DIR": str(ide), "PATH": ""}
    found = find_cli(env, HOSTS[host])
    assert (found.cli, found.simulated, found.found_by) == (tools["STM32_Programmer_CLI"], False, "STM32_CUBE_IDE_DIR")
    assert os.path.isfile(found.loader(LOADER))                      # the external loader beside it
    for tool in ("ST-LINK_gdbserver", "arm-none-eabi-gdb"):
        assert find_tool(tool, env, HOSTS[host]) == tools[tool]


@pytest.mark.parametrize("host", ["mac", "macarm"])
def test_cube_ide_dir_may_name_the_eclipse_folder_of_the_app(tmp_path, host):
    ide, tools = _ide(tmp_path, host)
    env = {"STM32_CUBE_IDE_DIR": str(ide / "Contents" / "Eclipse"), "PATH": ""}
    assert find_tool("ST-LINK_gdbserver", env, HOSTS[host]) == tools["ST-LINK_gdbserver"]


def _cube_programmer(tmp_path, host):
    """STM32CubeProgrammer where its installer puts it on `host`: (environ, root, its bin folder)."""
    if host == "windows":
        env = {"ProgramFiles": str(tmp_path / "Program Files"), "PATH": ""}
        bin_dir = tmp_path / "Program Files" / "STMicroelectronics" / "STM32Cube" / "STM32CubeProgrammer" / "bin"
    elif host == "linux":
        env = {"HOME": str(tmp_path / "home" / "me"), "PATH": ""}
        bin_dir = tmp_path / "home" / "me" / "STMicroelectronics" / "STM32Cube" / "STM32CubeProgrammer" / "bin"
    else:
        env = {"PATH": ""}
        bin_dir = (tmp_path / "Applications" / "STMicroelectronics" / "STM32Cube" / "STM32CubeProgrammer" /
                   "STM32CubeProgrammer.app" / "Contents" / "MacOs" / "bin")
    _exe(bin_dir / ("STM32_Programmer_CLI.exe" if host == "windows" else "STM32_Programmer_CLI"))
    _exe(bin_dir / "ExternalLoader" / LOADER)
    return env, str(tmp_path), str(bin_dir)


@pytest.mark.parametrize("host", HOSTS)
def test_cube_programmer_install_folder_of_each_host(tmp_path, host):
    env, root, bin_dir = _cube_programmer(tmp_path, host)
    found = find_cli(env, HOSTS[host], root)
    assert (found.bin_dir, found.simulated, found.found_by) == (bin_dir, False, "STM32CubeProgrammer's install folder")
    assert found.loader(LOADER) == os.path.join(bin_dir, "ExternalLoader", LOADER)
    assert find_cli(env, HOSTS["linux" if host == "windows" else "windows"], root).simulated   # not another host's


@pytest.mark.parametrize("host", HOSTS)
def test_path_finds_the_host_s_executable(tmp_path, host):
    name = "STM32_Programmer_CLI" + (".exe" if host == "windows" else "")
    path = _exe(tmp_path / "bin" / name)
    assert find_cli({"PATH": str(tmp_path / "bin")}, HOSTS[host]).cli == path
    gdb = _exe(tmp_path / "bin" / ("arm-none-eabi-gdb" + (".exe" if host == "windows" else "")))
    assert find_tool("arm-none-eabi-gdb", {"PATH": str(tmp_path / "bin")}, HOSTS[host]) == gdb


def test_the_ide_comes_before_path_and_the_install_folder(tmp_path):
    ide, tools = _ide(tmp_path, "linux")
    env, root, _ = _cube_programmer(tmp_path, "linux")
    _exe(tmp_path / "bin" / "STM32_Programmer_CLI")
    env = dict(env, STM32_CUBE_IDE_DIR=str(ide), PATH=str(tmp_path / "bin"))
    assert find_cli(env, HOSTS["linux"], root).cli == tools["STM32_Programmer_CLI"]
    del env["STM32_CUBE_IDE_DIR"]
    assert find_cli(env, HOSTS["linux"], root).found_by == "PATH"
