"""One board, however many build folders use it: a lock per board (the simulated board's state
folder, a real board's probe serial) held by every step that flashes or runs, and the record of
the image set n6 last put on the board. A build's own deploy stamps only say what that build
flashed; another build may have flashed since, and the record says so."""
import contextlib
import errno
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from ..atomic import write_text
from ..errors import N6Error
from ..outputs import FileLock

if TYPE_CHECKING:                 # the flash step takes the board through this module
    from .step import FlashOptions


def board_key(opts: "FlashOptions") -> tuple[str, str]:
    """(folder, name) of the board's lock and record files for FlashOptions `opts`: the simulated
    board's state folder; a real board's probe serial (PROBE=, else the one probe attached), else
    one name for whatever board is attached, in the system's temporary folder."""
    if opts.simulated:
        return opts.sim_board, ".n6-board"
    serial = opts.probe or (opts.probes[0] if len(opts.probes) == 1 else "attached")
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in serial)
    return tempfile.gettempdir(), f"n6-board-{safe}"


@contextlib.contextmanager
def board_lock(opts: "FlashOptions", say: Callable[[str], object] = print) -> Iterator[None]:
    """Hold the board for one step: a second build (another folder, another process) waits."""
    folder, name = board_key(opts)
    lock = FileLock(os.path.join(folder, name + ".lock"),
                    "another build is using the board (pid {pid}); waiting for it to finish")
    try:
        os.makedirs(folder, exist_ok=True)
        lock.acquire(say)
    except OSError as e:
        fix = "a part of that path is a file: name a folder" if e.errno in (errno.ENOTDIR, errno.EEXIST) else \
            "make that folder writable"
        raise N6Error(folder, f"cannot write the board's lock there: {e.strerror}",
                      fix + (" (N6_SIM_BOARD names the simulated board's)" if opts.simulated else "")) from None
    try:
        yield
    finally:
        lock.release()


def _held_path(opts: "FlashOptions") -> str:
    folder, name = board_key(opts)
    return os.path.join(folder, name + ".holds.json")


def record_held(opts: "FlashOptions", images: Iterable[tuple[int, str]]) -> None:
    """After a verified flash: the board holds `images` ((address, sha256) pairs)."""
    write_text(_held_path(opts), json.dumps(sorted([f"0x{a:08X}", h] for a, h in images), indent=0) + "\n")


def forget_held(opts: "FlashOptions") -> None:
    """The board's content is unknown (a flash that failed, a board found holding another model)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_held_path(opts))


def board_holds(opts: "FlashOptions", images: Iterable[tuple[int, str]]) -> bool:
    """Whether the last flash n6 recorded for this board wrote exactly `images`."""
    try:
        with open(_held_path(opts), encoding="utf-8") as f:
            held = json.load(f)
    except (OSError, ValueError):
        return False
    return held == sorted([f"0x{a:08X}", h] for a, h in images)
