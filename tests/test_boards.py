"""Several boards for one build (n6.flash.boards): the boards the command line names, the model
sets dealt out over them, each board's steps in turn and the boards side by side, and a
whole-project validate on 1, 2 and 4 simulated boards giving the same summary."""
import json
import os
import re
import threading
import time

import pytest

from conftest import copy_repo, forget_boards, scons
from n6.errors import N6Error
from n6.board import load_board
from n6.board_files import DEFAULT_BOARD, board_path
from n6.flash.boards import Attached, BoardList, attached_boards, chosen_list, deal, make_simulated_board


def _line(probe="", port="", sim_boards=1, places=""):
    """The boards the command line names."""
    return BoardList.from_variables({"PROBE": probe, "PORT": port, "SIM_BOARDS": sim_boards, "LAB_PLACES": places,
                                     "LAB_COORDINATOR": "127.0.0.1:1"})


def test_probes_and_ports_pair_in_order(tmp_path):
    sim = str(tmp_path / "sim")
    assert attached_boards(_line("A,B", "/dev/ttyACM0,/dev/ttyACM1"), sim, False) == (
        Attached("A", "/dev/ttyACM0", sim), Attached("B", "/dev/ttyACM1", sim))
    assert attached_boards(_line("A,B"), sim, False) == (Attached("A", "", sim), Attached("B", "", sim))
    assert attached_boards(_line(), sim, False) == (Attached("", "", sim),)
    assert attached_boards(_line("A", "/dev/ttyACM0"), sim, False) == (Attached("A", "/dev/ttyACM0", sim),)
    with pytest.raises(N6Error, match="PROBE= names 2 probes but PORT= 3 ports"):
        attached_boards(_line("A,B", "p,q,r"), sim, False)
    with pytest.raises(N6Error, match="does not name a probe for each"):
        attached_boards(_line("", "p,q"), sim, False)
    with pytest.raises(N6Error, match="LAB_PLACES= and PROBE= / PORT= both name boards"):
        attached_boards(_line("A", places="n6-1"), sim, False)


def test_a_fresh_board_folder_of_a_bench_keeps_its_own_serial_when_its_boot_is_set(tmp_path):
    """The programmer may set a fresh folder's boot mode before the flash step gave it its probe
    file: board 2's folder then keeps board 2's serial, not board 1's."""
    from programmer_sim.board_state import BoardState, factory_serial
    sim = str(tmp_path / "sim-board")
    folders = [b.sim_board for b in attached_boards(_line(sim_boards=2), sim, True)]
    for folder in folders:
        BoardState(folder).set_probe(boot="flash")
    assert [BoardState(f).probe() for f in folders] == [{"serial": factory_serial(k), "boot": "flash"} for k in (1, 2)]
    assert [b.sim_probe for b in attached_boards(_line(sim_boards=2), sim, True)] == [factory_serial(1),
                                                                                     factory_serial(2)]


