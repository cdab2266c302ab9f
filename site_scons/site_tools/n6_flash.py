"""`scons flash` / `scons flash-<model>`: deploy the relocatable images to the board, writing only
the 64 KB sectors whose bytes differ from what that board (probe serial) holds.

The flash step is an SCons node: `build/<model>/flash/on_board.json` (what is on the board; a
flash of other bytes over it removes it) and `flash.json` (this flash's report). The steps that
run a model on the board (run, validate, profile) do not wait for it: they put their model set
there themselves unless it is (n6.flash.step.ensure_on_board), so that the sets of a whole
project take the board in turn and an unchanged project flashes nothing. Its signature is the images,
the board file and its options (n6.flash.step.FlashOptions, signed through varlist) with the probe
identity: the serial numbers of the attached ST-LINKs as USB enumerates them (the simulated
board's probe.json), so a swapped board reflashes while nothing changed costs no programmer call.
What another tool did to the board is only seen when a flash runs (read-back) or with FORCE=1.
The policy is the library's (n6.flash.step); this tool declares the nodes."""
import SCons.Action
import SCons.Node.FS
import SCons.Script

from n6.board_files import board_path
from n6.build_layout import model_step
from n6.errors import N6Error
from n6.flash.project import Deployment
from n6.flash.step import DEPLOY_VERBS
from n6.variables import defaults
from n6_scons import board_action, describe_targets, reports_errors, say, sim_board_dir, step_code


def flash_targets(env, model_images, install_release, broken=None):
    """Define `flash` / `flash-<model>` for what the command line asks, and plan the model sets
    that the run, validate and profile steps it asks for put on the board: each model alone on a
    2.x board, sets of up to four on a 3.x one (the set the board holds first). Remembers the
    models so that env.OnBoard / env.BoardSet can give those steps their model's set (planning
    one reads the board file and lists the attached probes). `broken`: model folders that cannot
    be read (name → error)."""
    from n6.board import load_board
    from n6.flash.step import (board_sets, check_deploy_targets, chosen_models, deploy_requests, held_set,
                               models_to_flash)
    state = env["N6_FLASHING"] = Deployment(model_images, install_release, broken=broken or {})
    targets = SCons.Script.COMMAND_LINE_TARGETS
    check_deploy_targets(targets, model_images, state.broken)
    requested = [t for t in targets if t == "flash" or t.startswith("flash-") and t[6:] in model_images]
    if not requested and not any(t.partition("-")[0] in DEPLOY_VERBS for t in targets):
        return []
    bpath = board_path(env["BOARD"])
    board = state.once(("board", bpath), lambda: load_board(bpath))
    chosen = chosen_models(env.get("MODEL", ""), board, model_images, state.broken)
    multi = install_release.multi_model
    nodes = []
    if requested:
        nodes = _flash_step(env, models_to_flash(chosen, requested, model_images, board, multi))
        for t in requested:
            env.Alias(t, nodes)
    state.requests = deploy_requests(targets, chosen, sorted(model_images))
    state.project = chosen or sorted(model_images)
    planned = {m for models in state.plans for m in models}
    todo = sorted({m for models in state.requests.values() for m in models} - planned)
    held = () if planned else held_set(env.Dir("$BUILD_DIR").abspath, todo, model_images)
    for models in board_sets(todo, multi, held):
        _plan(env, models)
    return nodes


def deploy_models(env, *verbs):
    """The models the command line asks `verbs` for, in the order their sets go on the board (the
    order SCons starts their steps in when deploy_order does not chain them: under -k), and the
    models of the verbs' bare targets."""
    state = env["N6_FLASHING"]
    turn = state.turns()
    return sorted({m for v in verbs for m in state.requests.get(v, ())}, key=lambda m: (turn.get(m, 0), m)), \
        state.project


