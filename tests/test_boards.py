"""Several boards for one build (n6.flash.boards): the boards the command line names, the model
sets dealt out over them, each board's steps in turn and the boards side by side, and a
whole-project validate on 1, 2 and 4 simulated boards giving the same summary."""
import json
import os
import threading
import time

import pytest

from conftest import copy_repo, forget_boards, scons
from n6.errors import N6Error
from n6.flash.boards import Attached, attached_boards, deal


def test_probes_and_ports_pair_in_order(tmp_path):
    sim = str(tmp_path / "sim")
    assert attached_boards("A,B", "/dev/ttyACM0,/dev/ttyACM1", 1, sim, False) == (
        Attached("A", "/dev/ttyACM0", sim), Attached("B", "/dev/ttyACM1", sim))
    assert attached_boards("A,B", "", 1, sim, False) == (Attached("A", "", sim), Attached("B", "", sim))
    assert attached_boards("", "", 1, sim, False) == (Attached("", "", sim),)
    assert attached_boards("A", "/dev/ttyACM0", 1, sim, False) == (Attached("A", "/dev/ttyACM0", sim),)
    with pytest.raises(N6Error, match="PROBE= names 2 probes but PORT= 3 ports"):
        attached_boards("A,B", "p,q,r", 1, sim, False)
    with pytest.raises(N6Error, match="does not name a probe for each"):
        attached_boards("", "p,q", 1, sim, False)
    with pytest.raises(N6Error, match="LAB_PLACES= and PROBE= / PORT= both name boards"):
        attached_boards("A", "", 1, sim, False, places="n6-1", coordinator="127.0.0.1:1")


def test_simulated_boards_have_folders_and_probes_of_their_own(tmp_path):
    from programmer_sim.board_state import DEFAULT_SERIAL, BoardState
    sim = str(tmp_path / "sim-board")
    boards = attached_boards("", "", 3, sim, True)
    assert [b.sim_board for b in boards] == [sim, sim + "-2", sim + "-3"]
    serials = [BoardState(b.sim_board).probe()["serial"] for b in boards]
    assert serials[0] == DEFAULT_SERIAL and len(set(serials)) == 3
    lab = attached_boards("", "rfc2217://h:1,rfc2217://h:2", 1, sim, True)       # simulated boards served elsewhere
    assert [(b.port, b.sim_board) for b in lab] == [("rfc2217://h:1", sim), ("rfc2217://h:2", sim + "-2")]
    with pytest.raises(N6Error, match="SIM_BOARDS=3 but PORT= names 2 ports"):
        attached_boards("", "p,q", 3, sim, True)
    with pytest.raises(N6Error, match="PROBE= names 2 probes but the programmer is the simulated one"):
        attached_boards("A,B", "", 1, sim, True)


def test_sets_are_dealt_out_in_turn():
    sets = [("a",), ("b",), ("c",), ("d",), ("e",)]
    assert deal(sets, 2) == [(("a",), 0), (("b",), 1), (("c",), 0), (("d",), 1), (("e",), 0)]
    assert deal(sets[:2], 4, start=3) == [(("a",), 3), (("b",), 0)]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = copy_repo(tmp_path_factory.mktemp("boards-repo"))
    scons(repo)
    return repo


@pytest.mark.slow
def test_whole_project_validate_on_1_2_and_4_simulated_boards_gives_one_summary(repo):
    """Every bundled model validated on one board, then spread over 2 and 4: the summary (JSON
    and table) is the same; each board holds its own models (its probe in their stamps, its
    programmer calls for them alone); nothing runs again when nothing changed."""
    summaries, tables = [], []
    for boards in (1, 2, 4):
        forget_boards(os.path.join(repo, "build"))
        proc = scons(repo, "validate", f"SIM_BOARDS={boards}", "SEED=3")
        summaries.append(json.load(open(os.path.join(repo, "build", "validate-summary.json"))))
        tables.append(proc.stdout[proc.stdout.index("validate summary"):])
        from programmer_sim.board_state import BoardState
        serials = [BoardState(os.path.join(repo, "build", "sim-board" + (f"-{k}" if k > 1 else ""))).probe()["serial"]
                   for k in range(1, boards + 1)]
        models = [r["model"] for r in summaries[-1]["models"]]
        flashed_on = [json.load(open(os.path.join(repo, "build", m, "flash", "flash.json")))["probe"] for m in models]
        assert flashed_on == [serials[i % boards] for i in range(len(models))]   # dealt out in turn, in name order
    assert summaries[0]["failed"] == 0 and len(summaries[0]["models"]) >= 10
    assert summaries[1] == summaries[0] and summaries[2] == summaries[0]
    assert tables[1] == tables[0] and tables[2] == tables[0]
    again = scons(repo, "validate", "SIM_BOARDS=4", "SEED=3")
    assert "  RUN " not in again.stdout and "  FLASH" not in again.stdout


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


@pytest.mark.slow
def test_two_boards_run_side_by_side(repo):
    """With two simulated boards and no -j, the two models' runs are on their boards at the same
    time (a board process serving each state folder at one moment), each under its own lock."""
    forget_boards(os.path.join(repo, "build"))
    build = os.path.join(repo, "build")
    both, stop = [], threading.Event()

    def watch():
        while not stop.is_set():
            pids = []
            for folder in ("sim-board", "sim-board-2"):
                try:
                    pids.append(json.load(open(os.path.join(build, folder, "board.json")))["pid"])
                except (OSError, ValueError, KeyError):
                    pass
            if len(pids) == 2 and all(_alive(p) for p in pids):
                both.append(pids)
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        scons(repo, "run", "MODEL=kws_mlp,fusion_mlp", "SIM_BOARDS=2", "RUNS=3",
              env={"N6_SIM_BOARD_FAULT": "slow:0.2"})
    finally:
        stop.set()
        watcher.join()
    assert both, "the two boards never ran at the same time"
    probes = {json.load(open(os.path.join(build, m, "flash", "on_board.json")))["probe"]
              for m in ("kws_mlp", "fusion_mlp")}
    assert len(probes) == 2


@pytest.mark.slow
def test_profile_on_two_boards_gives_the_one_board_summary(repo):
    """Three models profiled on one board, then on two: the same profile summary, the
    measurements taken on the boards the sets were dealt to."""
    build = os.path.join(repo, "build")
    models = ["digits_mlp", "fusion_mlp", "kws_mlp"]
    summaries, boards = [], []
    for n in (1, 2):
        forget_boards(build)
        scons(repo, "profile", "MODEL=" + ",".join(models), f"SIM_BOARDS={n}", "FORCE=1")
        summaries.append(json.load(open(os.path.join(build, "profile-summary.json"))))
        boards.append([json.load(open(os.path.join(build, m, "profile", "measurement.json")))["board"].split()[-1]
                       for m in models])
    assert summaries[1] == summaries[0] and summaries[0]["failed"] == 0
    assert len(set(boards[0])) == 1 and boards[1][0] == boards[1][2] != boards[1][1]
