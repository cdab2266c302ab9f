"""What a complete build depended on, so that a later run which finds none of it changed knows
with one stat per path that it has nothing to do: no build description read, no graph walked
(ninja's and Bazel's no-op, here for a build description that is a program).

A run depends on its command line, working folder and environment (the fingerprint) and on
every path it looked at: files it opened or stat'ed, folders it listed, paths it found absent.
Python's audit events show opens and listings, os.stat / os.lstat are watched for the rest; a
run that starts another program or changes folder is not recorded (what that program reads is
not seen). Every path is looked at once more when the run ends: a record is made only if each
stat then shows no change since well before the run started (n6.statcache's racy rule), so the
run saw what the record vouches for, whenever during the run it looked. A record is kept by the
one who holds the build folder's lock: a run that may write the folder empties it first."""
import os
import pickle
import stat
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .atomic import write_bytes
from .statcache import StatKey, settled, stat_key

RECORD = ".n6-unchanged"
FORMAT = 1
STAT, LSTAT, LISTED = 0, 1, 2       # how a path was looked at
FOLDER = "folder"                   # a folder stat'ed (not listed): only that it is one counts
OTHER_PROGRAM = ("subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.spawn", "os.fork",
                 "os.forkpty")
_STAT, _LSTAT = os.stat, os.lstat   # the originals, whoever watches them later
Look = tuple[str, int]              # a path and how it was looked at
Seen = StatKey | str | None


def look(path: str, how: int) -> Seen:
    """What looking at `path` shows: None if absent, FOLDER for a folder stat'ed, else the stat key
    (a listed folder's: it moves when an entry comes or goes)."""
    try:
        st = _LSTAT(path) if how == LSTAT else _STAT(path)
    except (OSError, ValueError):
        return None
    if how != LISTED and stat.S_ISDIR(st.st_mode):
        return FOLDER
    return stat_key(st)


def fingerprint() -> tuple:
    """The run's command line (the interpreter's flags too), working folder, environment, and
    interpreter with the folders it imports from."""
    return tuple(sys.orig_argv), os.getcwd(), tuple(sorted(os.environ.items())), sys.executable, sys.version, \
        tuple(sys.path)


@dataclass(frozen=True)
class Record:
    fingerprint: tuple
    seen: dict[Look, Seen]

    @classmethod
    def load(cls, path: str) -> "Record | None":
        try:
            with open(path, "rb") as f:
                fmt, fp, seen = pickle.load(f)
        except Exception:   # no record, or one damaged or of other code: none
            return None
        return cls(fp, seen) if fmt == FORMAT and isinstance(fp, tuple) and isinstance(seen, dict) else None

    def save(self, path: str) -> None:
        write_bytes(path, pickle.dumps((FORMAT, self.fingerprint, self.seen), pickle.HIGHEST_PROTOCOL))

    def first_change(self, now: tuple) -> str | None:
        """The first thing that differs from what the recorded run saw (the fingerprint or a
        path), else None."""
        if now != self.fingerprint:
            return "the command line, working folder or environment"
        for (path, how), seen in self.seen.items():
            if look(path, how) != seen:
                return path
        return None


def forget(path: str) -> None:
    """The record at `path` no longer holds: emptied in place, not removed (removing it would move
    the stamp of the folder holding it, which vouches for the paths found absent there)."""
    try:
        os.truncate(path, 0)
    except OSError:   # no record
        pass


def holds(path: str) -> bool:
    """A record is at `path` (an emptied one is none)."""
    return Record.load(path) is not None


def record(now: tuple, looked: Iterable[Look], started_ns: int) -> Record | None:
    """The record of a run with fingerprint `now` that started at `started_ns` and looked at
    `looked`; None if a stat cannot vouch for what the run saw: a file or listed folder changed
    during the run or shortly before it, or, for a path absent or a folder, the folder holding it
    (an entry that comes, goes or changes kind moves it). Each path once, absolute; a path both
    stat'ed and lstat'ed once when it is no link (the two show the same)."""
    seen: dict[Look, Seen] = {}
    holders: dict[str, bool] = {}   # a folder → whether its entries settled before the run
    for path, how in looked:
        key = os.path.abspath(path), how
        if key in seen:
            continue
        seen[key] = now_seen = look(*key)
        if not (settled(now_seen, started_ns) if isinstance(now_seen, tuple) else
                _holder_settled(key[0], started_ns, holders)):
            return None
    for path, how in list(seen):
        if how == LSTAT and seen[path, how] is not None and seen.get((path, STAT)) == seen[path, how]:
            del seen[path, how]
    return Record(now, seen)


def _holder_settled(path: str, started_ns: int, holders: dict[str, bool]) -> bool:
    """The nearest existing folder above `path` had its last entry change before the run."""
    folder = os.path.dirname(path)
    if folder not in holders:
        key = look(folder, LISTED)
        holders[folder] = settled(key, started_ns) if isinstance(key, tuple) else \
            folder != path and _holder_settled(folder, started_ns, holders)
    return holders[folder]


class Watcher:
    """The paths this process looks at from now on (`looked`), and whether it started another
    program or changed to another folder (`other`: the event). `ignored(path, how)`: what not to
    note (the build's own bookkeeping)."""

    def __init__(self, ignored: Callable[[str, int], bool]) -> None:
        self.looked: dict[Look, None] = {}
        self.other = ""
        self.ignored = ignored
        self.folder = os.getcwd()   # relative paths are noted as they are: a change of folder ends the record
        self.watching = True
        sys.addaudithook(self._audit)   # for the rest of the process: stop() only silences it
        os.stat, os.lstat = self._stat, self._lstat

    def stop(self) -> None:
        self.watching = False
        os.stat, os.lstat = _STAT, _LSTAT

    def modules(self) -> None:
        """Note the source of every module loaded so far (an import reads a cached .pyc and checks
        its source's stat out of sight)."""
        for module in list(sys.modules.values()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str):
                self.note(path, STAT)

    def note(self, path: Any, how: int) -> None:
        if isinstance(path, int):   # a descriptor: its path was noted when it was opened
            return
        key = (path if isinstance(path, str) else os.fsdecode(path), how)
        if key not in self.looked and not self.ignored(*key):
            self.looked[key] = None

    def _audit(self, event: str, args: tuple) -> None:
        if not self.watching:
            return
        if event == "open":
            path, _, flags = args
            if isinstance(path, (str, bytes, os.PathLike)) and flags & os.O_ACCMODE != os.O_WRONLY and \
                    not os.fsdecode(path).endswith(".pyc"):   # bytecode: its module's source is noted
                self.note(path, STAT)
        elif event in ("os.listdir", "os.scandir"):
            self.note(args[0] if args[0] is not None else ".", LISTED)
        elif event == "os.chdir" and not self.other and \
                (isinstance(args[0], int) or os.path.abspath(os.fsdecode(args[0])) != self.folder):
            self.other = event   # SCons changes into the SConstruct's folder: the one it runs in; fchdir: a fd
        elif event in OTHER_PROGRAM and not self.other:
            self.other = event

    def _stat(self, path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if "dir_fd" not in kwargs:
            self.note(path, LSTAT if kwargs.get("follow_symlinks") is False else STAT)
        return _STAT(path, *args, **kwargs)

    def _lstat(self, path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if "dir_fd" not in kwargs:
            self.note(path, LSTAT)
        return _LSTAT(path, *args, **kwargs)
