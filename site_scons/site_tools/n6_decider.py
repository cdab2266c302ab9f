"""Change detection that cannot miss a change and reads no file on a no-op.

Every decision compares content signatures (SCons's "content" decider, so `--debug=explain`
names exactly the inputs that changed). Where SCons would reuse a stored signature by a
whole-second timestamp, n6.statcache answers instead: a signature is reused only if the file's
full stat (mtime in ns, size, inode, ctime) is unchanged and the file was not "racy" when it
was hashed. DECIDER=content hashes every file once per run (for comparisons)."""
import atexit
import os

import SCons.Node.FS
import SCons.Util

from n6.statcache import StatCache

_CACHE = [None]


def _hash_file(path):
    return SCons.Util.hash_file_signature(path, SCons.Node.FS.File.hash_chunksize)


def _stat_cache_csig(node):
    """Replaces File.get_max_drift_csig: SCons's only place that reuses a stored signature."""
    cache = _CACHE[0]
    sig = cache.signature(node.get_abspath(), _hash_file) if cache else None
    return sig or ""


def _content_signature(env, path):
    """A file's content signature as the decider sees it ("" if it does not exist)."""
    cache = _CACHE[0]
    return (cache.signature(os.path.abspath(path), _hash_file) if cache else None) or ""


def generate(env):
    build_dir = env.Dir("$BUILD_DIR").abspath
    if _CACHE[0] is None:
        _CACHE[0] = StatCache(os.path.join(build_dir, ".n6-stat"), SCons.Util.get_hash_format() or "md5",
                              always_hash=env.get("DECIDER") == "content")
        SCons.Node.FS.File.get_max_drift_csig = _stat_cache_csig
        atexit.register(_save)
    env.Decider("content")
    env.AddMethod(_content_signature, "N6ContentSignature")


def _save():
    if _CACHE[0] is not None:
        _CACHE[0].save()


def exists(env):
    return True
