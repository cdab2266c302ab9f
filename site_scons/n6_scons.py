"""What every n6 SCons tool shares: Python actions that report bad input as one
`scons: *** [target] <file>: <problem> (fix: ...)` line, short progress lines, and nodes
standing for the code a step runs."""
import functools
import hashlib
import os
import sys
import threading

import SCons.Action
import SCons.Errors
import SCons.Node

from n6 import build_layout, code_closure
from n6.errors import N6Error, machine_error
from n6.paths import ROOT, SIM_BOARD
from n6.simulators import CODE, code_files as simulator_code_files, sources as simulator_sources  # CODE: n6, sims
from n6.variables import BOOL, BY_NAME, CHOICE, NUMBER, PATH, VARIABLES


def say(text):
    """One write per message (print() makes two): under parallel jobs another job's progress
    line never lands inside it, where a `  VERB  path` line would no longer start a line."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def reports_errors(fn):
    """Wrap a Python action: an N6Error, or the machine refusing a write (a full disk, a read-only
    folder), becomes a BuildError (one line, exit 2, no traceback)."""
    def action(target, source, env):
        try:
            return fn(target, source, env)
        except N6Error as e:
            raise SCons.Errors.BuildError(node=target[0], errstr=str(e), exitstatus=2) from None
        except OSError as e:
            problem = machine_error(e, target[0].path)
            if problem is None:
                raise
            raise SCons.Errors.BuildError(node=target[0], errstr=str(problem), exitstatus=2) from None
    action.__name__ = fn.__name__
    return action


_BOARDS: dict[str, threading.Lock] = {}   # board (n6.flash.shared_board.board_key) → this process's lock on it
_BOARDS_MADE = threading.Lock()


def _board_thread_lock(key):
    with _BOARDS_MADE:
        return _BOARDS.setdefault(key, threading.Lock())


def board_action(step_options, progress_line=None, puts_set=lambda env: True):
    """Decorate a Python action that talks to a board: one at a time on each board, in the order
    SCons starts them; once it has the board, its model set put there unless the board holds it
    (when `puts_set(env)`: n6.flash.step.ensure_on_board, so a FLASH line comes before the step's),
    then its progress line (a `progress` strfunction; give the Action none). A lock, not an SCons
    SideEffect: SCons restarts a step that waited on a side effect ahead of the steps declared
    before it, which would interleave the model sets. The board's own lock (n6.flash.shared_board)
    keeps other builds off it; steps on different boards run side by side under -j. `fn` gets
    the step's options (`step_options(env)`: FlashOptions, or options with `flash`) with the
    board of their labgrid place put in (n6.flash.boards.on_place_board)."""
    def wrap(fn):
        def action(target, source, env):
            from n6.flash.boards import on_place_board
            from n6.flash.shared_board import board_key, board_lock
            from n6.flash.step import ensure_on_board
            opts, flash = on_place_board(step_options(env))
            with _board_thread_lock(board_key(flash)), board_lock(flash, say):
                if puts_set(env):
                    ensure_on_board(flash, say, verbose=bool(env.get("VERBOSE")))
                line = progress_line(target, source, env) if progress_line else None
                if line:
                    say(line)
                return fn(target, source, env, opts)
        action.__name__ = fn.__name__
        return action
    return wrap


class ArgvAction(SCons.Action.CommandAction):
    """Runs the argument list $N6_ARGV, one argument per item ($TARGET, $SOURCES, ${TARGETS[1]}
    are expanded when it runs). Its signature is that list as written: what it names is signed
    through the nodes. SCons would expand every variable of a command line again for each
    target's signature on every run: ~0.5 ms per object, the largest cost of a no-op."""

    def __init__(self, cmdstr):
        super().__init__("$N6_ARGV", cmdstr=cmdstr)

    def get_presig(self, target, source, env, executor=None):
        return "\n".join(env["N6_ARGV"])


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


_CODE_VERSIONS: dict[tuple[str, str], SCons.Node.Node] = {}   # (build folder, label) → Value


def scons_variables(arguments):
    """SCons's Variables for n6.variables.VARIABLES, read from the command line's `arguments`,
    printing one `NAME=value  help (values) [default: ...]` line each for `scons -h`."""
    from SCons.Variables import BoolVariable, EnumVariable, PathVariable, Variables
    variables = Variables(None, arguments)
    for v in VARIABLES:
        default = v.default_value()
        if v.kind == BOOL:
            variables.Add(BoolVariable(v.name, v.help, default))
        elif v.kind == CHOICE:
            variables.Add(EnumVariable(v.name, v.help, default, allowed_values=v.choices, map=dict(v.aliases),
                                       ignorecase=2 if v.ignorecase else 0))
        elif v.kind == PATH:
            variables.Add(PathVariable(v.name, v.help, default, lambda key, value, env, v=v: v.check(value)))
        elif v.kind == NUMBER:
            assert v.parse is not None   # a NUMBER variable has its parse
            variables.Add(v.name, v.help, default, None, functools.partial(v.parse, v.name))
        else:
            variables.Add(v.name, v.help, default)
    variables.FormatVariableHelpText = _variable_help
    return variables


def _variable_help(env, key, text, default, actual, aliases=None):
    v = BY_NAME[key]
    values = f" ({v.shown_values()})" if v.shown_values() else ""
    return f"  {key + '=' + str(actual):<34} {v.help}{values} [default: {v.shown_default()}]\n"


def uses_tool(env, name):
    """Load the tool `name` that this one depends on, unless it is loaded already."""
    if name not in env["TOOLS"]:
        env.Tool(name)


def describe_targets(env, *entries):
    """Record (target, what it does) pairs for `scons -h`: each tool declares its own targets, and
    the help lists them in the order the tools were loaded."""
    env.Append(N6_TARGETS=list(entries))


def targets_help(env):
    return "".join(f"  {name:<18} {text}\n" for name, text in env.get("N6_TARGETS", []))


def session_options(env, board):
    """How the deploy steps reach `board` (n6.flash.boards.Attached: its port, the simulated board's
    state; a LabPlace's, at run time) as n6.run.options.SessionOptions, with the variables."""
    from n6.board import load_board
    from n6.board_files import board_path
    from n6.flash.boards import Attached
    from n6.run.options import SessionOptions
    port, state = (board.port, board.sim_board) if isinstance(board, Attached) else ("", "")
    install_root, install, _ = env.StedgeaiInstall()
    board_file = os.path.abspath(board_path(env["BOARD"]))
    return SessionOptions(board_file=board_file, port=port, state=state,
                          release=install.core, install_root=os.path.abspath(install_root),
                          copy_mode=bool(env["RELOC_COPY_MODE"]),
                          backend=env.get("FLASH_BACKEND") or load_board(board_file).programmer.backend,
                          sim_firmware=sim_firmware(env))


def sim_firmware(env):
    """The simulated board's firmware as SIM_FIRMWARE= (default: N6_SIM_FIRMWARE) names it, for
    the board's --firmware: empty for its own; ST's validation firmware on the DK twin: an ELF or
    an ST Edge AI Core install (made absolute), or `st` (the install STEDGEAI_CORE_DIR names)."""
    value = env.get("SIM_FIRMWARE", "")
    return os.path.abspath(value) if value and value != "st" else value


SIM_BOARD_MAIN = os.path.join(SIM_BOARD, "n6board", "__main__.py")     # the board is `python -m n6board`


def sim_board_code(env, session):
    """The simulated board's code (`python -m n6board`: what it imports and loads, the DK twin's,
    the NPU model's, the programmer's board state and the n6 modules included) and the firmware
    ELF it runs, if one is named: a step on the simulated board reruns when they change."""
    code = code_version(env, "sim-board", lambda: sim_board_files(cached_references(env, CODE)))
    return [code] + ([env.File(session.sim_firmware)] if os.path.isfile(session.sim_firmware) else [])


def sim_board_files(references=None):
    """The files `python -m n6board` runs (n6.simulators.code_files; `references`: CodeTree's)."""
    return simulator_code_files([SIM_BOARD_MAIN], references)


def sim_tool_code(env):
    """The simulated tool's own code, the n6 modules it runs and the simulator modules it loads (the
    NPU model's blob format it writes, the register map that reads), as one node: a change
    regenerates every model; a no-op reads none of it (cached_references)."""
    return code_version(env, "stedgeai-sim", lambda: simulator_code_files(
        simulator_sources("stedgeai_sim"), cached_references(env, CODE)))


def sim_board_dir(env):
    """The simulated board's state folder (build_layout.sim_board_state), made absolute."""
    return os.path.abspath(build_layout.sim_board_state(env.Dir("$BUILD_DIR").abspath))


def step_code(env, step, modules, tool=None):
    """The code a step runs, as one node (code_version): the n6 modules its action imports
    (`modules`), every n6 module they import in turn, this module and the step's tool file. A
    step reruns when that code changes, not when any library module does. Each file's import
    lines are read once per content of it and of their reader (the stat cache keeps them): a
    no-op reads no module."""
    return code_version(env, f"step-{step}", lambda: sorted(CODE.closure(modules, cached_references(env, CODE)))
                        + [os.path.abspath(__file__)] + ([tool] if tool else []))


def cached_references(env, tree):
    """tree.references through the stat cache: read once per content of the file and of
    n6.code_closure."""
    reader = f"code_references {tree.key} {env.N6ContentSignature(code_closure.__file__)}"
    return lambda path: env.N6FromContent(path, tree.references, reader)
