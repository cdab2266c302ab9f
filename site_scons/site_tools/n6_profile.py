"""`scons profile` / `scons profile-<model>`: the per-epoch profile of each model on the board,
merged with its c_info.json, as reports in build/<model>/profile/.

  MEASURE  measurement.json ← on_board.json (what the board holds: a changed image is flashed
           first), the board file, a Value with the profile options, the measuring code.
           FORCE=1 measures again. The profile it replaces becomes the diff's baseline.
  REPORT   profile.json/.svg/.png/.trace.json/.html/.txt (+ profile.diff.json) ← measurement.json,
           c_info.json, PROFILE_BASELINE, the report code. No board involved.
  (alias)  prints profile.txt: the stored report when nothing changed."""
import glob
import json
import os

import SCons.Action
import SCons.Script

from n6.profiling.steps import DIFF, FILES
from n6_scons import ROOT, code_version, progress, reports_errors

PROFILING = os.path.join(ROOT, "site_scons", "n6", "profiling")
MEASURE_CODE = ("measure.py", "messages.py", "measurement.py")


def _measure_code(env):
    files = [os.path.join(PROFILING, f) for f in MEASURE_CODE]
    files += glob.glob(os.path.join(ROOT, "site_scons", "n6", "aivalidation", "*.py"))
    return code_version(env, "profile-measure", files)


def _report_code(env):
    return code_version(env, "profile-report", glob.glob(os.path.join(PROFILING, "*.py")))


@reports_errors
def _measure_action(target, source, env):
    from n6.profiling.measure import measure
    from n6.profiling.steps import save_measurement
    opts = json.loads(source[-1].read())
    with env.OpenBoardClient(opts["board"]) as (client, simulated, board_name):
        m = measure(client, opts["c_name"], samples=opts["samples"], simulated=simulated, board=board_name)
    save_measurement(m, target[0].abspath)


@reports_errors
def _report_action(target, source, env):
    from n6.profiling.steps import report_step
    baseline = env.get("PROFILE_BASELINE") or None
    report_step(source[0].abspath, source[1].abspath, os.path.dirname(target[0].abspath), baseline,
                log=lambda text: None)


def _show(target, source, env):
    for node in source:
        if node.name == "profile.txt":
            with open(node.abspath, encoding="utf-8") as f:
                print(f.read(), end="")


def profile_targets(env, models):
    """models: {name: (c_info.json node, on_board.json node, c-name)} → `profile-<name>` aliases
    and `profile`."""
    aliases = []
    baseline = env.get("PROFILE_BASELINE")
    for name, (c_info, on_board, c_name) in sorted(models.items()):
        out = os.path.join("$BUILD_DIR", name, "profile")
        opts = {"board": env["BOARD"], "samples": int(env.get("PROFILE_SAMPLES", 1)), "c_name": c_name}
        measurement = env.Command(os.path.join(out, "measurement.json"),
                                  [on_board, _measure_code(env), env.Value(json.dumps(opts, sort_keys=True))],
                                  SCons.Action.Action(_measure_action, progress("PROFILE")))
        env.NoCache(measurement)
        env.Precious(measurement)          # the previous one is the next diff's baseline
        if env.get("FORCE"):
            env.AlwaysBuild(measurement)
        sources = [measurement, c_info, _report_code(env)] + ([env.File(baseline)] if baseline else [])
        reports = env.Command([os.path.join(out, f) for f in FILES], sources,
                              SCons.Action.Action(_report_action, progress("REPORT")))
        env.SideEffect(os.path.join(out, DIFF), reports)
        env.NoCache(reports)
        aliases.append(env.Alias(f"profile-{name}", reports, SCons.Action.Action(_show, None)))
    env.Alias("profile", aliases)
    return aliases


def generate(env):
    env.AddMethod(profile_targets, "ProfileTargets")


def exists(env):
    return True
