"""What every n6 SCons tool shares: Python actions that report bad input as one
`scons: *** [target] <file>: <problem> (fix: ...)` line, short progress lines, and nodes
standing for the code a step runs."""
import glob
import hashlib
import os
import sys

import SCons.Action
import SCons.Errors

from n6.errors import N6Error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # relative names: same digest in any clone


def say(text):
    """One write per message (print() makes two): under parallel jobs another job's progress
    line never lands inside it, where a `  VERB  path` line would no longer start a line."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


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
    """One node standing for the code in `paths` (or a function listing them, called once): a step
    whose logic lives there must rerun when it changes (SCons signs a Python action by its own
    bytecode only, not by the code it calls).
    The node is a Value holding a digest of the files' content signatures, taken from the stat
    cache of n6_decider: a no-op stats each file once and reads none, every step has one edge to
    the node, and the walk has no node per file."""
    key = (env.subst("$BUILD_DIR"), label)
    if key not in _CODE_VERSIONS:
        h = hashlib.sha256()
        for path in sorted(paths() if callable(paths) else paths):
            h.update(os.path.relpath(path, ROOT).encode() + b"\0" + env.N6ContentSignature(path).encode() + b"\0")
        _CODE_VERSIONS[key] = env.Value(f"{label} code {h.hexdigest()}")
    return _CODE_VERSIONS[key]


_CODE_VERSIONS = {}


def sim_board_dir(env):
    """The simulated board's state folder: N6_SIM_BOARD when set (the variable the simulated
    programmer and board read), else <build dir>/sim-board."""
    named = os.environ.get("N6_SIM_BOARD")
    return os.path.abspath(named) if named else env.Dir("$BUILD_DIR/sim-board").abspath


def sim_firmware(env):
    """The simulated board's firmware as SIM_FIRMWARE= (default: N6_SIM_FIRMWARE) names it, for
    the board's --firmware: empty for its own; ST's validation firmware on the DK twin: an ELF or
    an ST Edge AI Core install (made absolute), or `st` (the install STEDGEAI_CORE_DIR names)."""
    value = env.get("SIM_FIRMWARE", "")
    return os.path.abspath(value) if value and value != "st" else value


def sim_board_code(env):
    """The simulated board's code (the twin's included): a run on it reruns when it changes."""
    board = os.path.join(ROOT, "sim", "board", "n6board")
    return code_version(env, "sim-board", lambda: sorted(glob.glob(os.path.join(board, "**", "*.py"), recursive=True) +
                                                         glob.glob(os.path.join(board, "*.c"))))


def library_code(env):
    """The n6 library's own code (and this module's)."""
    site = os.path.join(ROOT, "site_scons")
    return code_version(env, "n6-library", lambda: glob.glob(os.path.join(site, "n6", "**", "*.py"), recursive=True)
                        + [os.path.join(site, "n6_scons.py")])
