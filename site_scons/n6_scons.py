"""What every n6 SCons tool shares: Python actions that report bad input as one
`scons: *** [target] <file>: <problem> (fix: ...)` line, and short progress lines."""
import SCons.Errors

from n6.errors import N6Error


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


def library_sources(env):
    """The n6 library's own files: a step whose logic lives there must rerun when they change
    (SCons signs a Python action by its own bytecode only, not by the code it calls)."""
    import glob
    import os
    site = os.path.dirname(os.path.abspath(__file__))
    return sorted(glob.glob(os.path.join(site, "n6", "**", "*.py"), recursive=True) +
                  [os.path.join(site, "n6_scons.py")])
