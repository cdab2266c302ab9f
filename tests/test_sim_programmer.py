"""The simulated STM32_Programmer_CLI as a command: the options n6 uses, with the real tool's
spelling, output markers and exit codes, on the board state of N6_SIM_BOARD."""
import os
import subprocess
import sys

import pytest

from n6.paths import SIM_PROGRAMMER_BIN as SIM_BIN
from programmer_sim.board_state import BoardState

CLI = os.path.join(SIM_BIN, "STM32_Programmer_CLI")
LDR = os.path.join(SIM_BIN, "ExternalLoader", "MX66UW1G45G_STM32N6570-DK.stldr")
CONNECT = ["-c", "port=SWD", "mode=HOTPLUG", "freq=2000", "ap=1"]


def cli(tmp_path, *args, fail=""):
    env = dict(os.environ, N6_SIM_BOARD=str(tmp_path / "board"), N6_SIM_PYTHON=sys.executable,
               N6_SIM_PROGRAMMER_FAIL=fail)
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=60)


def test_version_and_list(tmp_path):
    p = cli(tmp_path, "--version")
    assert p.returncode == 0 and p.stdout.startswith("STM32CubeProgrammer version: 2.21.0")
    p = cli(tmp_path, "--list", "st-link")
    assert "ST-LINK SN  : 004200000000000000000001" in p.stdout


@pytest.mark.parametrize("args, rc, line", [
    (["--version"], 0, "STM32CubeProgrammer version: 2.21.0 (SIMULATED)"),
    (["-version"], 0, "STM32CubeProgrammer version: 2.21.0 (SIMULATED)"),
    (["--help"], 0, "Usage :"),
    (["--list", "st-link"], 0, "Error: No ST-Link detected!"),                    # no board: no probe
    ([*CONNECT], 1, "Error: No debug probe detected."),
])
def test_without_any_environment_only_the_board_is_missing(args, rc, line):
    """As ST's tool with no board connected: the version (what ST's script checks for a
    programmer), help and list answer; only a connect fails."""
    p = subprocess.run([CLI, *args], capture_output=True, text=True, env={"PATH": os.environ["PATH"]}, timeout=60)
    assert p.returncode == rc and line in p.stdout.splitlines(), p.stdout + p.stderr


def test_long_and_short_options_download_verify_erase_reset(tmp_path):
    img = tmp_path / "a.bin"
    img.write_bytes(bytes(range(256)) * 300)           # 76800 bytes: two sectors
    p = cli(tmp_path, *CONNECT, "--extload", LDR, "--download", str(img), "0x71000000", "--verify", "-hardRst")
    assert p.returncode == 0, p.stdout
    for marker in ("Erasing external memory sectors [256 257]", "File download complete",
                   "Download verified successfully", "Hardware reset is performed"):
        assert marker in p.stdout
    st = BoardState(tmp_path / "board")
    assert st.read(0x71000000, 76800) == img.read_bytes()
    p = cli(tmp_path, *CONNECT, "-el", LDR, "-e", "[257]", "-rst")
    assert p.returncode == 0 and "MCU Reset" in p.stdout
    assert st.sectors() == [0x71000000]
    assert [e["op"] for e in st.events() if e["op"] != "call"] == ["erase", "program", "erase", "program", "reset",
                                                                   "erase", "reset"]
    assert st.resets() == 2 and [e["kind"] for e in st.events("reset")] == ["hardware", "software"]


@pytest.mark.parametrize("args, message", [
    (["--frobnicate"], "Error: Unknown option: --frobnicate"),
    (["-d", "x.bin", "0x71000000"], "Error: Target not connected"),
    ([*CONNECT, "-d", "a.bin", "0x71000000"], "use -el with the external loader"),
    ([*CONNECT, "-el", LDR, "-e", "all"], "Error: Mass erase operation failed. Please verify flash protection"),
    (["-c", "port=SWD", "mode=hotplug", "ap=0"], "Error: Cannot connect to access port 0!"),
    ([*CONNECT, "sn=NOPE"], "Error: No ST-LINK with serial number NOPE detected."),
])
def test_errors_are_the_real_tools(tmp_path, args, message):
    (tmp_path / "a.bin").write_bytes(b"x")
    p = subprocess.run([CLI, *args], capture_output=True, text=True, cwd=tmp_path, timeout=60,
                       env=dict(os.environ, N6_SIM_BOARD=str(tmp_path / "board"), N6_SIM_PYTHON=sys.executable))
    assert p.returncode == 1 and message in p.stdout


def test_unknown_failure_switch_is_refused(tmp_path):
    p = cli(tmp_path, "--version", fail="gremlins")
    assert p.returncode == 1 and "unknown failure gremlins" in p.stdout


def test_a_reset_asked_for_while_the_board_boots_is_awaited_until_it_booted_again(tmp_path, monkeypatch):
    """The board takes the reset count before it boots and reports that one once it serves: a
    reset the programmer asks for meanwhile is still awaited (the board sees it and boots again),
    a dead board process is nothing to wait for."""
    import programmer_sim.board_state as board_state
    monkeypatch.setattr(board_state, "_board_process", lambda pid: pid == os.getpid())   # this test is the board
    state = BoardState(str(tmp_path))
    done, watch = state.watch_resets()
    assert done == 0 and not watch()
    count = state.request_reset("hardware")                 # during the board's boot
    state.board_served(done)                                # ... which then says it serves reset 0
    assert watch() and count == 1
    with pytest.raises(TimeoutError):
        state.wait_for_board(count, timeout=0.1)
    done, watch = state.watch_resets()                      # it boots again for reset 1
    state.board_served(done)
    assert state.wait_for_board(count, timeout=0.1) is True and not watch()
    (tmp_path / "board.json").write_text('{"pid": 999999999, "resets": 0}\n')
    assert state.wait_for_board(2, timeout=0.1) is False
