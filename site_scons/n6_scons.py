"""What every n6 SCons tool shares: Python actions that report bad input as one
`scons: *** [target] <file>: <problem> (fix: ...)` line, and short progress lines."""
import functools
import glob
import hashlib
import os

import SCons.Errors

from n6.errors import N6Error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # relative names: same digest in any clone


def reports_errors(fn):
    """Wrap a Python action: an N6Error becomes a BuildError (one line, exit 2, no traceback)."""
    def action(target, source, env):
        try:
            return fn(target, source, env)
        except N6Error as e:
            raise SCons.Errors.BuildError(node=target[0], errstr=str(e), exitstatus=2) from None
    action.__name__ = fn.__name__
    return action


def progress(verb, what=lambda target, env: target[0].path):
    """strfunction printing `  VERB     <what>` (nothing with VERBOSE=1: commands show instead)."""
    return lambda target, source, env: None if env.get("VERBOSE") else f"  {verb:<8} {what(target, env)}"


def code_version(env, label, paths):
    """A Value node standing for the code in `paths`: a step whose logic lives there must rerun
    when it changes (SCons signs a Python action by its own bytecode only, not by the code it
    calls). One node instead of one edge per file keeps every no-op short."""
    return env.Value(f"{label} {_digest(tuple(sorted(paths)))}")


@functools.cache
def _digest(paths):
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            h.update(os.path.relpath(path, ROOT).encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def library_code(env):
    """The n6 library's own code (and this module's)."""
    site = os.path.join(ROOT, "site_scons")
    return code_version(env, "n6 library", glob.glob(os.path.join(site, "n6", "**", "*.py"), recursive=True) +
                        [os.path.join(site, "n6_scons.py")])
