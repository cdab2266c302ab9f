"""`scons flash` / `scons flash-<model>`: deploy the relocatable images to the board, writing only
the 64 KB sectors whose bytes differ from what that board (probe serial) holds.

The flash step is an SCons node: `build/<model>/flash/on_board.json` (what is on the board; a
flash of other bytes over it removes it) and `flash.json` (this flash's report). Its signature is
the images, the board file and its options (n6.flash.step.FlashOptions, through varlist) with the
probe identity (the attached ST-LINKs' serials, the simulated board's probe.json): a swapped board
reflashes, an unchanged one costs no programmer call. The steps that run a model on a board (run,
validate, profile) put their model set there themselves unless it is (n6_scons.board_action), so
the sets of a whole project take each board in turn (n6.flash.boards: several boards side by
side). The policy is the library's (n6.flash.step, n6.flash.project); this tool declares nodes."""
import os

import SCons.Action
import SCons.Node.FS
import SCons.Script

from n6.board_files import board_path
from n6.flash.project import Deployment, deploy_targets
from n6.variables import defaults
from n6_scons import board_action, describe_targets, reports_errors, say, sim_board_dir, step_code


def flash_targets(env, model_images, install_release, broken=None):
    """Define `flash` / `flash-<model>` for what the command line asks, and plan the model sets
    that the run, validate and profile steps it asks for put on the boards
    (Deployment.sets_to_plan), so that env.OnBoard / env.BoardSet can give those steps their
    model's set (planning reads the board file and lists the attached probes). `broken`: model
    folders that cannot be read (name → error)."""
    state = env["N6_FLASHING"] = Deployment(model_images, install_release, broken=broken or {})
    targets = SCons.Script.COMMAND_LINE_TARGETS
    requested, deploys = deploy_targets(targets, model_images, state.broken)
    if not deploys:   # a build that deploys nothing imports no deploy code
        return []
    from n6.board import load_board
    from n6.flash.step import chosen_models, models_to_flash
    board = load_board(_template(env).board)
    chosen = chosen_models(env.get("MODEL", ""), board, model_images, state.broken)
    nodes = []
    if requested:
        nodes = _flash_step(env, models_to_flash(chosen, requested, model_images, board,
                                                 install_release.multi_model))
        for t in requested:
            env.Alias(t, nodes)
    for models, index in state.sets_to_plan(targets, chosen, env.Dir("$BUILD_DIR").abspath):
        _plan(env, models, index)
    # at least one job per board, the boards side by side (a -j given on the command line wins)
    SCons.Script.SetOption("num_jobs", max(SCons.Script.GetOption("num_jobs"), len(state.boards)))
    return nodes


def deploy_models(env, *verbs):
    """The models the command line asks `verbs` for, in the order their sets go on the boards (the
    order SCons starts their steps in under -k), and the models of the verbs' bare targets."""
    state = env["N6_FLASHING"]
    return state.models_in_order(verbs), state.project


def board_set(env, model):
    """What a step that runs `model` on a board needs of the set it goes there with: the set's
    FlashOptions (FORCE= stays the flash step's), the nodes that make it (images, board file,
    firmwares: a step depends on them), the set's flash step when the command line declares one
    (a step comes after it) and the board (n6.flash.boards.Attached or LabPlace). Call after
    FlashTargets."""
    state = env["N6_FLASHING"]
    models = state.set_of(model)
    opts, sources = _plan(env, models)
    return opts.for_steps(), sources, state.steps.get(models), state.boards[state.board_of[models]]


def uses_board(env, model, nodes):
    """Declare steps that run `model` on the board (deploy_order orders them by model set)."""
    env["N6_FLASHING"].users.append((model, list(nodes)))


def deploy_result(env, verb, model, nodes):
    """Declare the nodes whose reports give `model`'s row in the summary of `verb`."""
    env["N6_FLASHING"].results.setdefault(verb, {})[model] = list(nodes)


def on_board(env, model):
    """`build/<model>/flash/on_board.json`: the node that puts `model` on its board (the flash step
    of its set). Depend on it to run on the board; call it after FlashTargets. Building two
    different sets on one board in one run is refused (a board holds one set)."""
    models = env["N6_FLASHING"].set_of(model)
    return _flash_step(env, models)[2 * models.index(model)]


