"""Several boards for one build: which boards the command line names (PROBE= and PORT= as comma
lists, SIM_BOARDS= simulated boards, LAB_PLACES= labgrid places) or else the board file's [boards]
table, and which board each model set of a whole-project run,
validate or profile goes to. The sets are dealt out in turn (set i on board i mod n), a placement
fixed when the build is declared: each board's steps run one after the other as on a single
board, the boards side by side under SCons's -j (one job per board), and a model keeps its board
from one build to the next while the list of boards is the same, so an unchanged project runs
nothing again."""
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import N6Error

if TYPE_CHECKING:                 # the steps' options, of modules that import this one
    from ..run.options import ProfileOptions, RunOptions, ValidateOptions
    from .step import FlashOptions


@dataclass(frozen=True)
class Attached:
    """One board the build may use."""
    probe: str        # its ST-LINK's serial ("": the only probe attached, or the simulated board's own)
    port: str         # its serial port ("": the board file's; the simulated board's pty)
    sim_board: str    # the simulated board's state folder (a simulated flash)
    sim_probe: str = ""     # a simulated board of several: its probe serial (its folder is made at run time)
    exporter: "ExporterProbe | None" = None     # its probe is on a labgrid exporter's host, not this one


@dataclass(frozen=True)
class ExporterProbe:
    """A board's ST-LINK plugged into a labgrid exporter's host: ST's tools for it run there
    (n6.flash.remote), the programmer to flash it, ST-LINK_gdbserver to start its firmware."""
    place: str          # the labgrid place that names it
    host: str
    programmer: str     # STM32_Programmer_CLI's path there (the place's tag n6-programmer)
    gdbserver: str      # ST-LINK_gdbserver's path there (tag n6-gdbserver; "": not named)

    @property
    def found_by(self) -> str:
        """How the programmer there was found, as flash reports say it."""
        return f"labgrid place {self.place}, on {self.host}"


@dataclass(frozen=True)
class LabPlace:
    """A labgrid place whose board the build uses: acquired, and its board (an Attached) known,
    when the first step needs it (on_place_board), so that reading the build asks nothing of the
    coordinator. A step's signature names the place, not its board."""
    name: str
    coordinator: str    # HOST:PORT


@dataclass(frozen=True)
class BoardList:
    """The boards a build may use, as one of two places names them: the command line (PROBE=,
    PORT=, SIM_BOARDS=, LAB_PLACES=, LAB_COORDINATOR=) or a board file's [boards] table (`origin`)."""
    probes: tuple = ()          # ST-LINK serials, a board each
    ports: tuple = ()           # serial ports, in the order of the probes (or of the simulated boards)
    simulated: int = 1          # simulated boards (a simulated flash)
    places: tuple = ()          # labgrid places
    coordinator: str = ""       # their coordinator (HOST:PORT)
    origin: str = ""            # the board file that names them; "" the command line

    KEYS = {"probes": "PROBE", "ports": "PORT", "simulated": "SIM_BOARDS", "places": "LAB_PLACES",
            "coordinator": "LAB_COORDINATOR"}

    def name(self, key: str) -> str:
        """How the user wrote `key`: `PROBE=` on the command line, `[boards] probes` in a file."""
        return f"[boards] {key}" if self.origin else f"{self.KEYS[key]}="

    def fail(self, problem: str, fix: str) -> N6Error:
        return N6Error(self.origin or None, problem, fix)

    @classmethod
    def from_variables(cls, variables: Mapping[str, Any]) -> "BoardList":
        """The command line's list (`variables`: the build's values of the KEYS variables)."""
        return cls(tuple(split_list(variables["PROBE"])), tuple(split_list(variables["PORT"])),
                   int(variables["SIM_BOARDS"]), tuple(split_list(variables["LAB_PLACES"])),
                   variables["LAB_COORDINATOR"])


def chosen_list(variables: Mapping[str, Any], given: Collection[str], in_file: BoardList | None) -> BoardList:
    """The boards of a build: the command line's when it names any board (`given`: the variables
    it sets), else the board file's [boards] (`in_file`), else the one board attached; the
    coordinator LAB_COORDINATOR= gives (or its environment default when the file names none)."""
    command_line = BoardList.from_variables(variables)
    if in_file is None or set(given) & {"PROBE", "PORT", "SIM_BOARDS", "LAB_PLACES"}:
        return command_line
    if "LAB_COORDINATOR" in given or not in_file.coordinator:
        return replace(in_file, coordinator=command_line.coordinator)
    return in_file


def build_boards(variables: Mapping[str, Any], given: Collection[str], board_file: str, sim_dir: str,
                 simulated: bool) -> tuple[Attached | LabPlace, ...]:
    """The boards of one build run: the chosen list (chosen_list, the board file's [boards] read
    from `board_file`), attached as the build is read (attached_boards)."""
    from ..board import load_board
    return attached_boards(chosen_list(variables, given, load_board(board_file).boards), sim_dir, simulated)