def test_simulated_boards_have_folders_and_probes_of_their_own_made_when_flashed(tmp_path):
    from n6.simulators import probe_serial
    from programmer_sim.board_state import DEFAULT_SERIAL, BoardState, factory_serial
    sim = str(tmp_path / "sim-board")
    boards = attached_boards(_line(sim_boards=3), sim, True)
    assert [b.sim_board for b in boards] == [sim, sim + "-2", sim + "-3"]
    assert not os.listdir(tmp_path)            # named when the build is read, made by the step that flashes
    serials = [b.sim_probe for b in boards]
    assert serials[0] == DEFAULT_SERIAL and len(set(serials)) == 3
    for b in boards:
        make_simulated_board(b.sim_board, b.sim_probe)
    assert [BoardState(b.sim_board).probe()["serial"] for b in boards] == serials
    BoardState(sim + "-2").set_probe(serial="0042000000000000000000AB")      # a folder's own probe wins
    assert attached_boards(_line(sim_boards=3), sim, True)[1].sim_probe == "0042000000000000000000AB"
    fresh = str(tmp_path / "fresh")    # no probe file: a bench's board k has its factory serial, a lone board board 1's
    assert [probe_serial(f) for f in (fresh, fresh + "-3")] == [DEFAULT_SERIAL, factory_serial(3)]
    served = attached_boards(_line("", "rfc2217://h:1"), sim, True)        # one simulated board served on a port
    assert [(b.port, b.sim_board) for b in served] == [("rfc2217://h:1", sim)]
    with pytest.raises(N6Error) as e:          # several served elsewhere: labgrid places, not PORT=
        attached_boards(_line("", "rfc2217://h:1,rfc2217://h:2"), sim, True)
    assert (e.value.problem, e.value.fix) == (
        "PORT= names 2 ports but the programmer is the simulated one",
        "give SIM_BOARDS=<n> for several simulated boards here, LAB_PLACES= for simulated boards served elsewhere "
        "(docs/lab.md), or flash with a real programmer")
    with pytest.raises(N6Error, match="SIM_BOARDS=3 but PORT= names one board"):
        attached_boards(_line("", "p", 3), sim, True)
    with pytest.raises(N6Error, match="SIM_BOARDS=2 but PROBE= names one board"):
        attached_boards(_line("A", sim_boards=2), sim, True)
    with pytest.raises(N6Error, match="PROBE= names 2 probes but the programmer is the simulated one"):
        attached_boards(_line("A,B"), sim, True)


def _board_file(tmp_path, boards):
    """The bundled DK's board file with a [boards] table."""
    path = tmp_path / "dk.toml"
    path.write_text(open(board_path(DEFAULT_BOARD)).read() + "\n[boards]\n" + boards)
    return str(path)


def test_a_board_file_names_its_boards_as_the_command_line_does(tmp_path):
    board = load_board(_board_file(tmp_path, 'probes = ["A", "B"]\nports = ["/dev/ttyACM0", "/dev/ttyACM1"]\n'))
    sim = str(tmp_path / "sim")
    variables = {"PROBE": "", "PORT": "", "SIM_BOARDS": 1, "LAB_PLACES": "", "LAB_COORDINATOR": "127.0.0.1:20408"}
    from_file = attached_boards(chosen_list(variables, {}, board.boards), sim, False)
    assert from_file == attached_boards(_line("A,B", "/dev/ttyACM0,/dev/ttyACM1"), sim, False)
    line = chosen_list(dict(variables, PROBE="C"), {"PROBE": "C"}, board.boards)    # the command line's list wins
    assert attached_boards(line, sim, False) == (Attached("C", "", sim),)
    four = load_board(_board_file(tmp_path, "simulated = 4\n")).boards
    assert attached_boards(chosen_list(variables, {}, four), sim, True) == \
        attached_boards(_line(sim_boards=4), sim, True)
    places = load_board(_board_file(tmp_path, 'places = ["n6-dk-1"]\ncoordinator = "lab:20408"\n')).boards
    assert chosen_list(variables, {}, places).coordinator == "lab:20408"
    assert chosen_list(dict(variables, LAB_COORDINATOR="x:1"), {"LAB_COORDINATOR": "x:1"}, places).coordinator == "x:1"
    path = _board_file(tmp_path, 'probes = ["A", "B"]\nports = ["p"]\n')         # its mistakes name the file
    with pytest.raises(N6Error) as e:
        attached_boards(chosen_list(variables, {}, load_board(path).boards), sim, False)
    assert str(e.value) == f"{path}: [boards] probes names 2 probes but [boards] ports 1 ports (fix: give one port " \
                           "per probe, in the same order)"
    for text, problem in (('probes = "A"\n', "key boards.probes: 'A' is not list"),
                          ("simulated = 0\n", "key boards.simulated: 0 must be positive"),
                          ('place = ["x"]\n', "key boards.place: unknown key")):
        with pytest.raises(N6Error, match=re.escape(problem)):
            load_board(_board_file(tmp_path, text))


