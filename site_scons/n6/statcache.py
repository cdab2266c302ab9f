"""Content signatures of files, remembered by their full stat so a no-op reads no file, and
never wrong whatever the timing (git's "racy clean" rule, ninja/Bazel's stat fields).

A remembered signature is reused only when the file's (mtime_ns, size, inode, ctime_ns, dev)
are all unchanged *and* its last change (mtime or ctime) is older than the moment the signature
was taken, minus a margin. A file edited in the same tick as (or after) the moment it was hashed is "racy": its
mtime may not move on a second edit, so it is hashed again until a run starts well after its
last change. ctime catches a same-size edit whose old mtime was restored (touch -d, cp -p,
os.utime): only the kernel sets it. The margin covers the stamp's granularity and the clock that
makes it: a file stamped in whole seconds (FAT's 2 s, some network and old file systems) gets
2 s; a file stamped below the second, 100 ms: many ticks of the coarse kernel clock that stamps
files (it lags the one `time.time_ns` reads by at most one tick) and a network file server's
clock skew of NTP-synchronised machines. So outputs a build just wrote are trusted by the run
100 ms later, not 2 s later (scripted loops rebuild that fast)."""
import os
import pickle
import time
from collections.abc import Callable
from typing import Any

from .atomic import write_bytes

MARGIN_NS = 2_000_000_000          # whole-second stamps
FINE_MARGIN_NS = 100_000_000       # stamps below the second
FORMAT = 1
StatKey = tuple[int, int, int, int, int]   # mtime_ns, size, inode, ctime_ns, device


def stat_key(st: os.stat_result) -> StatKey:
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns, st.st_dev)


def settled(key: StatKey, moment: int) -> bool:
    """The file's last change (mtime, or ctime: a metadata change such as an mtime set back) was
    well before `moment`, by the margin its stamps need."""
    changed = max(key[0], key[3])
    return changed + (MARGIN_NS if changed % 1_000_000_000 == 0 else FINE_MARGIN_NS) < moment


class StatCache:
    """path → (stat key, signature, moment the signature was taken). `always_hash`: every
    file is racy (hash every file once per run; for comparisons)."""

    def __init__(self, path: str, hash_name: str, always_hash: bool = False) -> None:
        self.path = path
        self.hash_name = hash_name
        self.always_hash = always_hash
        self.moment = time.time_ns()      # before any file of this run is read
        self.entries: dict[str, tuple[StatKey, str, int]] = {}
        # path → (stat key, signature) of files this run wrote and hashed
        self.written: dict[str, tuple[StatKey, str]] = {}
        # (path, reader) → (signature, the fact): a fact read from a file, kept while its content is
        self.facts: dict[tuple[str, str], tuple[str, Any]] = {}
        self.asked: set[tuple[str, str]] = set()   # the facts this run asked for: the ones saved
        self.dirty = False
        try:
            with open(path, "rb") as f:
                fmt, name, entries, *facts = pickle.load(f)   # facts: since from_content
            if (fmt, name) == (FORMAT, hash_name):
                self.entries, self.facts = entries, (facts[0] if facts else {})
        except (OSError, ValueError, EOFError, pickle.UnpicklingError, TypeError, AttributeError, ImportError):
            pass   # no or unreadable cache, or one naming code that is gone: every file is hashed once

    def signature(self, path: str, hash_file: Callable[[str], str]) -> str | None:
        """Content signature of `path` (hash_file(path) when not provably unchanged), None if
        the file does not exist."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        key = stat_key(st)
        if self.written.get(path, (None,))[0] == key:
            return self.written[path][1]
        entry = self.entries.get(path)
        if entry is not None and entry[0] == key and not self.always_hash and \
                settled(key, entry[2]):
            return entry[1]
        sig = hash_file(path)
        try:   # the file may have changed while being read: then record nothing
            if stat_key(os.stat(path)) != key:
                self.entries.pop(path, None)
                self.dirty = True
                return sig
        except OSError:
            return sig
        self.entries[path] = (key, sig, self.moment)
        self.dirty = True
        return sig

    def from_content(self, path: str, read: Callable[[str], Any], reader: str,
                     hash_file: Callable[[str], str]) -> Any:
        """read(path), a fact that depends on the file's path and content and on the code of
        `read` only (`reader` names both, e.g. the function and its module's signature):
        remembered with the content signature it was read at, so a run where the file's
        signature is unchanged reads no file (the signature costs one stat). None if the file
        does not exist."""
        sig = self.signature(path, hash_file)
        if sig is None:
            return None
        key = (path, reader)
        self.asked.add(key)
        known = self.facts.get(key)
        if known is not None and known[0] == sig:
            return known[1]
        value = read(path)
        if self.signature(path, hash_file) == sig:   # not changed while it was read
            self.facts[key] = (sig, value)
            self.dirty = True
        return value

    def wrote(self, path: str, sig: str) -> None:
        """This run wrote `path` and hashed the bytes it wrote: `sig` is its signature for the rest
        of the run, while its stat stays. Recorded as taken at the run's start: racy, so the next
        run hashes the file again (it may have changed within the same tick after the write)."""
        try:
            key = stat_key(os.stat(path))
        except OSError:
            return
        self.written[path] = (key, sig)
        self.entries[path] = (key, sig, self.moment)
        self.dirty = True

    def forget(self, path: str) -> None:
        if self.entries.pop(path, None) is not None:
            self.dirty = True

    def save(self) -> None:
        if self.dirty and os.path.isdir(os.path.dirname(self.path) or "."):
            entries = {p: e for p, e in self.entries.items() if os.path.lexists(p)}
            facts = {k: f for k, f in self.facts.items() if k in self.asked and k[0] in entries}
            write_bytes(self.path, pickle.dumps((FORMAT, self.hash_name, entries, facts), pickle.HIGHEST_PROTOCOL))
            self.dirty = False