def board_set(env, model):
    """What a step that runs `model` on the board needs of the set it goes there with: the set's
    FlashOptions (the step puts the set on the board first unless it is there: n6.flash.step.
    ensure_on_board; FORCE= stays the flash step's), the nodes that make it (images, board file,
    firmwares: a step depends on them) and the set's flash step when the command line declares
    one (a step comes after it). Call after FlashTargets."""
    from dataclasses import replace
    state = env.get("N6_FLASHING")
    if state is None or model not in state.model_images:
        raise N6Error(None, f"no model {model} to put on the board", "see `scons -h` for the models")
    models = next((s for s in state.plans if model in s), None) or (model,)
    opts, sources = _plan(env, models)
    return replace(opts, force=False, dry_run=False), sources, state.steps.get(models)


def uses_board(env, model, nodes):
    """Declare steps that run `model` on the board (deploy_order orders them by model set)."""
    env["N6_FLASHING"].users.append((model, list(nodes)))


def deploy_result(env, verb, model, nodes):
    """Declare the nodes whose reports give `model`'s row in the summary of `verb`."""
    env["N6_FLASHING"].results.setdefault(verb, {})[model] = list(nodes)


def on_board(env, model):
    """`build/<model>/flash/on_board.json`: the node that puts `model` on the board (its flash
    step, alone or in the set planned for it). Depend on it to run on the board; call it after
    FlashTargets. Defining steps costs no programmer call; building two different sets in one run
    is refused (the board holds one set)."""
    board_set(env, model)
    models = next(s for s in env["N6_FLASHING"].plans if model in s)
    return _flash_step(env, models)[2 * models.index(model)]


def deploy_order(env):
    """After every deploy step is declared: the steps that talk to the board run one after the
    other, model set by model set (SCons's Requires; each also takes the board lock and puts its
    set there unless it is, so the order only saves flashing). Not under `-k`: there a failed step
    must not hold back the models after it, and the lock keeps each step right. Then a summary per
    verb the command line asks for several models, printed when the build ends whatever failed
    (`build/<verb>-summary.json`). A whole-project verb reports the model folders that cannot be
    read and fails once the other models are done."""
    state = env["N6_FLASHING"]
    if not SCons.Script.GetOption("keep_going"):
        turn = state.turns()
        ordered = [nodes for _, nodes in sorted(state.users, key=lambda u: turn.get(u[0], 0))]
        for before, after in zip(ordered, ordered[1:]):
            env.Requires(after, before)
    broken = state.broken
    bare = [v for v in DEPLOY_VERBS if v in SCons.Script.COMMAND_LINE_TARGETS]
    if broken and bare and not env.get("MODEL"):
        for verb in bare:                       # the broken folders' alias fails after the models' steps
            env.Alias("broken-models", [n for nodes in state.results.get(verb, {}).values() for n in nodes])
            env.Alias(verb, env.Alias("broken-models"))
            for name in broken:
                state.results.setdefault(verb, {})[name] = []
    asked = {t.partition("-")[0] for t in SCons.Script.COMMAND_LINE_TARGETS}
    summaries = {verb: results for verb, results in sorted(state.results.items()) if verb in asked and len(results) > 1}
    if summaries and not (SCons.Script.GetOption("no_exec") or SCons.Script.GetOption("clean")):
        import atexit
        atexit.register(_summaries, summaries, env.Dir("$BUILD_DIR"), broken)


def _summaries(summaries, build_dir, broken):
    """The project summaries, at the end of the build: a model whose step failed shows its error,
    one whose steps did not run (the build stopped first) shows `not run`."""
    from SCons.Node import executed, up_to_date
    from n6.run.summary import failed_row, model_result, not_run, summary
    failures = {}
    for failure in SCons.Script.GetBuildFailures():
        if not isinstance(failure.node, SCons.Node.FS.Base):      # an alias (broken-models): rows of its own
            continue
        model, step = model_step(build_dir.abspath, failure.node.abspath)
        failures.setdefault(model, {}).setdefault(step, failure.errstr)
    for verb, results in summaries.items():
        rows = []
        for model, nodes in sorted(results.items()):
            if model in broken:
                rows.append(failed_row(model, str(broken[model])))
                continue
            done = all(n.get_state() in (executed, up_to_date) for n in nodes)
            rows.append(model_result(verb, build_dir.Dir(model).abspath, model, failures.get(model))
                        if done or model in failures else not_run(model))
        text, _ = summary(verb, rows, build_dir.File(f"{verb}-summary.json").abspath)
        say(text.rstrip("\n"))


