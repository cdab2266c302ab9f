"""`scons` with nothing to do reads no build description and walks no graph: when nothing the last
complete build depended on has changed since (n6.unchanged), it says what a walk would have said.

  env.N6NothingChanged()        first of all: True if this is a plain build and the last complete
                                build's record holds (the build lock is taken to read it)
  env.N6WatchBuild(build_dir)   once the build folder is locked (which empties the record) and
                                the stat cache loaded: a plain build is watched from here on and
                                recorded at exit if its walk ended and succeeded

A plain build is `scons` or `scons build` with -j, -k, -Q, -s or --debug=time and variables on
the command line (DECIDER=content asks for every file to be hashed: never recorded). The record
is made at exit before the stat cache is saved (atexit runs the handlers registered later
first): what the record vouches for is the build folder as the run left it, before its own
bookkeeping is written."""
import atexit
import functools
import os
import sys

import SCons.SConsign
import SCons.Script
import SCons.Script.Main

from n6.build_layout import DEFAULT_BUILD_DIR
from n6.outputs import REWRITTEN, build_lock
from n6.unchanged import LISTED, RECORD, STAT, Record, Watcher, fingerprint, record

PLAIN_OPTIONS = {"num_jobs", "keep_going", "no_progress", "silent", "debug"}
SET_BY_SCONS = {"debug_explain", "debug_includes"}   # from --debug, False unless asked for


def _plain():
    given = {name for name, value in vars(SCons.Script.Main.OptionsParser.values).items()
             if not name.startswith("__") and (value or name not in SET_BY_SCONS)}
    return given <= PLAIN_OPTIONS and set(SCons.Script.GetOption("debug") or ()) <= {"time"} and \
        set(SCons.Script.COMMAND_LINE_TARGETS) <= {"build"} and SCons.Script.ARGUMENTS.get("DECIDER") != "content"


_RUN: list[tuple[tuple, bool]] = []   # this run's fingerprint and whether it is plain, taken once before
#                                       anything of the build is loaded


def nothing_changed(env):
    # Before the variables are read: the record names its command line, so the folder it is looked
    # for in only has to follow from the command line (BUILD_DIR has no environment variable).
    _RUN[:] = [(fingerprint(), _plain())]
    build_dir = SCons.Script.ARGUMENTS.get("BUILD_DIR", DEFAULT_BUILD_DIR)
    path = os.path.join(build_dir, RECORD)
    if not _RUN[0][1] or not os.path.exists(path):   # no record: no lock to take here
        return False
    build_lock(build_dir).acquire(say=functools.partial(print, flush=True))
    last = Record.load(path)
    if last is None or last.first_change(_RUN[0][0]) is not None:
        return False
    SCons.Script.Main.progress_display(
        f"scons: nothing changed since the last complete build ({len(last.seen)} paths looked at)")
    return True


def watch_build(env, build_dir):
    now, plain = _RUN[0]
    if plain:
        watcher = Watcher(functools.partial(_bookkeeping, build_dir))
        watcher.modules()   # imported before the watch: the sources Python checked out of sight
        _startup(watcher, env.Dir("#").abspath)
        walked: list[bool] = []   # SCons writes its signatures when the graph walk ends, and only then
        write = SCons.SConsign.write

        def walk_ended():
            walked.append(True)
            write()
        SCons.SConsign.write = walk_ended
        atexit.register(_record, watcher, walked, os.path.join(build_dir, RECORD), now,
                        int(SCons.Script.start_time * 1e9))


def _bookkeeping(build_dir, path, how):
    """The build's own files that a record cannot see (every run rewrites them): kept by the build
    folder's lock. SCons's signatures and the outputs list are seen: without them a walk rebuilds."""
    return os.path.basename(path) in REWRITTEN and os.path.dirname(os.path.abspath(path)) == build_dir


def _startup(watcher, top):
    """What SCons looked at before the SConstruct ran: the SConstruct names it tries, and its site
    folders (their site_init.py and site_tools), as SCons lists them for this platform."""
    for name in SCons.Script.Main.KNOWN_SCONSTRUCT_NAMES:
        watcher.note(os.path.join(top, name), STAT)
    sites = []
    load = SCons.Script.Main._load_site_scons_dir
    SCons.Script.Main._load_site_scons_dir = lambda d, site_dir_name=None: sites.append(
        os.path.join(d, site_dir_name or "site_scons"))
    try:
        SCons.Script.Main._load_all_site_scons_dirs(top)
    finally:
        SCons.Script.Main._load_site_scons_dir = load
    for site in sites:
        watcher.note(site, LISTED)
        for name in ("site_init.py", "site_tools"):
            watcher.note(os.path.join(site, name), STAT)
    for folder in sys.path:   # a module added ahead of one imported would be imported instead
        watcher.note(folder or ".", LISTED)


def _record(watcher, walked, path, now, started_ns):
    """Exit status 0 is also what SCons leaves after a Python error or Ctrl-C while the build
    description was read (it exits 2 without setting it): a record needs the walk to have ended."""
    watcher.stop()
    if not walked or SCons.Script.Main.exit_status or SCons.Script.GetBuildFailures() or watcher.other:
        return
    watcher.modules()   # and those imported since
    made = record(now, watcher.looked, started_ns)
    if made is not None:
        made.save(path)


def generate(env):
    env.AddMethod(nothing_changed, "N6NothingChanged")
    env.AddMethod(watch_build, "N6WatchBuild")


def exists(env):
    return True
