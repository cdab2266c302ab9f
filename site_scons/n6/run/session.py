"""A connection to the board for `scons run` / `validate`: a real board's port, or the simulated
board started on a pty (and stopped afterwards) when no port is given."""
import contextlib
import os
import subprocess
import sys
import tempfile
import time

from ..aivalidation import BoardError, Client, Timeouts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SIM_BOARD = os.path.join(ROOT, "sim", "board")


@contextlib.contextmanager
def simulated_board(board_file, state=None, image=None, params=None, release="2.2", start_timeout=30.0,
                    firmware="", mode=None):
    """Start the simulated board process; yields its pty path; terminates it on exit. `firmware`:
    empty for the board's own, else ST's validation firmware on the DK twin (n6board --firmware),
    installing in `mode`."""
    with tempfile.TemporaryDirectory(prefix="n6board-") as tmp:
        port_file = os.path.join(tmp, "port")
        argv = [sys.executable, "-m", "n6board", "--board", board_file, "--release", release, "--port-file", port_file]
        argv += ["--image", image] + (["--params", params] if params else []) if image else ["--state", state]
        argv += ["--firmware", firmware] + (["--mode", mode] if firmware and mode else [])
        env = dict(os.environ, PYTHONPATH=SIM_BOARD)
        log = open(os.path.join(tmp, "log"), "w+")
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + start_timeout
            while not os.path.exists(port_file):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise BoardError(board_file, f"the simulated board did not start: {_last_line(log)}",
                                     "check the image (./n6 check) and the board state")
                time.sleep(0.02)
            with open(port_file) as f:
                port = f.read().strip()
            try:
                yield port
            except BoardError:
                try:
                    failed = proc.wait(2) != 0        # the board process stopped with an error of its own
                except subprocess.TimeoutExpired:
                    failed = False
                if not failed:
                    raise
                raise BoardError(board_file, f"the simulated board stopped: {_last_line(log)}",
                                 "see the simulated board's line: what the firmware waited for or where it "
                                 "faulted") from None
        finally:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


def _last_line(log):
    log.seek(0)
    return (log.read().strip().splitlines() or ["no output"])[-1]


@contextlib.contextmanager
def connect(port, baudrate=921600, header="2byte", timeouts=None):
    """Open the port and run the connect sequence; yields (client, device)."""
    client = Client.open(port, baudrate, header, timeouts or Timeouts())
    try:
        yield client, client.connect()
    finally:
        client.close()
