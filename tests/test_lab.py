"""Boards in a lab through labgrid (n6.flash.lab): a local labgrid coordinator, an exporter
publishing two simulated boards' serial ports (served over RFC 2217 by the boards themselves), two
places; a whole-project validate through the places gives the one-board summary, holds the places
while it runs and releases them at its end; a place someone else holds is one line."""
import json
import os
import re
import shlex
import types

import pytest

from conftest import ROOT, SIM_PROGRAMMER, copy_repo, forget_boards, scons
from simulated_lab import acquired_by, client, simulated_lab

pytestmark = pytest.mark.slow

PLACES = ("n6-lab-1", "n6-lab-2")
EXPORTED = "n6-lab-3"          # its board's ST-LINK is exported too: flashed on the exporter's host
LAB_MACHINE = "lab-machine-3"  # that host, reached through tests/fixtures/lab_hosts/ssh
HOSTS = os.path.join(ROOT, "tests", "fixtures", "lab_hosts")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """(repo, coordinator address, lab folder): three simulated boards exported as labgrid
    resources, a place for each: the first two tagged n6-sim-board (the board's state folder, this
    machine flashes it), the third with its ST-LINK exported (a NetworkUSBDebugger on
    LAB_MACHINE, whose environment attaches the board to the simulated programmer there)."""
    repo = copy_repo(tmp_path_factory.mktemp("lab-repo"))
    scons(repo)
    folder = tmp_path_factory.mktemp("lab")
    with simulated_lab(folder, PLACES + (EXPORTED,), probe_host=LAB_MACHINE) as lab:
        yield repo, lab.coordinator, folder


def test_whole_project_validate_through_labgrid_places_gives_the_one_board_summary(lab):
    repo, coordinator, _ = lab
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
    from programmer_sim.board_state import factory_serial
    probes = {m: json.load(open(os.path.join(repo, "build", m, "flash", "flash.json")))["probe"]
              for m in ("big_mlp", "cifar_cnn")}
    assert probes == {"big_mlp": factory_serial(11), "cifar_cnn": factory_serial(12)}  # the places'
    assert [acquired_by(coordinator, p) for p in PLACES] == ["None", "None"]      # released at the end

    client(coordinator, "-p", PLACES[1], "acquire")          # someone else holds a place: one line, nothing run
    try:
        forget_boards(os.path.join(repo, "build"))
        for option, status in (("-n", 0), ("-q", 1), ("-h", 0), ("-c", 0)):   # reading the build acquires none
            read = scons(repo, option, *(args if option != "-c" else ("flash-big_mlp",) + args[1:]), check=False)
            assert (read.returncode, read.stderr) == (status, ""), option
            assert acquired_by(coordinator, PLACES[0]) == "None"
        refused = scons(repo, *args, check=False)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert f"labgrid place {PLACES[1]}: acquire failed" in refused.stderr
        assert "  RUN " not in refused.stdout
        assert acquired_by(coordinator, PLACES[0]) == "None"     # the place it had taken is released
    finally:
        client(coordinator, "-p", PLACES[1], "release")


def test_a_probe_exported_by_the_lab_machine_is_flashed_by_the_programmer_there(lab):
    """The place's ST-LINK is a NetworkUSBDebugger on LAB_MACHINE: the programmer runs there
    (through labgrid's SSH prefix), with the images it writes put there and what it reads back
    fetched; the board, served over RFC 2217, then runs the model it was given."""
    from programmer_sim.board_state import BoardState, factory_serial
    repo, coordinator, folder = lab
    log = folder / "hosts.log"
    ssh = {"PATH": HOSTS + os.pathsep + os.environ["PATH"], "N6_TEST_HOSTS": str(folder / "hosts.json"),
           "N6_TEST_HOSTS_LOG": str(log)}
    place = (f"LAB_PLACES={EXPORTED}", f"LAB_COORDINATOR={coordinator}")
    forget_boards(os.path.join(repo, "build"))
    proc = scons(repo, "validate-kws_mlp", *place, "FLASH_RESET=hard", env=ssh, timeout=900)
    assert re.search(r"^  FLASH    build/kws_mlp/\S+ \S+ 0x71000000: .*  SIMULATED$", proc.stdout, re.M), proc.stdout
    flash = json.load(open(os.path.join(repo, "build", "kws_mlp", "flash", "flash.json")))
    serial = factory_serial(13)
    assert flash["probe"] == serial and flash["simulated"]        # the programmer there said it is simulated
    assert flash["found_by"] == f"labgrid place {EXPORTED}, on {LAB_MACHINE}"
    assert acquired_by(coordinator, EXPORTED) == "None"
    record = json.load(open(os.path.join(repo, "build", "kws_mlp", "flash", "on_board.json")))

    scons(repo, "flash-cifar_cnn", *place, env=ssh)              # over kws_mlp: read back first, then write
    cli = os.path.join(SIM_PROGRAMMER, "bin", "STM32_Programmer_CLI")
    connect = [cli, "-c", "port=SWD", "mode=hotplug", "freq=2000", "ap=1", f"sn={serial}", "-el",
               os.path.join(SIM_PROGRAMMER, "bin", "ExternalLoader", "MX66UW1G45G_STM32N6570-DK.stldr")]
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert {c["host"] for c in calls} == {LAB_MACHINE}
    first, second = [shlex.split(c["command"]) for c in calls if c["command"].startswith(cli)]
    assert first == connect + ["-d", first[10], "0x71000000", "-v", "-hardRst"]
    assert re.fullmatch(r".*/n6-flash-[^/]+/71000000\.bin", first[10])   # the sector file, as this machine names it
    from n6.flash.deploy import readback_ranges
    kws = open(os.path.join(repo, record["images"][0]["path"]), "rb").read()
    ranges = readback_ranges(types.SimpleNamespace(address=0x71000000, role="network"), kws)
    folder_there = os.path.dirname(second[len(connect) + 3])
    assert len(ranges) == 2 and second == connect + [
        arg for i, (a, n) in enumerate(ranges) for arg in ("-u", f"0x{a:08X}", str(n), f"{folder_there}/{i}-{i}.bin")
    ] + ["-d", second[-3], "0x71000000", "-v"]
    assert not os.path.exists(folder_there)         # made there for the call (mktemp -d), removed after
    image = json.load(open(os.path.join(repo, "build", "cifar_cnn", "flash", "on_board.json")))["images"][0]
    data = open(os.path.join(repo, image["path"]), "rb").read()
    assert BoardState(str(folder / "board-3")).read(int(image["address"], 16), len(data)) == data
