"""A connection to the board for `scons run` / `validate`: a real board's port (its validation
firmware started first), or the simulated board started on a pty (and stopped afterwards) when
no port is given. A board that does not answer the connect (its firmware lost track of the
protocol: a client killed mid-transfer, stray bytes) is reset once through the programmer, as
the RESET button would, and asked again; the step says so in one line."""
import contextlib
import functools
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import IO

from ..aivalidation import BoardError, Client, Timeouts
from ..aivalidation.client import Device
from ..board import Board
from ..jsonfile import JsonObject
from ..errors import N6Error
from ..paths import SIM_BOARD
from ..serial_link import BAUDRATE, DEFAULT_HEADER
from .options import SessionOptions

# The simulated board emulates the image's code, far slower than a board in host time (ST's
# firmware on the DK twin: about a minute per BlazeFace inference, seconds to send a 32 KB output).
SIMULATED_TIMEOUTS = Timeouts(run_ack=120.0, operator=900.0, tensor=120.0)


@contextlib.contextmanager
def simulated_board(board_file: str, state: str | None = None, image: str | None = None, params: str | None = None,
                    release: str = "2.2", start_timeout: float = 30.0, firmware: str = "",
                    mode: str | None = None) -> Iterator[str]:
    """Start the simulated board process; yields its pty path; terminates it on exit. `firmware`:
    empty for the board's own, else ST's validation firmware on the DK twin (n6board --firmware),
    installing in `mode`."""
    with tempfile.TemporaryDirectory(prefix="n6board-") as tmp:
        port_file = os.path.join(tmp, "port")
        argv = [sys.executable, "-m", "n6board", "--board", board_file, "--release", release, "--port-file", port_file]
        argv += ["--image", image] + (["--params", params] if params else []) if image else ["--state", state]  # type: ignore[list-item]  # a state without an image
        argv += ["--firmware", firmware] + (["--mode", mode] if firmware and mode else [])
        env = dict(os.environ, PYTHONPATH=SIM_BOARD)
        log = open(os.path.join(tmp, "log"), "w+")
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + start_timeout
            while not os.path.exists(port_file):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise BoardError(board_file,
                                     f"the simulated board did not start: {_last_line(log) or 'no output'}",
                                     "check the image (./n6 check) and the board state")
                time.sleep(0.02)
            with open(port_file) as f:
                port = f.read().strip()
            try:
                yield port
            except BoardError:
                try:
                    status = proc.wait(2)              # non-zero: the board process stopped on its own
                except subprocess.TimeoutExpired:
                    status = 0
                if status == 0:
                    raise
                raise _board_stopped(board_file, proc.pid, status, _last_line(log)) from None
        finally:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


def _last_line(log: IO[str]) -> str | None:
    log.seek(0)
    return (log.read().strip().splitlines() or [None])[-1]   # type: ignore[list-item]  # None: an empty log


def _board_stopped(board_file: str, pid: int, status: int, last_line: str | None) -> BoardError:
    """The error of a simulated board process that ended during a step: killed by a signal (by
    someone else: its own faults are lines it prints), or exited after saying why."""
    if status < 0:
        return BoardError(f"simulated board (pid {pid})", f"killed by {signal.Signals(-status).name} during the "
                          "step; nothing of this step was stored", "run the step again")
    if last_line is None:
        return BoardError(f"simulated board (pid {pid})", f"exited with status {status} without a word",
                          "run the step again")
    return BoardError(board_file, f"the simulated board stopped: {last_line}",
                      "see the simulated board's line: what the firmware waited for or where it faulted")


@contextlib.contextmanager
def connect(port: str, baudrate: int = BAUDRATE, header: str = DEFAULT_HEADER, timeouts: Timeouts | None = None,
            reset: Callable[[], object] | None = None,
            say: Callable[[str], object] = print) -> Iterator[tuple[Client, Device]]:
    """Open the port and run the connect sequence; yields (client, device). When the board does
    not answer it and `reset` is given: `reset()` once, then the sequence again."""
    client = Client.open(port, baudrate, header, timeouts or Timeouts())
    try:
        try:
            device = client.connect()
        except BoardError as e:
            if reset is None:
                raise
            client.close()
            say(f"  RESET    {port}: no answer to the connect ({e.problem}): reset through the programmer")
            reset()
            client = Client.open(port, baudrate, header, timeouts or Timeouts())
            device = client.connect()
        yield client, device
    finally:
        client.close()


