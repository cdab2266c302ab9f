"""What a build folder holds, and who may write it.

One build at a time per build folder: `build_lock` (an advisory lock on `<build>/.lock`; a second
build waits and says so in one line). Outputs the current configuration no longer produces (an
option turned off, a renamed or deleted model) are removed: `prune` compares the list of outputs
of earlier runs (`<build>/.n6-outputs`) with the current one, like ninja's cleandead, so nothing
the build did not make is ever touched."""
import contextlib
import errno
import fcntl
import json
import os
import shutil
from collections.abc import Callable, Collection, Iterable, Iterator

from .atomic import write_text
from .build_layout import SCONSIGN, ModelLayout
from .errors import N6Error
from .paths import MODELS, ROOT, SOURCE_FOLDERS
from .unchanged import RECORD

MANIFEST = ".n6-outputs"
LOCK = ".lock"
PID_WIDTH = 20   # a lock file holds its holder's pid padded to this width: every pid covers the last one's
STAT_CACHE = ".n6-stat"
REWRITTEN = (LOCK, STAT_CACHE, RECORD)   # bookkeeping every run, or its exit, rewrites
BOOKKEEPING = (MANIFEST, f"{SCONSIGN}.dblite", *REWRITTEN)


def check_build_dir(path: str, variable: str = "BUILD_DIR", shown: str | None = None, create: bool = True) -> None:
    """A build folder must be a folder of its own: not the repository or a folder holding it
    (`/` included), not inside a source folder (the models: outputs would read as models), not
    a file, and one that can be created (`create`) and written. Else a one-line error, before
    anything is read or written there. (An empty BUILD_DIR= is the option schema's refusal.)"""
    shown = path if shown is None else shown
    own = f"set {variable} to a folder of its own ({variable}=build, or one outside the repository)"
    if _inside(ROOT, path):
        where = "the repository" if _inside(path, ROOT) else "a folder holding the repository"
        raise N6Error(shown, f"{variable} is {where}: the build and `scons -c` would work among its files", own)
    for folder in SOURCE_FOLDERS:
        if _inside(path, folder):
            what = "the models folder" if folder == MODELS else "the source folder"
            raise N6Error(shown, f"{variable} is inside {what} {os.path.relpath(folder, ROOT)}/",
                          f"set {variable} to a folder outside it")
    if os.path.exists(path) and not os.path.isdir(path):
        raise N6Error(shown, f"{variable} is a file, not a folder", f"remove it or set {variable} to a folder")
    if not create:
        return
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise N6Error(shown, f"cannot create {variable}: {e.strerror}",
                      f"set {variable} to a writable folder") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise N6Error(shown, f"{variable} is not writable", f"set {variable} to a writable folder")


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([path, folder]) == folder


class FileLock:
    """An advisory lock on `path`, held until released or the process exits (the kernel releases
    it, even after a crash or kill). `waiting`: the line said once when another process holds it
    ({pid}: the holder's)."""

    def __init__(self, path: str, waiting: str) -> None:
        self.path, self.waiting = path, waiting
        self.fd: int | None = None

    def acquire(self, say: Callable[[str], object] = print) -> bool:
        """Lock; if another process holds it, say so once and wait. Returns whether it waited (held
        already by this object: at once, False)."""
        if self.fd is not None:
            return False
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:       # another user's lock file: locking needs no write access
            self.fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            waited = False
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            holder = os.pread(self.fd, 64, 0).decode(errors="replace").strip() or "?"
            say("  WAIT     " + self.waiting.format(pid=holder))
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            waited = True
        with contextlib.suppress(OSError):   # written over in place: a truncate costs a journal commit
            os.pwrite(self.fd, f"{os.getpid():<{PID_WIDTH}}\n".encode(), 0)
        return waited

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


_BUILD_LOCKS: dict[str, FileLock] = {}


def build_lock(build_dir: str, label: str | None = None) -> FileLock:
    """One build at a time in `build_dir`: one lock per folder in this process, whoever asks."""
    key = os.path.abspath(build_dir)
    if key not in _BUILD_LOCKS:
        _BUILD_LOCKS[key] = FileLock(os.path.join(build_dir, LOCK), f"another build is running in "
                                     f"{label or build_dir} (pid {{pid}}); waiting for it to finish")
    return _BUILD_LOCKS[key]


