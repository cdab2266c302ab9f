"""The programmer's reset (-rst / -hardRst) restarts the firmware of a simulated board process
serving the board's state, as a real board restarts; `scons run` whose connect gets no answer
resets the board once through the programmer, says so in one line, and runs."""
import os
import subprocess
import sys
import time

import pytest

from conftest import SIM_BOARD, copy_repo, scons

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = copy_repo(tmp_path_factory.mktemp("reset-repo"))
    scons(root, "flash", "MODEL=kws_mlp")
    return root


def serving_board(repo, tmp_path, *extra):
    """A board process on the repo's simulated board state, as a user starts one: (process, pty)."""
    port_file = tmp_path / "port"
    proc = subprocess.Popen([sys.executable, "-m", "n6board", "--state", os.path.join(repo, "build", "sim-board"),
                             "--port-file", str(port_file), *extra], env=dict(os.environ, PYTHONPATH=SIM_BOARD),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not port_file.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() else "timeout"
        time.sleep(0.05)
    return proc, port_file.read_text().strip()


def stray_bytes(port, data=b"\x07\x01\x02"):
    fd = os.open(port, os.O_RDWR | os.O_NOCTTY)
    os.write(fd, data)
    os.close(fd)


def reset_lines(proc):
    return [line for line in proc.stdout.splitlines() if line.startswith("  RESET")]


def test_stray_bytes_then_scons_run_resets_the_board_once_and_runs(repo, tmp_path):
    board, port = serving_board(repo, tmp_path)
    try:
        clean = scons(repo, "run", "MODEL=kws_mlp", f"PORT={port}", "SEED=1")
        assert reset_lines(clean) == []                              # a board that answers is not reset
        stray_bytes(port)                                            # the board's link is now out of step
        proc = scons(repo, "run", "MODEL=kws_mlp", f"PORT={port}", "SEED=2")
        assert reset_lines(proc) == [f"  RESET    {port}: no answer to the connect (no answer to SYNC within 0.5 s): "
                                     "reset through the programmer"]
        assert "inferences / s" in proc.stdout
        state = os.path.join(repo, "build", "sim-board")
        with open(os.path.join(state, "reset")) as f:
            assert f.read().split() == ["1", "hardware"]
    finally:
        board.terminate()
        board.wait(10)


REAL = os.environ.get("N6_REAL_STEDGEAI", "")
ST_CLIENT = os.path.join(REAL, "st_ai_runner.sh")
ST_FIRMWARE = os.path.join(REAL, "2.2", "scripts", "N6_reloc", "test", "stm32n6570-dk-validation-reloc-copy.elf")
ST_INVOKES_FOREVER = """
import sys
import numpy as np
from stm_ai_runner import AiRunner
runner = AiRunner()
assert runner.connect(f"serial:{sys.argv[1]}:921600"), runner.get_error()
shape = runner.get_info()["inputs"][0]["shape"]
x = np.zeros((1,) + tuple(shape[1:]), dtype=np.int8)
print("connected", flush=True)
while True:
    runner.invoke(x, mode=AiRunner.Mode.PER_LAYER_WITH_DATA)
"""


@pytest.mark.skipif(not (REAL and os.path.isfile(ST_FIRMWARE) and os.path.isfile(ST_CLIENT)),
                    reason="no ST validation firmware and client (set N6_REAL_STEDGEAI to a test bed folder)")
def test_st_client_killed_mid_invoke_then_scons_run_resets_the_twin_once_and_runs(repo, tmp_path):
    """ST's firmware on the twin never finds its way back after a client dies mid-transfer or stray
    bytes reach it (as on a real board): `scons run` resets it through the programmer once and runs."""
    board, port = serving_board(repo, tmp_path, "--firmware", ST_FIRMWARE, "--mode", "COPY")
    try:
        (tmp_path / "invokes.py").write_text(ST_INVOKES_FOREVER)
        client = subprocess.Popen([ST_CLIENT, str(tmp_path / "invokes.py"), port], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, cwd=tmp_path)
        assert client.stdout.readline().strip() == "connected"
        time.sleep(2.0)
        client.kill()
        client.wait()
        stray_bytes(port)                                            # (wherever the kill left it) out of step
        proc = scons(repo, "run", "MODEL=kws_mlp", f"PORT={port}", "SEED=3")
        lines = reset_lines(proc)
        assert len(lines) == 1 and lines[0].startswith(f"  RESET    {port}: no answer to the connect"), proc.stdout
        assert "inferences / s" in proc.stdout
    finally:
        board.terminate()
        board.wait(10)