@contextlib.contextmanager
def board_session(opts: SessionOptions, on_board_path: str,
                  say: Callable[[str], object] = print) -> Iterator[tuple[Client, Device, bool]]:
    """(client, device, simulated) for the board a flash step put the model on (its
    `on_board.json`): PORT= or the board file's port (a real board: ST's validation firmware is
    started first), else the simulated board booting from the simulated flash."""
    from ..board import load_board
    from ..jsonfile import read_json
    on_board = read_json(on_board_path, "deploy stamp")
    board = load_board(opts.board_file)
    port = opts.port or board.validation.port
    log_path = os.path.join(os.path.dirname(on_board_path), "firmware_start.log")
    reset: Callable[[], object] | None
    if on_board.get("simulated"):      # no state here: the simulated board of a lab machine, not reset from here
        reset = functools.partial(reset_simulated_board, opts.state, board, log_path) if opts.state else None
    else:
        reset = functools.partial(start_validation_firmware, opts, on_board, board, say, log_path)
        if port:
            reset()
    if port:
        timeouts = SIMULATED_TIMEOUTS if on_board.get("simulated") else None
        with connect(port, board.validation.baudrate, board.validation.header, timeouts, reset, say) as \
                (client, device):
            _check_identity(on_board, on_board_path, device, port)
            yield client, device, bool(on_board.get("simulated"))     # a simulated board served on a port (a lab's)
    elif on_board.get("simulated"):
        with simulated_board(opts.board_file, state=opts.state, release=opts.release, firmware=opts.sim_firmware,
                             mode="COPY" if opts.copy_mode else "XIP") as sim_port:
            with connect(sim_port, board.validation.baudrate, board.validation.header,
                         SIMULATED_TIMEOUTS) as (client, device):
                _check_identity(on_board, on_board_path, device, f"the simulated board {opts.state}")
                yield client, device, True
    else:
        raise N6Error(on_board_path, "the model is on a real board but no serial port is known",
                      "give PORT=/dev/ttyACM0 (or the board file's [validation] port)")


def _check_identity(on_board: JsonObject, on_board_path: str, device: Device, board: str) -> None:
    """The board runs what the stamp says was flashed (identity.check_board_model); if not, the
    stamp goes (the next run flashes the model again) and the step stops before any output."""
    from .identity import check_board_model
    try:
        check_board_model(on_board, device.models, board)
    except N6Error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(on_board_path)
        raise


def reset_simulated_board(state: str, board: Board, log_path: str) -> None:
    """The simulated programmer's hardware reset of the simulated board (-hardRst): the board
    process serving `state` starts its firmware again (the call returns once it has)."""
    from ..flash.cubeprogrammer import CliInstall, connect_args
    install = CliInstall.simulated_cli("the simulated board's reset")
    argv = [install.cli] + connect_args("hotplug", board.programmer.frequency, board.programmer.access_port) + \
        ["-hardRst"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=install.environ(dict(os.environ,
                                                                                         N6_SIM_BOARD=state)))
    with open(log_path, "a") as f:
        f.write("$ " + " ".join(argv) + "\n" + proc.stdout + proc.stderr)
    if proc.returncode:
        lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("Error")]
        raise N6Error(state, f"the simulated programmer's reset failed: {(lines or ['no output'])[-1]}",
                      "see " + log_path)


def start_validation_firmware(opts: SessionOptions, on_board: JsonObject, board: Board,
                              say: Callable[[str], object] = print, log_path: str | None = None) -> None:
    """Load ST's validation firmware (the variant that loads the flashed image, as the flash gate
    checked it) into the board's SRAM and start it: through the programmer's tools (their output
    in `log_path`) or pyOCD."""
    from ..flash import validation_firmware
    from ..flash.cubeprogrammer import find_cli
    from ..reloc.image import Image
    from . import firmware_start
    network = next(i for i in on_board["images"] if i["role"] == "network")
    img = Image.load(network["path"])
    variant = validation_firmware.variant_for(opts.release, img, board, opts.copy_mode, network["path"])
    elf = validation_firmware.firmware_path(opts.install_root, variant)
    say(f"  START    {os.path.basename(elf)}")
    if opts.backend == "pyocd":
        firmware_start.start_pyocd(elf, board.programmer.pyocd_target, board.programmer.frequency,
                                   on_board.get("probe"))
    else:
        if log_path and os.path.exists(log_path):
            os.unlink(log_path)
        exporter = opts.exporter
        firmware_start.start(elf, os.path.dirname(exporter.programmer) if exporter else find_cli().bin_dir,
                             board.programmer.frequency, board.programmer.access_port, on_board.get("probe"),
                             log_path=log_path, exporter=exporter)
