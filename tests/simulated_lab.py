"""A labgrid lab on this machine, for tests/test_lab.py and bench/boards.py: a local coordinator,
simulated boards serving their serial ports over RFC 2217, an exporter publishing them as
NetworkSerialPort resources and a place per board tagged with the board's state folder
(n6-sim-board), as docs/lab.md describes a lab. Its processes end with the context."""
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

from conftest import SIM_BOARD, SIM_PROGRAMMER

LABGRID = os.path.dirname(sys.executable)       # labgrid's commands, installed beside the interpreter


@dataclass(frozen=True)
class Lab:
    coordinator: str    # HOST:PORT of the local coordinator
    folder: str         # the lab's folder: the boards' states (board-<k>), the exporter's configuration
    boards: dict        # place → its simulated board's state folder


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what, ready, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"{what} stopped"
        assert time.monotonic() < deadline, f"{what} did not start within {timeout} s"
        time.sleep(0.1)


def client(coordinator, *args, check=True):
    """`labgrid-client -x coordinator args`; its output and status when `check` fails."""
    proc = subprocess.run([os.path.join(LABGRID, "labgrid-client"), "-x", coordinator, *args], capture_output=True,
                          text=True)
    assert not check or proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def acquired_by(coordinator, place):
    show = client(coordinator, "-p", place, "show").stdout
    return next(line.split(":", 1)[1].strip() for line in show.splitlines() if line.strip().startswith("acquired:"))


def sim_serial(k):
    """The probe serial of the lab's board k (from 1): the simulated programmer's, ending in 10 + k."""
    from programmer_sim.board_state import factory_serial
    return factory_serial(k + 10)


@contextlib.contextmanager
def simulated_lab(folder, places, probe_host=""):
    """A Lab in `folder` with a simulated board for each of `places`. `probe_host`: the last
    place's ST-LINK is exported too, as a NetworkUSBDebugger on that host (reached through
    tests/fixtures/lab_hosts/ssh with the environment folder/hosts.json gives it, which attaches
    the board to the simulated programmer there), tagged n6-probe and n6-programmer."""
    from programmer_sim.board_state import BoardState
    folder = str(folder)
    coordinator_port = free_port()
    coordinator = f"127.0.0.1:{coordinator_port}"
    procs = [subprocess.Popen([os.path.join(LABGRID, "labgrid-coordinator"), "-l", coordinator], cwd=folder,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        _wait("the coordinator", lambda: socket.socket().connect_ex(("127.0.0.1", coordinator_port)) == 0,
              procs[0])
        boards, ports = {}, {}
        for k, place in enumerate(places, start=1):
            state, port_file = os.path.join(folder, f"board-{k}"), os.path.join(folder, f"port-{k}")
            BoardState(state).set_probe(serial=sim_serial(k))
            procs.append(subprocess.Popen([sys.executable, "-m", "n6board", "--state", state, "--rfc2217",
                                           "127.0.0.1:0", "--port-file", port_file],
                                          env=dict(os.environ, PYTHONPATH=SIM_BOARD), stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
            _wait(f"simulated board {k}", lambda f=port_file: os.path.exists(f), procs[-1])
            with open(port_file, encoding="utf-8") as f:
                boards[place], ports[place] = state, int(f.read().strip().rpartition(":")[2])
        config = "".join(f"{place}:\n  NetworkSerialPort:\n    host: 127.0.0.1\n    port: {port}\n"
                         f"    speed: 921600\n    protocol: rfc2217\n" for place, port in ports.items())
        if probe_host:
            config += (f"  NetworkUSBDebugger:\n    host: {probe_host}\n    busnum: 1\n    devnum: 7\n"
                       f"    path: '1-3'\n    vendor_id: 0x0483\n    model_id: 0x3754\n")
            with open(os.path.join(folder, "hosts.json"), "w", encoding="utf-8") as f:
                json.dump({probe_host: {"N6_SIM_BOARD": boards[places[-1]], "N6_SIM_PYTHON": sys.executable}}, f)
        with open(os.path.join(folder, "exporter.yaml"), "w", encoding="utf-8") as f:
            f.write(config)
        procs.append(subprocess.Popen([os.path.join(LABGRID, "labgrid-exporter"), "-c", coordinator, "-n", "bench",
                                       "--hostname", "127.0.0.1", "exporter.yaml"], cwd=folder,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        resources = len(places) + bool(probe_host)
        _wait("the exporter", lambda: len(client(coordinator, "resources").stdout.split()) == resources, procs[-1])
        for place, state in boards.items():
            client(coordinator, "-p", place, "create")
            client(coordinator, "-p", place, "add-match", f"bench/{place}/*")
            client(coordinator, "-p", place, "set-tags", f"n6-sim-board={state}")
        if probe_host:
            client(coordinator, "-p", places[-1], "set-tags", f"n6-probe={sim_serial(len(places))}",
                   f"n6-programmer={os.path.join(SIM_PROGRAMMER, 'bin', 'STM32_Programmer_CLI')}")
        yield Lab(coordinator, folder, boards)
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(10)