def split_list(value: str) -> list[str]:
    """`a,b` → ["a", "b"]; "" → []."""
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def attached_boards(boards: BoardList, sim_dir: str, simulated: bool) -> tuple[Attached | LabPlace, ...]:
    """The boards of a build, in order, as the build is read (nothing acquired, nothing made).
    Places: the labgrid places (LabPlace), acquired when a step first needs one. A real flash:
    one board per probe, paired in order with the ports (none: each board file's port). A
    simulated flash: `boards.simulated` boards, the first in `sim_dir`, the others beside it
    (`<sim_dir>-2`, ...); simulated boards served elsewhere are places."""
    probes, ports, name = boards.probes, boards.ports, boards.name
    if boards.places:
        if probes or ports:
            raise boards.fail(f"{name('places')} and {name('probes')} / {name('ports')} both name boards",
                              f"leave {name('probes')} and {name('ports')} empty: each place names its board's "
                              "probe and port")
        from .lab import declare
        declare(boards.places, boards.coordinator, simulated)
        return tuple(LabPlace(p, boards.coordinator) for p in boards.places)
    if len(probes) > 1 and ports and len(ports) != len(probes):
        raise boards.fail(f"{name('probes')} names {len(probes)} probes but {name('ports')} {len(ports)} ports",
                          "give one port per probe, in the same order")
    if simulated:
        count = boards.simulated
        for key, given in (("probes", probes), ("ports", ports)):
            if len(given) > 1:
                raise boards.fail(f"{name(key)} names {len(given)} {key} but the programmer is the simulated one",
                                  f"give {name('simulated')}<n> for several simulated boards here, {name('places')} "
                                  "for simulated boards served elsewhere (docs/lab.md), or flash with a real "
                                  "programmer")
        if count > 1 and (probes or ports):
            raise boards.fail(f"{name('simulated')}{count} but {name('probes' if probes else 'ports')} names one "
                              "board", f"leave {name('probes')} and {name('ports')} empty: each simulated board of "
                              "several has a probe and a port of its own")
        return tuple(Attached(probes[0] if probes else "", ports[0] if ports else "", folder, sim_probe=serial)
                     for folder, serial in simulated_boards(sim_dir, count))
    if len(ports) > 1 and len(probes) != len(ports):
        raise boards.fail(f"{name('ports')} names {len(ports)} ports but {name('probes')} does not name a probe for "
                          "each", f"name each board's ST-LINK with {name('probes')} in the order of the ports")
    count = max(len(probes), len(ports), 1)
    return tuple(Attached(probes[i] if probes else "", ports[i] if ports else "", sim_dir) for i in range(count))


def simulated_boards(sim_dir: str, count: int) -> list[tuple[str, str]]:
    """(state folder, probe serial) of `count` simulated boards, each with a probe serial of its
    own (the first keeps the simulated programmer's; board k's ends in k; a folder's probe.json
    says otherwise), read, not made: the flash step makes a missing one (make_simulated_board)."""
    if count == 1:
        return [(sim_dir, "")]
    from ..simulators import load, probe_serial
    folders = [load("programmer_sim.board_state").board_folder(sim_dir, k) for k in range(1, count + 1)]
    return [(folder, probe_serial(folder)) for folder in folders]


def flash_fields(unit: Attached | LabPlace, simulated: bool,
                 attached_probes: Callable[[bool, str], Sequence[str]]) -> dict:
    """What the FlashOptions of a model set take from its board `unit`: its probe (else the
    probes attached, `attached_probes(simulated, sim_board)`) and its simulated board; of a
    labgrid place, the place (on_place_board puts its board's in at run time)."""
    if isinstance(unit, LabPlace):
        return dict(place=unit)
    probes = (unit.probe or unit.sim_probe,) if unit.probe or unit.sim_probe else \
        attached_probes(simulated, unit.sim_board)
    return dict(probes=probes, probe=unit.probe or None, sim_board=unit.sim_board, sim_probe=unit.sim_probe)


# the options of a step that talks to a board (on_place_board)
StepOptions = TypeVar("StepOptions", "FlashOptions", "RunOptions", "ValidateOptions", "ProfileOptions")


def on_place_board(opts: "StepOptions") -> "tuple[StepOptions, FlashOptions]":
    """A step's options `opts` (FlashOptions, or options with `flash` and `session`) at run time,
    and their FlashOptions: when they name a labgrid place, with its board's probe, serial port,
    simulated board and, a probe on the exporter's host, ST's tools there. The one place where a
    place becomes its board (n6.flash.lab acquires every place of the build when the first step
    needs one)."""
    from .step import FlashOptions, attached_probes
    flash = opts if isinstance(opts, FlashOptions) else opts.flash
    if flash.place is None:
        return opts, flash
    from .lab import place_board
    board = place_board(flash.place)
    fields = flash_fields(board, flash.simulated, attached_probes)
    exporter = board.exporter
    if exporter:
        fields.update(backend="stm32cubeprogrammer", simulated=False, exporter=exporter)
    flash = replace(flash, **fields)
    if isinstance(opts, FlashOptions):
        return replace(opts, **fields), flash
    return replace(opts, flash=flash, session=replace(opts.session, port=board.port, state=board.sim_board,
                                                      exporter=exporter)), flash


def make_simulated_board(folder: str, serial: str) -> None:
    """At run time, before the programmer reaches it: a simulated board named by SIM_BOARDS=
    gets its folder and its probe serial, unless it has them."""
    if not os.path.exists(os.path.join(folder, "probe.json")):
        from ..simulators import load
        load("programmer_sim.board_state").BoardState(folder).set_probe(serial=serial)


def deal(sets: list, boards: int, start: int = 0) -> list[tuple[tuple, int]]:
    """(model set, board index) of each set: dealt out in turn, from board `start % boards`."""
    return [(models, (start + i) % boards) for i, models in enumerate(sets)]
