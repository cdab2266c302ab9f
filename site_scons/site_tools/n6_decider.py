"""Change detection that cannot miss a change and reads no file on a no-op.

Every decision compares content signatures (SCons's "content" decider, so `--debug=explain`
names exactly the inputs that changed). Where SCons would reuse a stored signature by a
whole-second timestamp, n6.statcache answers instead: a signature is reused only if the file's
full stat (mtime in ns, size, inode, ctime) is unchanged and the file was not "racy" when it
was hashed. DECIDER=content hashes every file once per run (for comparisons).

Outputs are verified the same way before they are trusted: a built file is up to date only if it
still holds what the build wrote (its signature now equals the one stored when it was built), so a
byte flipped, a file cut short or replaced outside the build is rebuilt by the next run. In a no-op
that costs one stat per output: the stat cache recorded each output's stat after it was written.
A no-op also writes nothing: SCons rewrites its whole signature database after every run, here
only entries that changed are stored and the database is written only then."""
import atexit
import os
import re

import SCons
import SCons.Node
import SCons.Node.FS
import SCons.SConsign
import SCons.Script
import SCons.Util

from n6.errors import N6Error
from n6.outputs import STAT_CACHE
from n6.paths import ROOT
from n6.statcache import StatCache

PATCHED = ("get_max_drift_csig", "is_up_to_date", "explain")   # the methods of SCons's File replaced here
USED = ("get_stored_info", "get_abspath", "has_builder", "get_state", "hash_chunksize", "get_ninfo",
        "get_binfo")
REQUIREMENTS = os.path.join(ROOT, "requirements.txt")


def check_scons(version, file_class, requirements=REQUIREMENTS):
    """The SCons this build runs is the one the patch was written for (requirements.txt's pin)
    and still has what it replaces and calls: otherwise one line, not a decider that misses a change."""
    with open(requirements, encoding="utf-8") as f:
        pin = re.search(r"^SCons==(\S+)", f.read(), re.M | re.I)
    if pin is None:
        raise N6Error(requirements, "no SCons==<version> line: the SCons n6_decider was written for is not said",
                      "put back the SCons pin (git checkout requirements.txt)")
    pinned = pin[1]
    missing = [f"File.{m}" for m in PATCHED + USED if not hasattr(file_class, m)] + \
        ["SCons.Util.hash_file_signature"] * (not hasattr(SCons.Util, "hash_file_signature")) + \
        [f"SConsign.Base.{m}" for m in ("store_info", "dirty") if not hasattr(SCons.SConsign.Base(), m)] + \
        [f"SConsign.{m}" for m in ("write", "sig_files") if not hasattr(SCons.SConsign, m)]
    if version != pinned or missing:
        raise N6Error(None, f"SCons {version} is not {pinned}, the version n6_decider replaces File methods of"
                      + (f" ({', '.join(missing)} missing)" if missing else ""),
                      f"install SCons=={pinned} (./n6 setup)")


check_scons(SCons.__version__, SCons.Node.FS.File)
_CACHE: list[StatCache | None] = [None]


def _hash_file(path):
    return SCons.Util.hash_file_signature(path, SCons.Node.FS.File.hash_chunksize)


def _stat_cache_csig(node):
    """Replaces File.get_max_drift_csig: SCons's only place that reuses a stored signature.
    A signature this run took already (get_csig keeps it in the node's info, which building the
    node resets) is the one visited() records: reading the file again would cost a second read
    of a racy file (just edited, or just written by its step) and could record content that no
    decision of this run saw."""
    csig = getattr(node.get_ninfo(), "csig", None)
    if csig:
        return csig
    cache = _CACHE[0]
    sig = cache.signature(node.get_abspath(), _hash_file) if cache else None
    return sig or ""


def _is_up_to_date(node):
    """Replaces File.is_up_to_date: SCons compares a target's sources only, never the target.
    The target is verified when the run decides whether to build it; asked again later (the C
    scanner asks about a generated source before reading it), SCons's answer stands: what this
    run wrote or verified is not checked against the previous run's record."""
    if not _SCONS_IS_UP_TO_DATE(node):
        return False
    if not node.has_builder() or node.get_state() >= SCons.Node.up_to_date or _intact(node):
        return True
    _CHANGED_OUTSIDE.add(node)
    return False


def _intact(node):
    stored = getattr(node.get_stored_info().ninfo, "csig", None)
    return stored is not None and stored == _stat_cache_csig(node)