def deploy_order(env):
    """After every deploy step is declared: the steps that talk to a board run one after the
    other, model set by model set (Deployment.board_turns, through SCons's Requires; each also
    takes the board lock and puts its set there unless it is, so the order only saves flashing).
    Not under `-k`: there a failed step must not hold back the models after it. Then a summary per
    verb the command line asks for several models, printed when the build ends whatever failed
    (`build/<verb>-summary.json`), with a row per model folder that cannot be read."""
    state = env["N6_FLASHING"]
    if not SCons.Script.GetOption("keep_going"):
        for ordered in state.board_turns():
            for before, after in zip(ordered, ordered[1:]):
                env.Requires(after, before)
    targets = SCons.Script.COMMAND_LINE_TARGETS
    for verb in state.report_broken(targets, env.get("MODEL")):   # their alias fails after the models' steps
        env.Alias("broken-models", [n for nodes in state.results[verb].values() for n in nodes])
        env.Alias(verb, env.Alias("broken-models"))
    summaries = state.summaries(targets)
    if summaries and not (SCons.Script.GetOption("no_exec") or SCons.Script.GetOption("clean")):
        import atexit
        atexit.register(_summaries, summaries, env.Dir("$BUILD_DIR").abspath, state.broken)


def _summaries(summaries, build_dir, broken):
    """The project summaries, at the end of the build (n6.run.summary.project_rows)."""
    from SCons.Node import executed, up_to_date
    from n6.run.summary import project_rows, summary
    failed = [(node.abspath, f.errstr) for f in SCons.Script.GetBuildFailures()
              if isinstance(f.node, SCons.Node.FS.Base)     # not an alias (broken-models: rows of their own)
              for node in f.node.get_executor().get_all_targets()]     # a set's flash step: each model's error
    for verb, results in summaries.items():
        done = {m: all(n.get_state() in (executed, up_to_date) for n in nodes) for m, nodes in results.items()}
        text, _ = summary(verb, project_rows(verb, build_dir, done, failed, broken),
                          os.path.join(build_dir, f"{verb}-summary.json"),
                          kept_going=bool(SCons.Script.GetOption("keep_going")))
        say(text.rstrip("\n"))


def _template(env):
    """The run's FlashOptions before a model set and a board are given them (Deployment.plan),
    and the boards the command line names; made once per run."""
    from n6.flash.boards import BoardList, build_boards
    from n6.flash.step import run_options
    state = env["N6_FLASHING"]
    if state.template is None:
        state.template = run_options(
            board_path(env["BOARD"]), state.release, env.get("FLASH_BACKEND") or "", bool(env["FORCE"]),
            env["FLASH_RESET"], bool(env["DRY_RUN"]), bool(env["RELOC_COPY_MODE"]), env["RELOC_EXT_RAM_SIZE"],
            env.Dir("$BUILD_DIR").path, env.StedgeaiInstall()[0])
        state.boards = build_boards({k: env[k] for k in BoardList.KEYS.values()}, SCons.Script.ARGUMENTS,
                                    state.template.board, sim_board_dir(env), state.template.simulated)
    return state.template


def _plan(env, models, index=0):
    """(FlashOptions, source nodes) of the model set `models` on board `index`, planned once per run."""
    from n6.board import load_board
    from n6.flash.step import firmware_files
    state = env["N6_FLASHING"]
    if models not in state.plans:
        opts, images = state.plan(models, index, _template(env))
        board = load_board(opts.board)
        firmwares = [env.File(p) for p in firmware_files(board, opts.release, opts.copy_mode, opts.install_root)]
        state.plans[models] = opts, firmwares + images + [env.File(board.path),
                                                          step_code(env, "flash", ["n6.flash.step"], __file__)]
    return state.plans[models]


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
def _flash_action(target, source, env, opts):
    from n6.flash.step import flash_step
    from n6.flash.shared_board import board_key
    env["N6_FLASHING"].claim(board_key(opts), opts.models)
    flash_step(opts, [(target[2 * i].abspath, target[2 * i + 1].abspath) for i in range(len(opts.models))], say,
               verbose=bool(env.get("VERBOSE")))


# made once: making one signs the function's code; the options sign the step (varlist)
_FLASH_ACTION = SCons.Action.Action(_flash_action, None, varlist=["N6_FLASH_OPTIONS"])


def generate(env):
    describe_targets(env, ("flash", "put the chosen model(s) on the board (BOARD=, MODEL=), writing changed sectors "
                                    "only"), ("flash-<model>", "put that model on the board"))
    env.SetDefault(**defaults("BOARD", "MODEL", "PROBE", "PORT", "SIM_BOARDS", "LAB_PLACES", "LAB_COORDINATOR",
                              "FORCE", "FLASH_BACKEND", "FLASH_RESET", "DRY_RUN", "RELOC_COPY_MODE",
                              "RELOC_EXT_RAM_SIZE"))
    for name, method in (("FlashTargets", flash_targets), ("OnBoard", on_board), ("DeployModels", deploy_models),
                         ("BoardSet", board_set), ("DeployResult", deploy_result), ("UsesBoard", uses_board),
                         ("DeployOrder", deploy_order)):
        env.AddMethod(method, name)


def exists(env):
    return True