def test_sets_are_dealt_out_in_turn():
    sets = [("a",), ("b",), ("c",), ("d",), ("e",)]
    assert deal(sets, 2) == [(("a",), 0), (("b",), 1), (("c",), 0), (("d",), 1), (("e",), 0)]
    assert deal(sets[:2], 4, start=3) == [(("a",), 3), (("b",), 0)]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = copy_repo(tmp_path_factory.mktemp("boards-repo"))
    scons(repo)
    return repo


def test_a_flash_leaves_alone_a_stamp_another_boards_step_removed_meanwhile(tmp_path, monkeypatch):
    """A flash removes the stamps of the models whose bytes it overwrote on its board; the steps of
    other boards, side by side, remove theirs too: one gone between the listing and the read is
    not this flash's business (it was removed again, and the step failed on the missing file)."""
    import glob
    import types
    from n6.build_layout import ModelLayout
    from n6.flash import step
    build = str(tmp_path)
    stamps = {}
    for model, probe in (("a", "P1"), ("b", "P2"), ("gone", "P2")):
        stamps[model] = ModelLayout(build, model).on_board
        os.makedirs(os.path.dirname(stamps[model]))
        with open(stamps[model], "w") as f:
            json.dump({"probe": probe, "images": [{"address": "0x71000000", "size": 4096}]}, f)

    real_glob = glob.glob

    def listed_then_removed(pattern):          # board P2's flash removes its stamp meanwhile
        found = real_glob(pattern)
        os.unlink(stamps["gone"])
        return found

    monkeypatch.setattr(step.glob, "glob", listed_then_removed)
    image = types.SimpleNamespace(address=0x71000000, data=bytes(100))
    step.invalidate_other_stamps(build, set(), types.SimpleNamespace(serial="P1", images=[types.SimpleNamespace(
        image=image)]))
    assert [m for m, path in stamps.items() if os.path.exists(path)] == ["b"]   # P1's overwritten one went


@pytest.mark.slow
def test_whole_project_validate_on_1_2_and_4_simulated_boards_gives_one_summary(repo):
    """Every bundled model validated on one board, then spread over 2 and 4: the summary (JSON
    and table) is the same; each board holds its own models (its probe in their stamps, its
    programmer calls for them alone); nothing runs again when nothing changed."""
    summaries, tables = [], []
    forget_boards(os.path.join(repo, "build"))
    for option, status in (("-n", 0), ("-q", 1), ("-h", 0)):      # reading the build makes no board folder
        assert scons(repo, option, "validate", "SIM_BOARDS=4", check=False).returncode == status, option
        assert not [f for f in os.listdir(os.path.join(repo, "build")) if f.startswith("sim-board")]
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
        # each board's last model is still on it: another board's flash does not remove its stamp
        assert [os.path.exists(os.path.join(repo, "build", m, "flash", "on_board.json")) for m in models[-boards:]] \
            == [True] * boards
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
def test_a_board_file_that_names_two_simulated_boards_spreads_the_models(repo, tmp_path):
    """`[boards] simulated = 2` in the board file: two models go to two simulated boards, as with
    SIM_BOARDS=2; SIM_BOARDS=1 on the command line puts both on one board."""
    build = os.path.join(repo, "build")
    board = _board_file(tmp_path, "simulated = 2\n")
    for given, boards in (((), 2), (("SIM_BOARDS=1",), 1)):
        forget_boards(build)
        scons(repo, "validate", "MODEL=digits_mlp,kws_mlp", f"BOARD={board}", *given)
        probes = {json.load(open(os.path.join(build, m, "flash", "flash.json")))["probe"]
                  for m in ("digits_mlp", "kws_mlp")}
        assert len(probes) == boards


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