def _explain(node):
    """--debug=explain's reason for an output found changed outside the build."""
    if node in _CHANGED_OUTSIDE:
        return f"rebuilding `{node}' because it was changed outside the build\n"
    return _SCONS_EXPLAIN(node)


def _store_info(sconsign, name, node):
    """Replaces SConsign.Base.store_info: SCons marks the entry of every file it visits for writing,
    so a no-op pickles and rewrites the whole .sconsign. An entry that would be written as it is
    stored (the file's signature, stat and, for an output this run did not build, the signatures
    of everything it was built from and its action's) is left alone."""
    if not _as_stored(node):
        _SCONS_STORE_INFO(sconsign, name, node)


def _write_sconsign():
    """Replaces SConsign.write, which rewrites the whole database at the end of every run: only
    when an entry changed."""
    if any(f.dirty for f in SCons.SConsign.sig_files):
        _SCONS_WRITE_SCONSIGN()


def _as_stored(node):
    stored = node.get_stored_info()
    if _state(stored.ninfo) != _state(node.get_ninfo()):
        return False
    if not node.has_builder():
        return True
    if node.get_state() == SCons.Node.executed:   # built by this run: its new build info is stored
        return False
    new, old = node.get_binfo(), stored.binfo
    return new.bactsig == old.bactsig and all(
        len(a) == len(b) and all(map(_same_state, a, b))
        for a, b in ((new.bsourcesigs, old.bsourcesigs), (new.bdependsigs, old.bdependsigs),
                     (new.bimplicitsigs, old.bimplicitsigs)))


def _state(info):
    """What a file's, a value's or an alias's signature info records."""
    return getattr(info, "csig", None), getattr(info, "timestamp", None), getattr(info, "size", None)


def _same_state(a, b):
    return _state(a) == _state(b)


_SCONS_IS_UP_TO_DATE = SCons.Node.FS.File.is_up_to_date
_SCONS_EXPLAIN = SCons.Node.FS.File.explain
_SCONS_STORE_INFO = SCons.SConsign.Base.store_info
_SCONS_WRITE_SCONSIGN = SCons.SConsign.write
_CHANGED_OUTSIDE: set[SCons.Node.FS.File] = set()


def _written(env, path, sig):
    """A step wrote `path` and hashed the bytes as it wrote them (SCons's hash format): this run
    takes `sig` as its signature instead of reading the file back, unless the file's stat moved
    since (it was changed after). Like any signature of a file written this run, it is racy:
    the next run hashes the file again."""
    if _CACHE[0]:
        _CACHE[0].wrote(os.path.abspath(path), sig)


def _hash_name(env):
    """The hash a step that hashes what it writes must use (N6Written): the decider's, SCons's own."""
    return _CACHE[0].hash_name if _CACHE[0] else None


def _content_signature(env, path):
    """A file's content signature as the decider sees it ("" if it does not exist)."""
    cache = _CACHE[0]
    return (cache.signature(os.path.abspath(path), _hash_file) if cache else None) or ""


def _from_content(env, path, read, reader):
    """read(path), remembered while the file's content signature is unchanged
    (StatCache.from_content): `read` depends on the file's path and content and on its own code,
    which `reader` names."""
    cache = _CACHE[0]
    return cache.from_content(os.path.abspath(path), read, reader, _hash_file) if cache else read(path)


def generate(env):
    build_dir = env.Dir("$BUILD_DIR").abspath
    if _CACHE[0] is None:
        # the hash SCons will use: set after the SConscripts are read, so asked of the option here
        _CACHE[0] = StatCache(os.path.join(build_dir, STAT_CACHE), SCons.Script.GetOption("hash_format") or "md5",
                              always_hash=env.get("DECIDER") == "content")
        SCons.Node.FS.File.get_max_drift_csig = _stat_cache_csig
        SCons.Node.FS.File.is_up_to_date = _is_up_to_date
        SCons.Node.FS.File.explain = _explain
        SCons.SConsign.Base.store_info = _store_info
        SCons.SConsign.write = _write_sconsign
        atexit.register(_save)
    env.Decider("content")
    env.AddMethod(_content_signature, "N6ContentSignature")
    env.AddMethod(_from_content, "N6FromContent")
    env.AddMethod(_written, "N6Written")
    env.AddMethod(_hash_name, "N6HashName")


def _save():
    if _CACHE[0] is not None:
        _CACHE[0].save()


def exists(env):
    return True
