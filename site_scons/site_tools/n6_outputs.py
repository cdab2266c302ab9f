"""The build folder as SCons sees it: one build at a time (a second one waits), outputs of an
older configuration removed before anything is built, and `scons -c` leaving no empty folder
and no bookkeeping behind.

Call `env.N6BuildFolder()` before any node is read (it checks the folder and takes the lock),
`env.N6PruneStale(keep=[...])` after every target is declared."""
import atexit
import os
import sys

import SCons.Action
import SCons.Environment
import SCons.Errors
import SCons.Node.FS
import SCons.Node.Alias
import SCons.Script

from n6.outputs import BOOKKEEPING, build_lock, check_build_dir, prune, remove_empty_dirs
from n6.unchanged import RECORD, forget
from n6_scons import say


def _readonly():
    """-h, -n, -q: read the build description, change nothing."""
    opt = SCons.Script.GetOption
    return bool(opt("help") or opt("no_exec") or opt("question"))


def build_folder(env):
    build_dir = os.path.abspath(env.subst("$BUILD_DIR"))
    check_build_dir(build_dir, shown=env.subst("$BUILD_DIR"), create=not _readonly())
    if _readonly():
        return build_dir
    build_lock(build_dir, env.subst("$BUILD_DIR")).acquire(say=say)
    forget(os.path.join(build_dir, RECORD))   # this run may write the folder: the no-op record no longer holds
    if SCons.Script.GetOption("clean"):
        atexit.register(_after_clean, build_dir)
    return build_dir


def _after_clean(build_dir):
    """After `scons -c`: drop the folders the build made and left empty; if nothing but the
    build's own bookkeeping is left, remove that too (a clean folder is an empty one)."""
    remove_empty_dirs(build_dir)
    try:
        left = set(os.listdir(build_dir))
    except OSError:
        return
    if left <= set(BOOKKEEPING):
        for name in left:
            try:
                os.unlink(os.path.join(build_dir, name))
            except OSError:
                pass
        try:
            os.rmdir(build_dir)
        except OSError:
            pass


def outputs(env, build_dir):
    """Every file (or folder) under `build_dir` the current build description makes: targets
    reachable from an alias or a default target, and what `Clean` adds."""
    roots = list(SCons.Node.Alias.default_ans.values()) + list(SCons.Script.DEFAULT_TARGETS)
    seen, executors, out = set(), set(), set()
    prefix = build_dir + os.sep
    while roots:
        node = roots.pop()
        if node in seen:
            continue
        seen.add(node)
        if node.has_builder() and isinstance(node, SCons.Node.FS.Base):
            executor = node.get_executor()
            if executor not in executors:   # every file the step writes, once per step
                executors.add(executor)
                for target in executor.get_all_targets():
                    path = target.get_abspath()
                    if path.startswith(prefix):
                        out.add(path[len(prefix):])
        roots.extend(node.sources)
        roots.extend(node.depends)
        roots.extend(node.prerequisites or ())
    for extra in SCons.Environment.CleanTargets.values():
        for node in extra:
            path = node.get_abspath()
            if path.startswith(prefix):
                out.add(path[len(prefix):])
    return out


def prune_stale(env, keep=()):
    """Remove outputs of an older configuration; say what went."""
    if _readonly():
        return []
    build_dir = os.path.abspath(env.subst("$BUILD_DIR"))
    removed = prune(build_dir, outputs(env, build_dir), keep=keep)
    label = env.subst("$BUILD_DIR")
    cleaning = SCons.Script.GetOption("clean")
    for rel in removed:
        path = os.path.join(label, rel)
        say(f"Removed {path} (no longer built)" if cleaning else f"  REMOVE   {path} (no longer built)")
    if cleaning:   # `scons -c <model that no longer exists>`: what was removed is said above
        known = set(SCons.Node.Alias.default_ans.keys())
        for name in SCons.Script.COMMAND_LINE_TARGETS:
            if name not in known and not os.path.exists(name) and \
                    any(r.rstrip("/") == name for r in removed):
                env.Alias(name, [])
    return removed


def check_folder(env, path, variable):
    check_build_dir(os.path.abspath(env.subst(path)), variable, shown=env.subst(path), create=not _readonly())


def broken_models(env, broken, good):
    """Model folders that could not be read: `scons -h` and `scons -c` say so at once; a build
    builds everything else first, then fails with one line per broken model."""
    if not broken:
        return None
    lines = [str(e) for e in broken.values()]
    if SCons.Script.GetOption("help") or SCons.Script.GetOption("clean"):
        for line in lines:
            sys.stderr.write(f"scons: *** {line}\n")
        return None

    node = env.Alias("broken-models", good, SCons.Action.Action(_failing(lines), None))
    env.AlwaysBuild(node)
    env.Alias("build", node)
    for name, error in broken.items():   # `scons <broken model>`: its line at once, no other model built
        if name not in SCons.Node.Alias.default_ans:
            env.AlwaysBuild(env.Alias(name, [], SCons.Action.Action(_failing([str(error)]), None)))
    build = os.path.normpath(env.subst("$BUILD_DIR"))
    for t in SCons.Script.COMMAND_LINE_TARGETS:   # a path in a broken model's folder: its line, not "Do not know"
        name = os.path.relpath(os.path.normpath(t), build).split(os.sep)[0]
        if name in broken and t not in SCons.Node.Alias.default_ans:
            env.AlwaysBuild(env.Alias(t, [], SCons.Action.Action(_failing([str(broken[name])]), None)))
    return node


def _failing(lines):
    """An action that reports `lines` and fails the build (exit 2)."""
    def fail(target, source, env):
        for line in lines[:-1]:
            sys.stderr.write(f"scons: *** {line}\n")
        raise SCons.Errors.BuildError(errstr=lines[-1], exitstatus=2)
    return fail


def generate(env):
    env.AddMethod(build_folder, "N6BuildFolder")
    env.AddMethod(check_folder, "N6CheckFolder")
    env.AddMethod(broken_models, "N6BrokenModels")
    env.AddMethod(prune_stale, "N6PruneStale")


def exists(env):
    return True
