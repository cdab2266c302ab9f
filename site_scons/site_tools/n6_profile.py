"""`scons profile` / `scons profile-<model>`: the per-epoch profile of each model on the board,
merged with its c_info.json, as reports in build/<model>/profile/.

  MEASURE  measurement.json ← what the model's set is made of (images, firmwares, board file: the
           step puts the set on the board first unless it is there), the profile options
           (varlist), the measuring code.
           FORCE=1 measures again. The profile it replaces becomes the diff's baseline.
  REPORT   profile.json/.svg/.png/.trace.json/.html/.txt (+ profile.diff.json) ← measurement.json,
           c_info.json (if any), PROFILE_BASELINE (its path; its content unless it is the model's
           own profile.json), the report code. No board involved.
  (alias)  prints profile.txt: the stored report when nothing changed."""
import os

import SCons.Action
import SCons.Script

from n6.build_layout import ModelLayout
from n6.errors import N6Error
from n6.profiling import DIFF, FILES, console_part
from n6.run.options import ProfileOptions
from n6.variables import defaults
from n6_scons import board_action, describe_targets, progress, reports_errors, say, session_options, \
    sim_board_code, step_code, uses_tool

MEASURE_MODULES = ["n6.aivalidation", "n6.flash.step", "n6.jsonfile", "n6.profiling.measure", "n6.run.session"]
REPORT_MODULES = ["n6.profiling.steps"]


@reports_errors
@board_action(lambda env: env["N6_PROFILE_OPTIONS"], progress("PROFILE"))
def _measure_action(target, source, env, opts):
    from n6.flash.step import on_board_path
    from n6.jsonfile import read_json
    from n6.profiling.measure import measure, save_measurement
    from n6.run.session import board_session
    stamp = on_board_path(opts.flash, target[0].dir.dir.name)
    on_board = read_json(stamp, "on_board.json")
    with board_session(opts.session, stamp, say) as (client, _, simulated):
        m = measure(client, opts.c_name, samples=opts.samples, simulated=simulated,
                    board=f"{on_board.get('board', '')} {on_board.get('probe', '')}".strip())
    save_measurement(m, target[0].abspath)


@reports_errors
def _report_action(target, source, env):
    from n6.profiling.steps import report_step
    report_step(source[0].abspath, env["N6_C_INFO"], os.path.dirname(target[0].abspath),
                env["N6_BASELINE"] or None, name=target[0].dir.dir.name, log=lambda text: None)


_MEASURE_ACTION = SCons.Action.Action(_measure_action, None, varlist=["N6_PROFILE_OPTIONS"])


def _show(target, source, env):
    """The alias's action: print the stored report (fresh or not)."""
    for node in source:
        if node.name == "profile.txt":
            with open(node.abspath, encoding="utf-8") as f:
                print(console_part(f.read()), end="")
            say(f"  HTML     {os.path.join(node.dir.path, 'profile.html')} (timeline: profile.trace.json)")


def profile_targets(env, c_infos):
    """`profile` / `profile-<model>` for what the command line asks (an ordinary build defines no
    profile step); call after FlashTargets. c_infos: model → (its c_info.json node, else the path
    one would have, its c-name)."""
    baseline = env.get("PROFILE_BASELINE")
    models, project = env.DeployModels("profile")
    if models and baseline:     # a bad one: one line now, before any profile is measured or replaced
        if not os.path.isfile(baseline):
            raise N6Error(baseline, "PROFILE_BASELINE file not found",
                          "give a profile.json saved from build/<model>/profile/")
        from n6.profiling.diff import read_profile
        read_profile(baseline)
    aliases = []
    for name in models:
        c_info, c_name = c_infos[name]
        out = ModelLayout("$BUILD_DIR", name).profile
        flash, made_of, flash_step, board = env.BoardSet(name)
        opts = ProfileOptions(session_options(env, board), flash, c_name, int(env["PROFILE_SAMPLES"]))
        measurement = env.Command(os.path.join(out, "measurement.json"),
                                  made_of + [env.File(opts.session.board_file),
                                             step_code(env, "profile-measure", MEASURE_MODULES, __file__)] +
                                  sim_board_code(env, opts.session),
                                  _MEASURE_ACTION, N6_PROFILE_OPTIONS=opts)
        if flash_step:
            env.Requires(measurement, flash_step)
        env.NoCache(measurement)
        env.Precious(measurement)
        if env.get("FORCE"):
            env.AlwaysBuild(measurement)
        targets = [env.File(os.path.join(out, f)) for f in FILES]
        # the model's own profile.json as the baseline is read before the step rewrites it: a
        # target, never a source of its own step (the path, in varlist, reruns the step)
        base = env.File(baseline) if baseline else None
        sources = [measurement, step_code(env, "profile-report", REPORT_MODULES, __file__)] + \
            ([] if isinstance(c_info, str) else [c_info]) + ([base] if base and base not in targets else [])
        reports = env.Command(targets, sources,
                              SCons.Action.Action(_report_action, progress("REPORT", lambda t, e: t[0].dir.path),
                                                  varlist=["N6_C_INFO", "N6_BASELINE"]),
                              N6_C_INFO=str(c_info), N6_BASELINE=baseline or "")
        env.SideEffect(os.path.join(out, DIFF), reports)
        env.NoCache(reports)
        env.Precious(reports)       # kept until the step rewrites them: the own profile.json can be its baseline
        env.UsesBoard(name, measurement)
        env.DeployResult("profile", name, reports)
        alias = env.Alias(f"profile-{name}", reports, SCons.Action.Action(_show, None))
        env.AlwaysBuild(alias)
        aliases.append(alias)
        if name in project:
            env.Alias("profile", alias)
    return aliases


def generate(env):
    uses_tool(env, "n6_flash")   # the model sets on the board, the deploy order (its FlashTargets comes first)
    describe_targets(env, ("profile", "the per-epoch profile of the chosen model(s), else every model: table, JSON, "
                                      "picture, trace, HTML, diff"),
                     ("profile-<model>", "the same for that model"))
    env.SetDefault(**defaults("PROFILE_SAMPLES", "PROFILE_BASELINE"))
    env.AddMethod(profile_targets, "ProfileTargets")


def exists(env):
    return True
