"""Boards in a lab, reached through labgrid (docs/lab.md): LAB_PLACES= names labgrid places; the
build acquires each place from the coordinator (so no one else uses its board), takes the board's
serial port from the place's NetworkSerialPort resource (RFC 2217, `rfc2217://host:port`) and
its probe from the place's tags, and releases the places when the build ends, whatever happened.

labgrid has no resource class for an ST-LINK that carries its serial number, so a place names
its board's probe in a tag: `n6-probe=<ST-LINK serial>` (a real board whose ST-LINK this machine
reaches), or `n6-sim-board=<folder>` (a simulated board: the state folder its simulated programmer
writes). A place whose ST-LINK is exported (a USBDebugger on the exporter, NetworkUSBDebugger
here) is flashed on the exporter's host (n6.flash.remote): `n6-probe` names its serial and
`n6-programmer` STM32_Programmer_CLI's path there. labgrid is imported only when a build names
places."""
import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from ..errors import N6Error
from .boards import Attached, ExporterProbe, LabPlace

if TYPE_CHECKING:                 # labgrid is imported when a build names places
    from labgrid.remote.client import ClientSession
    from labgrid.remote.common import Place, ResourceEntry

PROBE_TAG, SIM_BOARD_TAG, PROGRAMMER_TAG = "n6-probe", "n6-sim-board", "n6-programmer"
GDBSERVER_TAG = "n6-gdbserver"     # ST-LINK_gdbserver on the exporter's host: starts a real board's firmware
PROBE_RESOURCE = "NetworkUSBDebugger"     # an ST-LINK on the exporter's host: labgrid's USBDebugger, exported
FIX = "see docs/lab.md: the place must exist on LAB_COORDINATOR's coordinator, be free and match its board's resources"


_DECLARED: dict[str, tuple[tuple[str, ...], bool]]
_ACQUIRED: dict[str, dict[str, Attached] | N6Error]
_DECLARED = {}            # coordinator → (the places the build names there, whether the flash is simulated)
_ACQUIRED = {}            # coordinator → {place: its board}, or the error acquiring them gave (at run time)
_LOCK = threading.Lock()  # the steps of several boards ask side by side (-j)


def declare(places: Iterable[str], coordinator: str, simulated: bool) -> None:
    """The build names `places` on `coordinator`: nothing is asked of labgrid until a step needs
    one of them (place_board), so that reading the build (`scons -n`, `-c`, `-h`, `-q`) acquires none."""
    known = _DECLARED.get(coordinator, ((), simulated))[0]
    _DECLARED[coordinator] = (known + tuple(p for p in places if p not in known), simulated)


def place_board(place: LabPlace) -> Attached:
    """The board of `place`, at run time: the first call acquires every place the build declared
    on its coordinator (one held elsewhere stops the build before anything is flashed)."""
    coordinator = place.coordinator
    with _LOCK:
        if coordinator not in _ACQUIRED:
            places, simulated = _DECLARED[coordinator]
            try:
                _ACQUIRED[coordinator] = dict(zip(places, place_boards(list(places), coordinator, simulated)))
            except N6Error as e:
                _ACQUIRED[coordinator] = e
        acquired = _ACQUIRED[coordinator]
        if isinstance(acquired, N6Error):
            raise acquired
        return acquired[place.name]


def place_boards(places: list[str], coordinator: str, simulated: bool) -> tuple[Attached, ...]:
    """Acquire `places` on `coordinator` (HOST:PORT) and return their boards, in order; the places
    are released at exit (one that failed to be acquired, and those after it, were not taken)."""
    acquired: list[str] = []
    atexit.register(release, coordinator, acquired)
    with _session(coordinator) as session:
        for place in places:
            _ask(session, "AcquirePlace", place)
            acquired.append(place)
        session.loop.run_until_complete(session.sync_with_coordinator())
        return tuple(_acquired_board(session, place, simulated) for place in places)


def _acquired_board(session: "ClientSession", name: str, simulated: bool) -> Attached:
    """The board of the acquired place `name`; what labgrid raises then (the place not acquired by
    this host and user, an orphaned resource of an exporter gone) is one line naming the place."""
    from labgrid.remote.client import Error
    try:
        return _board(session, name, simulated)
    except Error as e:
        raise N6Error(None, f"labgrid place {name}: {str(e).removeprefix('Error: ')}",
                      f"check the place with labgrid-client -p {name} show: its exporter running, its "
                      "resources matched (docs/lab.md)") from None