def _plan(env, models):
    """(FlashOptions, source nodes) of the model set `models`, planned once per run."""
    from n6.board import load_board
    from n6.flash.step import FlashOptions, attached_probes, ext_ram_budget, find_programmer, firmware_files
    state = env["N6_FLASHING"]
    if models in state.plans:
        return state.plans[models]
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
    opts = FlashOptions(board=bpath, files=tuple(files), multi=state.release.multi_model,
                        release=state.release.core, backend=backend, cli=install.cli if install else None,
                        simulated=simulated, found_by=install.found_by if install else "pyocd", probes=probes,
                        probe=env["PROBE"] or None, force=bool(env["FORCE"]), reset=env["FLASH_RESET"],
                        dry_run=bool(env["DRY_RUN"]), copy_mode=bool(env["RELOC_COPY_MODE"]),
                        ext_ram=ext_ram_budget(env["RELOC_EXT_RAM_SIZE"], board),
                        build_dir=env.Dir("$BUILD_DIR").path, sim_board=sim_board_dir(env),
                        install_root=env.StedgeaiInstall()[0])
    firmwares = [env.File(p) for p in firmware_files(board, opts.release, opts.copy_mode, opts.install_root)]
    sources = firmwares + images + [env.File(bpath), step_code(env, "flash", ["n6.flash.step"], __file__)]
    state.plans[models] = opts, sources
    return opts, sources


def _flash_step(env, models):
    """The flash step of the model set `models`: targets on_board.json + flash.json per model."""
    from n6.flash.step import stamp_paths
    state = env["N6_FLASHING"]
    if models in state.steps:
        return state.steps[models]
    opts, sources = _plan(env, models)
    nodes = env.Command([p for pair in stamp_paths(opts) for p in pair], sources, _FLASH_ACTION,
                        N6_FLASH_OPTIONS=opts)
    env.NoCache(nodes)
    if opts.force or opts.dry_run:
        env.AlwaysBuild(nodes)
    state.steps[models] = nodes
    return nodes


@reports_errors
@board_action(lambda env: env["N6_FLASH_OPTIONS"], puts_set=lambda env: False)
def _flash_action(target, source, env):
    from n6.flash.step import flash_step
    opts, state = env["N6_FLASH_OPTIONS"], env["N6_FLASHING"]
    before = state.flashed
    if before and before != opts.models:      # the board holds one set: a second would overwrite the first
        raise N6Error(None, f"one run would put {', '.join(before)} and then {', '.join(opts.models)} on "
                      "the board", "flash (or run) one model set at a time")
    state.flashed = opts.models
    flash_step(opts, [(target[2 * i].abspath, target[2 * i + 1].abspath) for i in range(len(opts.models))], say,
               verbose=bool(env.get("VERBOSE")))


# made once: making one signs the function's code; the options sign the step (varlist)
_FLASH_ACTION = SCons.Action.Action(_flash_action, None, varlist=["N6_FLASH_OPTIONS"])


def generate(env):
    describe_targets(env, ("flash", "put the chosen model(s) on the board (BOARD=, MODEL=), writing changed sectors "
                                    "only"), ("flash-<model>", "put that model on the board"))
    env.SetDefault(**defaults("BOARD", "MODEL", "PROBE", "FORCE", "FLASH_BACKEND", "FLASH_RESET", "DRY_RUN",
                              "RELOC_COPY_MODE", "RELOC_EXT_RAM_SIZE"))
    env.AddMethod(flash_targets, "FlashTargets")
    env.AddMethod(on_board, "OnBoard")
    env.AddMethod(deploy_models, "DeployModels")
    env.AddMethod(board_set, "BoardSet")
    env.AddMethod(deploy_result, "DeployResult")
    env.AddMethod(uses_board, "UsesBoard")
    env.AddMethod(deploy_order, "DeployOrder")


def exists(env):
    return True
