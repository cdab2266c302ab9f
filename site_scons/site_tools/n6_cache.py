"""The shared build cache (CACHE_DIR=, docs/cache.md): SCons's CacheDir, and one summary line
after a build that asked it for anything (`  CACHE    240 of 240 steps retrieved from <dir>`).
Signatures name paths inside the project relative to its top, so checkouts share the cache."""
import atexit

import SCons.CacheDir
import SCons.Script

from n6_scons import say


class CountedCacheDir(SCons.CacheDir.CacheDir):
    """SCons's CacheDir; each environment holds an instance, the summary adds up their counts."""
    instances: list["CountedCacheDir"] = []

    def __init__(self, path):
        super().__init__(path)
        self.instances.append(self)


def _summary(path):
    asked = sum(c.requests for c in CountedCacheDir.instances)
    if asked:
        say(f"  CACHE    {sum(c.hits for c in CountedCacheDir.instances)} of {asked} steps retrieved from {path}")


def generate(env):
    if env["CACHE_DIR"]:
        env.N6CheckFolder("$CACHE_DIR", "CACHE_DIR")
        env["CACHEDIR_CLASS"] = CountedCacheDir
        SCons.Script.CacheDir(env["CACHE_DIR"])
        atexit.register(_summary, env.subst("$CACHE_DIR"))


def exists(env):
    return True
