"""`scons run` / `run-<model>` and `scons validate`: run the flashed model on the board over the
aiValidation protocol (the simulated board on a pty when no PORT= is given) and compare it with a
host reference. Each step reruns only when what is on the board (the flash step's stamp) or its
options change; `run` and `validate` flash first.

  build/<model>/run/run.json + output_<name>.npy    RUNS=, INPUTS=, SEED=
  build/<model>/run/validate.json                   VALIDATE_TOLERANCE= (LSB); with the model
      folder's test_data.npz (x samples, y labels) also top-1 accuracy on the board and the reference"""
import os

import SCons.Action
import SCons.Script

from n6.run.options import RunOptions, ValidateOptions
from n6_scons import describe_targets, progress, reports_errors, say, session_options, sim_board_code, step_code

RUN_MODULES = ["n6.run.steps"]      # what the run and validate actions run (and all it imports)


@reports_errors
def _run_action(target, source, env):
    from n6.run.steps import run_step
    run_step(env["N6_RUN_OPTIONS"], source[0].path, os.path.dirname(target[0].path), say)


@reports_errors
def _validate_action(target, source, env):
    from n6.run.steps import validate_step
    validate_step(env["N6_VALIDATE_OPTIONS"], source[0].path, source[1].path, target[0].path, say)


def run_targets(env, specs):
    """`run` / `validate` / `run-<model>` / `validate-<model>` for what the command line asks (an
    ordinary build declares no run step: declaring one reads the board file and lists the probes);
    call after FlashTargets. `specs`: the models that have an image."""
    from n6.board_files import board_path
    by_name = {spec.name: spec for spec in specs}
    wanted = set()
    for t in SCons.Script.COMMAND_LINE_TARGETS:
        verb, _, name = t.partition("-")
        if verb in ("run", "validate") and name in by_name:
            wanted.add(name)
        elif t in ("run", "validate"):
            board_file = os.path.abspath(board_path(env["BOARD"]))
            wanted |= {n for n in by_name if _chosen(env, n, board_file)}
    if wanted and env["INPUTS"]:     # a bad file: one line now, before any flash or board
        from n6.run.inference import read_inputs
        read_inputs(env["INPUTS"])
    return [run_model(env, by_name[name]) for name in sorted(wanted)]


def run_model(env, spec):
    """(run node, validate node) of one model; call after FlashTargets. The run reads what the
    flash step put on the board: it depends on the model's `flash/on_board.json` (env.OnBoard), so
    a changed image is flashed first."""
    out = os.path.join(env.subst("$BUILD_DIR"), spec.name, "run")
    on_board = env.OnBoard(spec.name)
    session = session_options(env)
    opts = RunOptions(session, spec.c_name or "network", int(env["RUNS"]), int(env["SEED"]),
                      os.path.abspath(env["INPUTS"]) if env["INPUTS"] else "", env["RUN_PER_LAYER"],
                      env["RUN_MODE"] == "perf")
    run = env.Command([os.path.join(out, "run.json")], [on_board, env.File(session.board_file)] +
                      ([env.File(opts.inputs)] if opts.inputs else []), _RUN_ACTION, N6_RUN_OPTIONS=opts)
    env.Depends(run, [step_code(env, "run", RUN_MODULES, __file__)] + sim_board_code(env, session))
    env.NoCache(run)
    env.Precious(run)        # a failed run leaves the previous report (inference.save replaces it whole)
    onnx = spec.model_file if spec.kind == "source" and spec.model_file.endswith(".onnx") else ""
    # No ONNX (a prebuilt folder, a .tflite source): the host build of the generated C is the reference
    c_dir = spec.path if spec.kind != "source" else os.path.join(env.subst("$BUILD_DIR"), spec.name, "st_ai_output")
    test_data = os.path.join(spec.path, "test_data.npz")
    test_data = os.path.abspath(test_data) if os.path.isfile(test_data) else ""
    vopts = ValidateOptions(session, float(env["VALIDATE_TOLERANCE"]), os.path.abspath(onnx) if onnx else "",
                            os.path.abspath(c_dir), test_data)
    val = env.Command(os.path.join(out, "validate.json"),
                      [run[0], on_board] + ([test_data] if test_data else []) +
                      ([onnx] if onnx else env.Glob(os.path.join(spec.path, "*")) if spec.kind != "source" else []),
                      _VALIDATE_ACTION, N6_VALIDATE_OPTIONS=vopts)
    env.Depends(val, step_code(env, "validate", RUN_MODULES, __file__))
    env.Alias(f"run-{spec.name}", run)
    env.Alias(f"validate-{spec.name}", val)
    if _chosen(env, spec.name, session.board_file):   # `run` / `validate`: the models `flash` puts there
        env.Alias("run", run)
        env.Alias("validate", val)
    return run, val


def _chosen(env, name, board_file):
    """MODEL= (comma list), else the board file's `models`, else every model."""
    from n6.board import load_board
    chosen = [m for m in env["MODEL"].split(",") if m] if env.get("MODEL") else \
        list(load_board(board_file).images.models)
    return not chosen or name in chosen


# Made once: making an action signs its function's code.
# The options are the steps' signature (their repr), as SCons signs construction variables in varlist
_RUN_ACTION = SCons.Action.Action(_run_action, progress("RUN", lambda t, e: os.path.dirname(t[0].path)),
                                  varlist=["N6_RUN_OPTIONS"])
_VALIDATE_ACTION = SCons.Action.Action(_validate_action, progress("VALIDATE", lambda t, e: t[0].path),
                                       varlist=["N6_VALIDATE_OPTIONS"])


def generate(env):
    describe_targets(env, ("run", "run the chosen model(s) on the board (simulated without PORT=): outputs .npy, "
                                  "timing, run.json"), ("run-<model>", "the same for that model"),
                     ("validate", "run + compare with the reference (validate.json)"),
                     ("validate-<model>", "the same for that model"))
    env.AddMethod(run_targets, "RunTargets")


def exists(env):
    return True
