"""ST Edge AI Core as an SCons tool: finds the install (STEDGEAI_CORE_DIR, else the simulated one
this project builds) and provides the Generate builder.

Generate: model + profile JSON + .mpool (+ the tool and its release, options as Value nodes)
→ every file `stedgeai generate` writes, named by an emitter from the same inputs the action uses."""
import functools
import glob
import json
import os
import sys

import SCons.Action
import SCons.Builder
import SCons.Node.FS
import SCons.Script

from n6 import build_layout, gcc_flags
from n6.errors import N6Error
from n6.releases import generate_outputs, release
from n6.stedgeai_install import CLI, RUNTIME_LIB_GLOB, SW_LIB_INC, check_install, install_release
from n6.variables import defaults
from n6_scons import code_version, module_closure, n6_imports, progress, reports_errors, say

from n6.simulators import load as load_simulator, sources as simulator_sources


# -- install discovery -----------------------------------------------------------------------------

_INSTALLS = {}


def _install(env):
    """(root, release, simulated) of the ST Edge AI Core the build uses; found once per build."""
    key = (env.get("STEDGEAI_CORE_DIR"), env["STEDGEAI_SIM_RELEASE"], env.subst("$BUILD_DIR"))
    if key not in _INSTALLS:
        root = key[0]
        if root:
            _INSTALLS[key] = check_install(root), install_release(root), False
        else:
            rel = release(key[1])
            _INSTALLS[key] = env.Dir(build_layout.sim_install("$BUILD_DIR", rel.core)).abspath, rel, True
    return _INSTALLS[key]


@functools.cache
def sim_python_sources():
    """The simulated tool's own code and the n6 modules it runs: a change regenerates every model."""
    own = [f for f in simulator_sources("stedgeai_sim") if f.endswith(".py")]
    return sorted(own) + sorted(module_closure({m for f in own for m in n6_imports(f)}))


def build_sim_install(env, arm_env):
    """Lay out the simulated install, then build its PIC runtime archive with the real GCC. The
    tree is laid out at once (when what it is made from changed), not as build steps: like a real
    install it is in place before the build reads it, and the build takes it by the same path."""
    sim = load_simulator("stedgeai_sim.install")
    root, rel, _ = _install(env)
    if not (SCons.Script.GetOption("help") or SCons.Script.GetOption("clean")):
        if sim.sync(root, rel.core, sys.executable, env.N6ContentSignature):
            say(f"  INSTALL  {os.path.relpath(root)} (simulated ST Edge AI Core {rel.core_full})")
    objs = [arm_env.Object(os.path.join(build_layout.sim_install_objects(env.subst("$BUILD_DIR"), rel.core),
                                        os.path.basename(src)[:-2] + ".o"), src,
                           CPPPATH=[os.path.join(root, SW_LIB_INC)],
                           CCFLAGS=gcc_flags.RUNTIME_LIB)
            for src in sim.runtime_lib_sources()]
    lib = arm_env.StaticLibrary(os.path.join(root, sim.runtime_lib_path(rel.core)), objs)
    env.Clean(lib, env.Dir(root))
    return lib


def runtime_lib(env):
    """The PIC runtime archive: the simulated one this build makes, or the first in a real install."""
    root, rel, simulated = _install(env)
    if simulated:
        return env.File(os.path.join(root, load_simulator("stedgeai_sim.install").runtime_lib_path(rel.core)))
    found = sorted(glob.glob(os.path.join(root, RUNTIME_LIB_GLOB)))
    if not found:
        raise N6Error(root, f"no {RUNTIME_LIB_GLOB} in the install",
                      "install the STM32N6 runtime libraries of ST Edge AI Core")
    return env.File(found[0])


# -- Generate ---------------------------------------------------------------------------------------

def _generate_args(env, spec):
    """Normalised generate options: the same dict feeds the emitter, the action and a Value node."""
    from n6.neural_art_profile import read_profile   # source models only: a prebuilt-only tree never loads it
    root, rel, simulated = _install(env)
    profile = read_profile(spec.profile_file, spec.profile)
    return {"release": rel.core, "model": spec.model_file, "profile": spec.profile, "profile_file": spec.profile_file,
            "mpool": profile.memory_pool, "name": spec.c_name, "input_data_type": spec.input_data_type,
            "output_data_type": spec.output_data_type, "epoch_controller": profile.epoch_controller,
            "tool": os.path.join(root, CLI), "simulated": simulated, "extra": list(spec.generate_options),
            "warnings": list(profile.warnings)}


def _generate_emitter(target, source, env):
    from n6.mpool import read_mpool
    from n6.placement import params_pool
    args = json.loads(source[-1].read())
    outdir = target[0]
    rel = release(args["release"])
    mpool = read_mpool(args["mpool"])
    pool = params_pool(mpool)
    stem = os.path.splitext(os.path.basename(args["model"]))[0]
    names = generate_outputs(rel, args["name"], stem, args["epoch_controller"], [pool.fname] if pool else [],
                             mpool.mem_file_prefix)
    return [outdir.File(n) for n in names], source


