"""`scons run` / `run-<model>` and `scons validate`: run the flashed model on the board over the
aiValidation protocol (the simulated board on a pty when no PORT= is given) and compare it with a
host reference. Each step reruns only when the model's images, the board or its options change;
a run puts its model's set on the board first unless the board holds it (so that several model
sets can take the board in turn). `run` / `validate` without MODEL= cover every model, with a
summary at the end (n6_flash.deploy_order).

  build/<model>/run/run.json + output_<name>.npy    RUNS=, INPUTS=, SEED=
  build/<model>/run/validate.json                   VALIDATE_TOLERANCE= (LSB); with the model
      folder's test_data.npz (x samples, y labels) also top-1 accuracy on the board and the reference"""
import os

import SCons.Action
import SCons.Script

from n6.build_layout import ModelLayout
from n6.errors import N6Error
from n6.run.options import RunOptions, ValidateOptions
from n6.variables import defaults
from n6_scons import board_action, describe_targets, progress, reports_errors, say, session_options, \
    sim_board_code, step_code, uses_tool

RUN_MODULES = ["n6.flash.step", "n6.run.steps"]      # what the run and validate actions run (and all they import)


@reports_errors
@board_action(lambda env: env["N6_RUN_OPTIONS"], progress("RUN", lambda t, e: os.path.dirname(t[0].path)))
def _run_action(target, source, env, opts):
    from n6.flash.step import on_board_path
    from n6.run.steps import run_step
    run_step(opts, on_board_path(opts.flash, target[0].dir.dir.name), os.path.dirname(target[0].path), say)


@reports_errors
@board_action(lambda env: env["N6_VALIDATE_OPTIONS"], progress("VALIDATE", lambda t, e: t[0].path),
              lambda env: bool(env["N6_VALIDATE_OPTIONS"].test_data or env["N6_VALIDATE_OPTIONS"].reference_data))
def _validate_action(target, source, env, opts):
    from n6.flash.step import on_board_path
    from n6.run.steps import validate_step
    validate_step(opts, source[0].path, on_board_path(opts.flash, target[0].dir.dir.name), target[0].path, say)


def run_targets(env, specs, names):
    """`run` / `validate` / `run-<model>` / `validate-<model>` for what the command line asks (an
    ordinary build declares no run step: declaring one reads the board file and lists the probes);
    call after FlashTargets. `specs`: the models that have an image, `names`: model → the name the
    board knows it by (its image's). A bare `run` / `validate` covers the chosen models (MODEL=,
    the board file's), else every model."""
    by_name = {spec.name: spec for spec in specs}
    wanted, project = env.DeployModels("run", "validate")
    validated = env.DeployModels("validate")[0]
    if env["RUN_MODE"] == "perf" and validated:     # before any flash or board
        raise N6Error(None, "RUN_MODE=perf runs bring no outputs back to validate", "validate with RUN_MODE=io")
    if wanted and env["INPUTS"]:     # a bad file: one line now, before any flash or board
        from n6.run.inference import read_inputs
        read_inputs(env["INPUTS"])
    return [run_model(env, by_name[name], names[name], name in project, name in validated) for name in wanted]


def run_model(env, spec, board_name, in_project, validated):
    """(run node, validate node) of one model, known on the board as `board_name` (`in_project`:
    also under the bare `run` and `validate`; `validated`: validate asked for, so its reference
    must exist); call after FlashTargets. The run puts the model's set on the board first unless
    it is there (env.BoardSet): it depends on what the set is made of, so a changed image is
    flashed before it runs, whatever ran on the board before."""
    layout = ModelLayout(env.subst("$BUILD_DIR"), spec.name)
    flash, made_of, flash_step, board = env.BoardSet(spec.name)
    session = session_options(env, board)
    runs = int(env["RUNS"]) if "RUNS" in SCons.Script.ARGUMENTS else None     # unset: every INPUTS= sample
    opts = RunOptions(session, flash, board_name, runs, int(env["SEED"]),
                      os.path.abspath(env["INPUTS"]) if env["INPUTS"] else "", env["RUN_PER_LAYER"],
                      env["RUN_MODE"] == "perf")
    run = env.Command([layout.run_report], made_of + [env.File(session.board_file)] +
                      ([env.File(opts.inputs)] if opts.inputs else []), _RUN_ACTION, N6_RUN_OPTIONS=opts)
    env.Depends(run, [step_code(env, "run", RUN_MODULES, __file__)] + sim_board_code(env, session))
    env.NoCache(run)
    from n6.run.inference import saved_intact
    if not saved_intact(layout.run):    # a saved output changed outside the build: not this run's any more
        env.AlwaysBuild(run)
    env.Precious(run)        # a failed run leaves the previous report (inference.save replaces it whole)
    source = ""
    if validated:          # n6.run.reference imports numpy: only a build that validates pays for it
        from n6.run.reference import source_of
        source = source_of(spec)
    c_dir = spec.path if spec.kind != "source" else layout.st_ai_output
    test_data = os.path.join(spec.path, "test_data.npz")
    test_data = os.path.abspath(test_data) if os.path.isfile(test_data) else ""
    data = os.path.abspath(spec.reference_data) if spec.reference_data else ""
    vopts = ValidateOptions(session, flash, env["VALIDATE_TOLERANCE"],
                            os.path.abspath(source) if source else "",
                            os.path.abspath(c_dir), test_data, data)
    val = env.Command(layout.validate_report,
                      [run[0]] + [f for f in (test_data, data) if f] +
                      ([source] if source else env.Glob(os.path.join(spec.path, "*")) if spec.kind != "source" else []),
                      _VALIDATE_ACTION, N6_VALIDATE_OPTIONS=vopts)
    env.Depends(val, step_code(env, "validate", RUN_MODULES, __file__))
    if flash_step:               # `scons flash run`: the flash first
        env.Requires(run, flash_step)
    env.UsesBoard(spec.name, run + (val if test_data or data else []))
    env.DeployResult("run", spec.name, run)
    env.DeployResult("validate", spec.name, val)
    env.Alias(f"run-{spec.name}", run)
    env.Alias(f"validate-{spec.name}", val)
    if in_project:
        env.Alias("run", run)
        env.Alias("validate", val)
    return run, val


# Made once: making an action signs its function's code.
# The options are the steps' signature (their repr), as SCons signs construction variables in varlist
_RUN_ACTION = SCons.Action.Action(_run_action, None, varlist=["N6_RUN_OPTIONS"])
_VALIDATE_ACTION = SCons.Action.Action(_validate_action, None, varlist=["N6_VALIDATE_OPTIONS"])


def generate(env):
    uses_tool(env, "n6_flash")   # the model sets on the board, the deploy order (its FlashTargets comes first)
    describe_targets(env, ("run", "run the chosen model(s), else every model, on the board (simulated without "
                                  "PORT=): .npy, timing, run.json"), ("run-<model>", "the same for that model"),
                     ("validate", "run + compare with the reference (validate.json)"),
                     ("validate-<model>", "the same for that model"))
    env.SetDefault(**defaults("RUNS", "SEED", "INPUTS", "PORT", "SIM_FIRMWARE", "RUN_PER_LAYER", "RUN_MODE",
                              "VALIDATE_TOLERANCE"))
    env.AddMethod(run_targets, "RunTargets")


def exists(env):
    return True
