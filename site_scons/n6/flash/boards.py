"""Several boards for one build: which boards the command line names (PROBE= and PORT= as comma
lists, or SIM_BOARDS= simulated boards), and which board each model set of a whole-project run,
validate or profile goes to. The sets are dealt out in turn (set i on board i mod n), a placement
fixed when the build is declared: each board's steps run one after the other as on a single
board, the boards side by side under SCons's -j (one job per board), and a model keeps its board
from one build to the next while the list of boards is the same, so an unchanged project runs
nothing again."""
import os
from dataclasses import dataclass

from ..errors import N6Error


@dataclass(frozen=True)
class Attached:
    """One board the build may use."""
    probe: str        # its ST-LINK's serial ("": the only probe attached, or the simulated board's own)
    port: str         # its serial port ("": the board file's; the simulated board's pty)
    sim_board: str    # the simulated board's state folder (a simulated flash)
    programmer: str = ""    # STM32_Programmer_CLI on the host the probe is plugged into, when not this one
    host: str = ""          # that host (a labgrid exporter's: n6.flash.remote)
    place: str = ""         # the labgrid place of the board


def split_list(value: str) -> list[str]:
    """`a,b` → ["a", "b"]; "" → []."""
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def attached_boards(probe: str, port: str, sim_boards: int, sim_dir: str, simulated: bool, places: str = "",
                    coordinator: str = "") -> tuple[Attached, ...]:
    """The boards of a build, in order. LAB_PLACES= `places`: the labgrid places' boards
    (n6.flash.lab, acquired on `coordinator`). A real flash: one board per PROBE= serial, paired
    in order with PORT='s ports (none: each board file's port). A simulated flash: SIM_BOARDS=
    boards, the first in `sim_dir`, the others beside it (`<sim_dir>-2`, ...), or one per PORT=
    port when it names several (simulated boards served elsewhere)."""
    probes, ports = split_list(probe), split_list(port)
    if places:
        if probes or ports:
            raise N6Error(None, "LAB_PLACES= and PROBE= / PORT= both name boards",
                          "leave PROBE= and PORT= empty: each place names its board's probe and port")
        from .lab import place_boards
        return place_boards(split_list(places), coordinator, simulated)
    if len(probes) > 1 and ports and len(ports) != len(probes):
        raise N6Error(None, f"PROBE= names {len(probes)} probes but PORT= {len(ports)} ports",
                      "give one port per probe, in the same order")
    if simulated:
        if len(probes) > 1:
            raise N6Error(None, f"PROBE= names {len(probes)} probes but the programmer is the simulated one",
                          "give SIM_BOARDS=<n> for several simulated boards, or flash with a real programmer")
        if len(ports) > 1 and sim_boards > 1 and len(ports) != sim_boards:
            raise N6Error(None, f"SIM_BOARDS={sim_boards} but PORT= names {len(ports)} ports",
                          "give one port per simulated board, or leave PORT= empty")
        count = len(ports) if len(ports) > 1 else sim_boards
        folders = simulated_boards(sim_dir, count)
        return tuple(Attached(probes[0] if len(probes) == 1 and count == 1 else "",
                              ports[i] if len(ports) == count else "", folders[i]) for i in range(count))
    if len(ports) > 1 and len(probes) != len(ports):
        raise N6Error(None, f"PORT= names {len(ports)} ports but PROBE= does not name a probe for each",
                      "name each board's ST-LINK with PROBE=<serial>,<serial> in the order of the ports")
    count = max(len(probes), len(ports), 1)
    return tuple(Attached(probes[i] if probes else "", ports[i] if ports else "", sim_dir) for i in range(count))


def simulated_boards(sim_dir: str, count: int) -> list[str]:
    """The state folders of `count` simulated boards, each with a probe serial of its own (the
    first keeps the simulated programmer's; board k's ends in k), made when missing."""
    folders = [sim_dir] + [f"{sim_dir}-{k}" for k in range(2, count + 1)]
    if count > 1:
        from ..simulators import load
        board_state = load("programmer_sim.board_state")
        for k, folder in enumerate(folders[1:], start=2):
            if not os.path.exists(os.path.join(folder, "probe.json")):
                os.makedirs(folder, exist_ok=True)
                board_state.BoardState(folder).set_probe(serial=board_state.DEFAULT_SERIAL[:-4] + f"{k:04d}")
    return folders


def deal(sets: list, boards: int, start: int = 0) -> list[tuple[tuple, int]]:
    """(model set, board index) of each set: dealt out in turn, from board `start % boards`."""
    return [(models, (start + i) % boards) for i, models in enumerate(sets)]
