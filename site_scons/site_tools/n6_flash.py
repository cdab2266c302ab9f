"""`scons flash` / `scons flash-<model>`: deploy the relocatable images to the board, writing only
the 64 KB sectors whose bytes differ from what that board (probe serial) holds.

The flash step is an SCons node: `build/<model>/flash/on_board.json` (what is on the board, the
dependency of run/validate) and `flash.json` (this flash's report). Its signature is the images,
the board file and its options (n6.flash.step.FlashOptions, signed through varlist) with the probe
identity: the serial numbers of the attached ST-LINKs as USB enumerates them (the simulated
board's probe.json), so a swapped board reflashes while nothing changed costs no programmer call.
What another tool did to the board is only seen when a flash runs (read-back) or with FORCE=1.
The policy is the library's (n6.flash.step); this tool declares the nodes."""
import os
from dataclasses import dataclass, field

import SCons.Action
import SCons.Script

from n6.board_files import DEFAULT_BOARD, board_path
from n6.errors import N6Error
from n6_scons import describe_targets, reports_errors, say, sim_board_dir, step_code


@dataclass
class _Flashing:
    """What this run knows about the board, kept on the environment: the models' images, the
    install's release, the flash steps declared (model set → nodes), the set flashed so far."""
    model_images: dict
    release: object
    steps: dict = field(default_factory=dict)
    flashed: list = None
    known: dict = field(default_factory=dict)     # board files, programmers, probes: looked up once

    def once(self, key, make):
        if key not in self.known:
            self.known[key] = make()
        return self.known[key]


def flash_targets(env, model_images, install_release):
    """Define `flash` / `flash-<model>` for what the command line asks. Remembers the models so
    that env.OnBoard(model) can give other steps (run, validate, profile) the flash step of a model
    (declaring it reads the board file and lists the attached probes)."""
    from n6.board import load_board
    from n6.flash.step import models_to_flash
    env["N6_FLASHING"] = _Flashing(model_images, install_release)
    requested = [t for t in SCons.Script.COMMAND_LINE_TARGETS
                 if t == "flash" or t.startswith("flash-") and t[6:] in model_images]
    if not requested:
        return []
    board = load_board(board_path(env["BOARD"]))
    chosen = [m for m in env.get("MODEL", "").split(",") if m]
    models = models_to_flash(chosen, requested, model_images, board, install_release.header_words > 24)
    nodes = _flash_step(env, models)
    for t in requested:
        env.Alias(t, nodes)
    return nodes


def on_board(env, model):
    """`build/<model>/flash/on_board.json`: the node that puts `model` on the board (its flash
    step, alone or in the set the command line flashes). Depend on it to run on the board; call
    it after FlashTargets. Defining steps costs no programmer call; building two different sets in
    one run is refused (the board holds one set)."""
    state = env.get("N6_FLASHING")
    if state is None or model not in state.model_images:
        raise N6Error(None, f"no model {model} to put on the board", "see `scons -h` for the models")
    for models, nodes in state.steps.items():
        if model in models:
            return nodes[2 * models.index(model)]
    return _flash_step(env, (model,))[0]


def _flash_step(env, models):
    """One flash step for `models` (together on the board): targets on_board.json + flash.json per model."""
    from n6.board import load_board
    from n6.flash.step import FlashOptions, attached_probes, find_programmer, firmware_files
    state = env["N6_FLASHING"]
    bpath = board_path(env["BOARD"])
    board = state.once(("board", bpath), lambda: load_board(bpath))
    choice = env.get("FLASH_BACKEND") or board.programmer.backend
    backend, install = state.once(("programmer", bpath, choice), lambda: find_programmer(choice, board))
    simulated = install is not None and install.simulated
    if env.get("PROBE"):
        probes = (env["PROBE"],)
    else:
        key = ("probes", simulated, sim_board_dir(env))
        probes = state.once(key, lambda: tuple(attached_probes(*key[1:])))
    images, files = [], []
    for m in models:
        imgs = [n for n in state.model_images[m] if n.name.endswith(("_rel.bin", "_rel_params.bin"))]
        files.append((m, next(n.path for n in imgs if n.name.endswith("_rel.bin")),
                      next((n.path for n in imgs if n.name.endswith("_rel_params.bin")), None)))
        images += imgs
    opts = FlashOptions(board=bpath, files=tuple(files), multi=state.release.header_words > 24,
                        release=state.release.core, backend=backend, cli=install.cli if install else None,
                        simulated=simulated, found_by=install.found_by if install else "pyocd", probes=probes,
                        probe=env.get("PROBE") or None, force=bool(env.get("FORCE")),
                        reset=env.get("FLASH_RESET", "none"), dry_run=bool(env.get("DRY_RUN")),
                        copy_mode=bool(env.get("RELOC_COPY_MODE")), ext_ram=_ext_ram_budget(env, board),
                        build_dir=env.Dir("$BUILD_DIR").path, sim_board=sim_board_dir(env),
                        install_root=env.StedgeaiInstall()[0])
    firmwares = [env.File(p) for p in firmware_files(board, opts.release, opts.copy_mode, opts.install_root)]
    targets = []
    for m in models:
        out = os.path.join("$BUILD_DIR", m, "flash")
        targets += [os.path.join(out, "on_board.json"), os.path.join(out, "flash.json")]
    nodes = env.Command(targets, firmwares + images + [env.File(bpath)], _FLASH_ACTION, N6_FLASH_OPTIONS=opts)
    env.Depends(nodes, step_code(env, "flash", ["n6.flash.step"], __file__))
    env.NoCache(nodes)
    if opts.force or opts.dry_run:
        env.AlwaysBuild(nodes)
    state.steps[tuple(models)] = nodes
    return nodes


def _ext_ram_budget(env, board):
    """External RAM the firmware gives the model: RELOC_EXT_RAM_SIZE, else the board's (None: no check)."""
    from n6.sizes import parse_size
    value = env.get("RELOC_EXT_RAM_SIZE")
    if value in (None, ""):
        return board.budgets["ext_ram"]   # as the pack step's size gate reads it (none on the board: no check)
    return parse_size(value, "RELOC_EXT_RAM_SIZE", allow_none=True)


@reports_errors
def _flash_action(target, source, env):
    from n6.flash.step import flash_step
    opts, state = env["N6_FLASH_OPTIONS"], env["N6_FLASHING"]
    state.flashed = state.flashed or opts.models
    if state.flashed != opts.models:      # the board holds one set: a second one would overwrite the first
        raise N6Error(None, f"one run would put {', '.join(state.flashed)} and then {', '.join(opts.models)} on "
                      "the board", "flash (or run) one model set at a time")
    flash_step(opts, [(target[2 * i].abspath, target[2 * i + 1].abspath) for i in range(len(opts.models))], say,
               verbose=bool(env.get("VERBOSE")))


# made once: making one signs the function's code; the options sign the step (varlist)
_FLASH_ACTION = SCons.Action.Action(_flash_action, None, varlist=["N6_FLASH_OPTIONS"])


def generate(env):
    describe_targets(env, ("flash", "put the chosen model(s) on the board (BOARD=, MODEL=), writing changed sectors "
                                    "only"), ("flash-<model>", "put that model on the board"))
    env.SetDefault(BOARD=DEFAULT_BOARD, MODEL="", PROBE="", FORCE=False, FLASH_BACKEND="", FLASH_RESET="none",
                   DRY_RUN=False)
    env.AddMethod(flash_targets, "FlashTargets")
    env.AddMethod(on_board, "OnBoard")


def exists(env):
    return True