def _board(session: "ClientSession", name: str, simulated: bool) -> Attached:
    place = session.get_place(name)
    resources = session.get_target_resources(place).items()
    ports = [r.params for (_, cls), r in resources if cls == "NetworkSerialPort"]
    probes = [r for (_, cls), r in resources if cls == PROBE_RESOURCE]
    if len(ports) != 1:
        raise N6Error(None, f"labgrid place {name} has {len(ports)} NetworkSerialPort resources, not one", FIX)
    if ports[0].get("protocol", "rfc2217") != "rfc2217":
        raise N6Error(None, f"labgrid place {name}: its serial port speaks {ports[0]['protocol']}, not rfc2217",
                      "export the board's serial port with RFC 2217 (ser2net's telnet rfc2217, or labgrid's exporter)")
    port = f"rfc2217://{ports[0]['host']}:{ports[0]['port']}"
    if probes:
        return _exported_probe(name, place, probes, port)
    tag = SIM_BOARD_TAG if simulated else PROBE_TAG
    if tag not in place.tags:
        raise N6Error(None, f"labgrid place {name} has no tag {tag} (the {'simulated board' if simulated else 'probe'} "
                      f"of its board)", f"labgrid-client -p {name} set-tags {tag}=...")
    if simulated:
        return Attached("", port, os.path.abspath(place.tags[tag]))
    return Attached(place.tags[tag], port, "")


def _exported_probe(name: str, place: "Place", probes: Sequence["ResourceEntry"], port: str) -> Attached:
    """The board of a place whose ST-LINK is exported (a NetworkUSBDebugger): flashed by the
    programmer on the exporter's host (n6.flash.remote), its firmware started by ST-LINK_gdbserver
    there (n6-gdbserver, when the board runs ST's), the probe's serial from the tag n6-probe."""
    if len(probes) != 1:
        raise N6Error(None, f"labgrid place {name} has {len(probes)} {PROBE_RESOURCE} resources, not one", FIX)
    for tag, what in ((PROBE_TAG, "the serial number of its ST-LINK"),
                      (PROGRAMMER_TAG, "STM32_Programmer_CLI's path on the exporter's host")):
        if not place.tags.get(tag):
            raise N6Error(None, f"labgrid place {name} exports its probe but has no tag {tag} ({what})",
                          f"labgrid-client -p {name} set-tags {tag}=...")
    if not place.tags[PROGRAMMER_TAG].startswith("/"):
        raise N6Error(None, f"labgrid place {name}: tag {PROGRAMMER_TAG}={place.tags[PROGRAMMER_TAG]} is not an "
                      "absolute path", "name the programmer by its path on the exporter's host (its external "
                      "loaders are beside it)")
    extra = probes[0].extra or {}
    host = extra["proxy"] if extra.get("proxy_required") else probes[0].args["host"]
    return Attached(place.tags[PROBE_TAG], port, "", exporter=ExporterProbe(name, host, place.tags[PROGRAMMER_TAG],
                                                                            place.tags.get(GDBSERVER_TAG, "")))


def release(coordinator: str, places: list[str]) -> None:
    """Release the places this build acquired (at exit)."""
    if not places:
        return
    try:
        with _session(coordinator) as session:
            for place in places:
                try:
                    _ask(session, "ReleasePlace", place)
                except N6Error as e:
                    print(f"  WARNING  {e}", file=sys.stderr)
    except N6Error as e:
        print(f"  WARNING  {e}", file=sys.stderr)


@contextlib.contextmanager
def _session(coordinator: str) -> "Iterator[ClientSession]":
    """A labgrid client session with `coordinator`, for the whole acquisition (or release): one
    connection, where a labgrid-client call per place would start a process each."""
    from labgrid.remote.client import start_session
    try:
        session = start_session(coordinator)
    except Exception as e:     # labgrid raises what gRPC gives: one line, not its traceback
        raise N6Error(None, f"LAB_COORDINATOR={coordinator}: {e}", FIX) from None
    try:
        yield session
    finally:
        session.loop.run_until_complete(session.stop())
        session.loop.run_until_complete(session.close())


def _ask(session: "ClientSession", request: str, place: str) -> None:
    """The coordinator's `request` (AcquirePlace, ReleasePlace) for `place`, as labgrid-client's
    acquire and release send it; its refusal (a place held by someone else, or missing) is one line."""
    import grpc  # type: ignore[import-untyped]  # labgrid's gRPC (no stubs installed here)
    from labgrid.remote.generated import labgrid_coordinator_pb2
    message = getattr(labgrid_coordinator_pb2, f"{request}Request")(placename=place)
    try:
        session.loop.run_until_complete(getattr(session.stub, request)(message))
    except grpc.aio.AioRpcError as e:
        verb = request.removesuffix("Place").lower()
        raise N6Error(None, f"labgrid place {place}: {verb} failed: {e.details()}", FIX) from None