def read_manifest(build_dir: str) -> set[str]:
    try:
        with open(os.path.join(build_dir, MANIFEST), encoding="utf-8") as f:
            return set(json.load(f))
    except (OSError, ValueError):
        return set()


def stale_outputs(previous: Iterable[str], current: Iterable[str], keep: Collection[str] = ()) -> list[str]:
    """What the previous run listed and the current one no longer makes. Some steps are
    declared only when asked for (a flash, a run): their outputs are stale only if the current
    run still writes to their folder (it makes other files there, so it would have made these
    too), or if nothing at all is made any more in their top folder (a model that is gone)."""
    current = set(current)
    folders = {os.path.dirname(p) for p in current}
    tops = {p.split("/", 1)[0] for p in current}

    def stale(p: str) -> bool:
        if p in current or any(p == k or p.startswith(k + "/") for k in keep):
            return False
        return p.split("/", 1)[0] not in tops or os.path.dirname(p) in folders
    out = {p for p in previous if stale(p)}
    for top in {p.split("/", 1)[0] for p in out} - tops:     # a model that is gone: its board steps' folders
        layout = ModelLayout("", top)                        # too, with what they wrote beside their reports
        out |= {os.path.relpath(f) for f in (layout.flash, layout.run, layout.profile)}
    return sorted(out)


def prune(build_dir: str, current: Collection[str], keep: Collection[str] = (), dry_run: bool = False) -> list[str]:
    """Remove the stale outputs (paths relative to `build_dir`; folders listed are removed
    whole), then record what is listed now. Returns the removed paths, a folder standing for
    everything removed under it when nothing else is left there."""
    previous = read_manifest(build_dir)
    stale = stale_outputs(previous, current, keep)
    removed = []
    for rel in stale:
        path = os.path.join(build_dir, rel)
        if dry_run:
            if os.path.lexists(path):
                removed.append(rel)
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(rel.rstrip("/") + "/")
        elif os.path.lexists(path):
            os.unlink(path)
            removed.append(rel)
    if not dry_run:
        written = {os.path.dirname(p) for p in current}   # the build writes there: SCons knows they exist
        written |= {f for p in written for f in _parents(p)}
        for rel in removed:
            remove_empty_parents(build_dir, os.path.dirname(rel.rstrip("/")), keep=written)
        still = {p for p in previous if p not in stale and os.path.lexists(os.path.join(build_dir, p))}
        listing = set(current) | still
        if listing != previous:
            write_text(os.path.join(build_dir, MANIFEST), json.dumps(sorted(listing), indent=0) + "\n")
    return summarize(build_dir, removed)


def _parents(rel: str) -> Iterator[str]:
    while rel := os.path.dirname(rel):
        yield rel


def remove_empty_parents(build_dir: str, rel: str, keep: Collection[str] = ()) -> None:
    """`rel` and its parents, as long as they are empty and not in `keep`."""
    while rel and rel not in keep:
        try:
            os.rmdir(os.path.join(build_dir, rel))
        except OSError:
            return
        rel = os.path.dirname(rel)


def remove_empty_dirs(build_dir: str) -> None:
    """Bottom-up, after `scons -c`: the folders under `build_dir` that held what the build made
    (the outputs it listed, `read_manifest`) and are left empty. Any other folder stays, empty or
    not: the build did not make it."""
    folders = set()
    for rel in read_manifest(build_dir):
        while rel:
            folders.add(rel)
            rel = os.path.dirname(rel)
    for rel in sorted(folders, key=lambda r: -r.count("/")):
        path = os.path.join(build_dir, rel)
        if os.path.isdir(path) and not os.path.islink(path):
            try:
                os.rmdir(path)
            except OSError:
                pass


def summarize(build_dir: str, removed: Iterable[str]) -> list[str]:
    """Group removed files by their highest folder that is now gone entirely."""
    out = []
    for rel in removed:
        parts = rel.split("/")
        top = rel
        for i in range(1, len(parts)):
            if not os.path.lexists(os.path.join(build_dir, *parts[:i])):
                top = "/".join(parts[:i]) + "/"
                break
        if top not in out:
            out.append(top)
    return out
