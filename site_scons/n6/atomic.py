"""Write-then-rename, so an interrupted step never leaves a file a later build trusts."""
import contextlib
import glob
import os
from collections.abc import Iterator
from typing import IO

from .paths import StrPath

# A file is written as <path>.tmp<pid> first; Linux's pids reach 4194304 (pid_max 2^22).
TEMPORARY_SUFFIX = ".tmp"
LONGEST_SUFFIX = len(f"{TEMPORARY_SUFFIX}4194304")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # someone else's process
        return True
    return True


def _writer_pid(name: StrPath) -> int | None:
    """The pid of the process writing the temporary `name`, else None (not a temporary)."""
    _, sep, pid = str(name).rpartition(TEMPORARY_SUFFIX)
    return int(pid) if sep and pid.isdigit() else None


def intended_path(name: StrPath) -> str:
    """The file a write-then-rename temporary is for; any other name as it is."""
    return str(name).rpartition(TEMPORARY_SUFFIX)[0] if _writer_pid(name) is not None else str(name)


@contextlib.contextmanager
def atomic_open(path: StrPath, mode: str = "wb", unlink_first: bool = False) -> Iterator[IO]:
    """A temporary beside `path`, renamed to it once written. `unlink_first`: the old file is
    removed before the rename, for large outputs that no other process reads during the build:
    ext4 writes a file's data to disk when a rename replaces another (auto_da_alloc), ~40 ms for
    20 MB, a rename into a free name costs nothing. A reader may then find no file for a moment."""
    for stale in glob.glob(glob.escape(str(path)) + TEMPORARY_SUFFIX + "*"):   # left by a killed run, not a running one
        pid = _writer_pid(stale)
        if not (pid is not None and _alive(pid)):
            try:
                os.unlink(stale)
            except FileNotFoundError:
                pass
    tmp = f"{path}{TEMPORARY_SUFFIX}{os.getpid()}"
    try:
        with open(tmp, mode) as f:
            yield f
        if unlink_first:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_bytes(path: StrPath, data: bytes) -> None:
    with atomic_open(path, "wb") as f:
        f.write(data)


def write_text(path: StrPath, text: str) -> None:
    with atomic_open(path, "w") as f:
        f.write(text)