def _generate_argv(args, outdir):
    argv = [args["tool"], "generate", "-m", args["model"], "--target", "stm32n6",
            "--st-neural-art", f"{args['profile']}@{args['profile_file']}",
            "-o", outdir, "-w", os.path.join(os.path.dirname(outdir), "st_ai_ws")]
    if args["name"]:
        argv += ["-n", args["name"]]
    for key in ("input_data_type", "output_data_type"):
        if args[key]:
            argv += ["--" + key.replace("_", "-"), args[key]]
    return argv + args["extra"]


@reports_errors
def _generate_action(target, source, env):
    from n6.reloc.prepare import check_generated
    from n6.tool_runner import ToolRunner
    args = json.loads(source[-1].read())
    outdir = os.path.dirname(target[0].path)
    for warning in args["warnings"]:
        say(f"  WARNING  {warning}")
    runner = ToolRunner(verbose=bool(env.get("VERBOSE")), timeout=env["STEDGEAI_TIMEOUT"], echo=say)
    result = runner.run(_generate_argv(args, outdir))
    failed = _generate_failure(result, args["model"], env["STEDGEAI_TIMEOUT"])
    if failed is None and not os.path.exists(target[0].path):
        failed = N6Error(args["model"], f"stedgeai generate wrote no {target[0].name} (exit 0)" +
                         _last_line(result.output, "; last output: "), _see(result.output))
    missing = [t.path for t in target if not os.path.exists(t.path)] if failed is None else []
    if missing:
        failed = N6Error(missing[0], "stedgeai did not write this file although the profile and .mpool call for it",
                         "check the profile's memory pools; constants must go to the constants_preferred pool")
    elif failed is None:
        try:
            check_generated(target[0].path)
        except N6Error as e:
            failed = e
    if failed is not None:
        _show_output(result.output)
        for t in target:           # what a failed run wrote is no output to build on
            if os.path.exists(t.path):
                os.unlink(t.path)
        raise failed
    return 0


SHOWN_LINES = 40      # of a failed generate's output, above the error line


def _generate_failure(result, model, timeout):
    """The one-line error of a generate that did not finish well, else None."""
    if result.timed_out:
        return N6Error("STEDGEAI_TIMEOUT", f"stedgeai generate of {model} stopped after {timeout:g} s" +
                       _last_line(result.output, "; last output: "),
                       _see(result.output) + "; give it more time with STEDGEAI_TIMEOUT=<seconds>")
    if result.returncode:
        last = _last_line(result.output, ": ")
        return N6Error(None, f"stedgeai generate of {model} failed (exit {result.returncode})" + last,
                       None if "(fix: " in last else _see(result.output))
    return None


LAST_LINE_CHARS = 300      # of the tool's last line in the one-line error


def _last_line(output, lead):
    """The tool's last line (its error, usually), or that it printed nothing; control characters
    (a tool printing binary) shown escaped, so that the error stays one plain line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        return " with no output"
    last = "".join(c if c.isprintable() else repr(c)[1:-1] for c in lines[-1].removeprefix("stedgeai: error: "))
    return lead + (last if len(last) <= LAST_LINE_CHARS else last[:LAST_LINE_CHARS] + "...")


def _see(output):
    return "see the tool's output above" if output.strip() else "run the command VERBOSE=1 shows by hand"


def _show_output(output):
    lines = output.rstrip().splitlines()
    if lines:
        skipped = len(lines) - SHOWN_LINES
        say((f"  ... ({skipped} lines before)\n" if skipped > 0 else "") +
            "\n".join("  | " + line for line in lines[-SHOWN_LINES:]))


def generate_model(env, spec, outdir):
    """Targets of `stedgeai generate` for one source model, into `outdir`."""
    args = _generate_args(env, spec)
    sources = [spec.model_file, *spec.data_files, spec.profile_file, args["mpool"], args["tool"]]
    if args["simulated"]:   # the tool's side of the install (Utilities/), not the runtime (Middlewares/)
        from stedgeai_sim.install import installed_files
        root = _install(env)[0]
        sources += [os.path.join(root, f) for f in installed_files(args["release"]) if f.startswith("Utilities")]
        sources.append(code_version(env, "stedgeai-sim", sim_python_sources()))
    targets = env.StedgeaiGenerate(env.Dir(outdir), sources + [env.Value(json.dumps(args, sort_keys=True))])
    env.Clean(targets, os.path.join(os.path.dirname(outdir), "st_ai_ws"))
    return targets


def generate(env):
    env.SetDefault(**defaults("STEDGEAI_CORE_DIR", "STEDGEAI_SIM_RELEASE", "BUILD_DIR", "STEDGEAI_TIMEOUT"))
    env["BUILDERS"]["StedgeaiGenerate"] = SCons.Builder.Builder(
        action=SCons.Action.Action(_generate_action, progress("GEN")), emitter=_generate_emitter,
        target_factory=env.Dir, source_factory=SCons.Node.FS.Entry, single_source=False)
    env.AddMethod(generate_model, "StedgeaiGenerateModel")
    env.AddMethod(build_sim_install, "StedgeaiSimulatedInstall")
    env.AddMethod(lambda e: _install(e), "StedgeaiInstall")
    env.AddMethod(runtime_lib, "StedgeaiRuntimeLib")


def exists(env):
    return True
