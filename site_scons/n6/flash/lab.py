"""Boards in a lab, reached through labgrid (docs/lab.md): LAB_PLACES= names labgrid places; the
build acquires each place from the coordinator (so no one else uses its board), takes the board's
serial port from the place's NetworkSerialPort resource (RFC 2217, `rfc2217://host:port`) and
its probe from the place's tags, and releases the places when the build ends, whatever happened.

labgrid has no resource class for an ST-LINK that carries its serial number, so a place names
its board's probe in a tag: `n6-probe=<ST-LINK serial>` (a real board whose ST-LINK this machine
reaches), or `n6-sim-board=<folder>` (a simulated board: the state folder its simulated programmer
writes). labgrid is imported only when a build names places."""
import atexit
import os
import subprocess
import sys
from typing import TYPE_CHECKING

from ..errors import N6Error
from .boards import Attached

if TYPE_CHECKING:                 # labgrid is imported when a build names places
    from labgrid.remote.client import ClientSession

PROBE_TAG, SIM_BOARD_TAG = "n6-probe", "n6-sim-board"
FIX = "see docs/lab.md: the place must exist on LAB_COORDINATOR's coordinator, be free and match its board's resources"


def place_boards(places: list[str], coordinator: str, simulated: bool) -> tuple[Attached, ...]:
    """Acquire `places` on `coordinator` (HOST:PORT) and return their boards, in order; the places
    are released at exit (one that failed to be acquired, and those after it, were not taken)."""
    acquired: list[str] = []
    atexit.register(release, coordinator, acquired)
    for place in places:
        _client(coordinator, place, "acquire")
        acquired.append(place)
    from labgrid.remote.client import start_session
    try:
        session = start_session(coordinator)
    except Exception as e:     # labgrid raises what gRPC gives: one line, not its traceback
        raise N6Error(None, f"LAB_COORDINATOR={coordinator}: {e}", FIX) from None
    try:
        return tuple(_board(session, place, simulated) for place in places)
    finally:
        session.loop.run_until_complete(session.stop())


def _board(session: "ClientSession", name: str, simulated: bool) -> Attached:
    place = session.get_place(name)
    ports = [r.params for (_, cls), r in session.get_target_resources(place).items() if cls == "NetworkSerialPort"]
    if len(ports) != 1:
        raise N6Error(None, f"labgrid place {name} has {len(ports)} NetworkSerialPort resources, not one", FIX)
    if ports[0].get("protocol", "rfc2217") != "rfc2217":
        raise N6Error(None, f"labgrid place {name}: its serial port speaks {ports[0]['protocol']}, not rfc2217",
                      "export the board's serial port with RFC 2217 (ser2net's telnet rfc2217, or labgrid's exporter)")
    port = f"rfc2217://{ports[0]['host']}:{ports[0]['port']}"
    tag = SIM_BOARD_TAG if simulated else PROBE_TAG
    if tag not in place.tags:
        raise N6Error(None, f"labgrid place {name} has no tag {tag} (the {'simulated board' if simulated else 'probe'} "
                      f"of its board)", f"labgrid-client -p {name} set-tags {tag}=...")
    if simulated:
        return Attached("", port, os.path.abspath(place.tags[tag]))
    return Attached(place.tags[tag], port, "")


def release(coordinator: str, places: list[str]) -> None:
    """Release the places this build acquired (at exit)."""
    for place in places:
        try:
            _client(coordinator, place, "release")
        except N6Error as e:
            print(f"  WARNING  {e}", file=sys.stderr)


def _client(coordinator: str, place: str, command: str) -> None:
    """`labgrid-client -x coordinator -p place command`, one line on failure."""
    proc = subprocess.run([sys.executable, "-m", "labgrid.remote.client", "-x", coordinator, "-p", place, command],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode:
        last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["no output"])[-1]
        raise N6Error(None, f"labgrid place {place}: {command} failed: {last}", FIX)
