"""Boards in a lab through labgrid (n6.flash.lab): a local labgrid coordinator, an exporter
publishing two simulated boards' serial ports (served over RFC 2217 by the boards themselves), two
places; a whole-project validate through the places gives the one-board summary, holds the places
while it runs and releases them at its end; a place someone else holds is one line."""
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import SIM_BOARD, copy_repo, forget_boards, scons

pytestmark = pytest.mark.slow

LABGRID = os.path.dirname(sys.executable)       # labgrid's commands, installed beside the interpreter
PLACES = ("n6-lab-1", "n6-lab-2")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what, ready, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"{what} stopped"
        assert time.monotonic() < deadline, f"{what} did not start within {timeout} s"
        time.sleep(0.1)


def _client(coordinator, *args, check=True):
    proc = subprocess.run([os.path.join(LABGRID, "labgrid-client"), "-x", coordinator, *args], capture_output=True,
                          text=True)
    assert not check or proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _acquired_by(coordinator, place):
    show = _client(coordinator, "-p", place, "show").stdout
    return next(line.split(":", 1)[1].strip() for line in show.splitlines() if line.strip().startswith("acquired:"))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """(repo, coordinator address): two simulated boards exported as labgrid resources, a place
    for each (tag n6-sim-board: the board's state folder)."""
    from programmer_sim.board_state import DEFAULT_SERIAL, BoardState
    repo = copy_repo(tmp_path_factory.mktemp("lab-repo"))
    scons(repo)
    lab = tmp_path_factory.mktemp("lab")
    coordinator = f"127.0.0.1:{_free_port()}"
    procs = [subprocess.Popen([os.path.join(LABGRID, "labgrid-coordinator"), "-l", coordinator], cwd=lab,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        _wait("the coordinator", lambda: socket.socket().connect_ex(("127.0.0.1", int(coordinator[10:]))) == 0,
              procs[0])
        exported = {}
        for k, place in enumerate(PLACES, start=1):
            state, port_file = lab / f"board-{k}", lab / f"port-{k}"
            BoardState(str(state)).set_probe(serial=DEFAULT_SERIAL[:-4] + f"{k + 10:04d}")
            procs.append(subprocess.Popen([sys.executable, "-m", "n6board", "--state", str(state), "--rfc2217",
                                           "127.0.0.1:0", "--port-file", str(port_file)],
                                          env=dict(os.environ, PYTHONPATH=SIM_BOARD), stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
            _wait(f"simulated board {k}", port_file.exists, procs[-1])
            exported[place] = (state, int(port_file.read_text().strip().rpartition(":")[2]))
        config = lab / "exporter.yaml"
        config.write_text("".join(f"{place}:\n  NetworkSerialPort:\n    host: 127.0.0.1\n    port: {port}\n"
                                  f"    speed: 921600\n    protocol: rfc2217\n"
                                  for place, (_, port) in exported.items()))
        procs.append(subprocess.Popen([os.path.join(LABGRID, "labgrid-exporter"), "-c", coordinator, "-n", "bench",
                                       "--hostname", "127.0.0.1", str(config)], cwd=lab, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        _wait("the exporter", lambda: len(_client(coordinator, "resources").stdout.split()) == len(PLACES), procs[-1])
        for place, (state, _) in exported.items():
            _client(coordinator, "-p", place, "create")
            _client(coordinator, "-p", place, "add-match", f"bench/{place}/*")
            _client(coordinator, "-p", place, "set-tags", f"n6-sim-board={state}")
        yield repo, coordinator
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(10)


def test_whole_project_validate_through_labgrid_places_gives_the_one_board_summary(lab):
    repo, coordinator = lab
    summary_json = os.path.join(repo, "build", "validate-summary.json")
    local = scons(repo, "validate", "SEED=3")
    one_board = json.load(open(summary_json))
    forget_boards(os.path.join(repo, "build"))
    args = ("validate", f"LAB_PLACES={','.join(PLACES)}", f"LAB_COORDINATOR={coordinator}", "FLASH_RESET=hard",
            "SEED=3")
    proc = scons(repo, *args, timeout=1800)
    assert json.load(open(summary_json)) == one_board and one_board["failed"] == 0
    assert proc.stdout[proc.stdout.index("validate summary"):] == local.stdout[local.stdout.index("validate summary"):]
    for m in ("big_mlp", "cifar_cnn"):        # the first two sets: one on each place's board
        run = json.load(open(os.path.join(repo, "build", m, "run", "run.json")))
        assert run["simulated"]
    from programmer_sim.board_state import DEFAULT_SERIAL
    probes = {m: json.load(open(os.path.join(repo, "build", m, "flash", "flash.json")))["probe"]
              for m in ("big_mlp", "cifar_cnn")}
    assert probes == {"big_mlp": DEFAULT_SERIAL[:-4] + "0011", "cifar_cnn": DEFAULT_SERIAL[:-4] + "0012"}  # the places'
    assert [_acquired_by(coordinator, p) for p in PLACES] == ["None", "None"]      # released at the end

    _client(coordinator, "-p", PLACES[1], "acquire")          # someone else holds a place: one line, nothing run
    try:
        forget_boards(os.path.join(repo, "build"))
        refused = scons(repo, *args, check=False)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert f"labgrid place {PLACES[1]}: acquire failed" in refused.stderr
        assert "  RUN " not in refused.stdout
        assert _acquired_by(coordinator, PLACES[0]) == "None"     # the place it had taken is released
    finally:
        _client(coordinator, "-p", PLACES[1], "release")
