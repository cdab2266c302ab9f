"""ST Edge AI Core as an SCons tool: finds the install (STEDGEAI_CORE_DIR, else the simulated one
this project builds) and provides the Generate builder.

Generate: model + profile JSON + .mpool (+ the tool and its release, options as Value nodes)
→ every file `stedgeai generate` writes, named by an emitter from the same inputs the action uses."""
import glob
import json
import os
import sys

import SCons.Action
import SCons.Builder
import SCons.Node.FS
import SCons.Scanner
import SCons.Script

from n6 import build_layout, gcc_flags
from n6.errors import N6Error
from n6.releases import Release, generate_outputs, release
from n6.stedgeai_install import CLI, RUNTIME_LIB_GLOB, SW_LIB_INC, check_install, install_release
from n6.variables import defaults
from n6_scons import progress, reports_errors, say, sim_tool_code

from n6.simulators import load as load_simulator


# -- install discovery -----------------------------------------------------------------------------

_INSTALLS: dict[tuple[str | None, str, str], tuple[str, Release, bool]] = {}   # (root, release, build) → install


def _install(env):
    """(root, release, simulated) of the ST Edge AI Core the build uses; found once per build. The
    simulated install's root is relative to the project's top (unless BUILD_DIR lies outside it):
    compile lines, the paths compiled into the images (__FILE__) and so the signatures and the
    CacheDir keys are the same in every checkout. A real install's root stays as given: it lies
    outside the checkout, and ST's flow compiles with the install's own path."""
    key = (env.get("STEDGEAI_CORE_DIR"), env["STEDGEAI_SIM_RELEASE"], env.subst("$BUILD_DIR"))
    if key not in _INSTALLS:
        root = key[0]
        if root:
            _INSTALLS[key] = check_install(root), install_release(root), False
        else:
            rel = release(key[1])
            _INSTALLS[key] = env.Dir(build_layout.sim_install("$BUILD_DIR", rel.core)).path, rel, True
    return _INSTALLS[key]


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


@reports_errors
def _generate_action(target, source, env):
    from n6.stedgeai_generate import run_generate
    run_generate(json.loads(source[-1].read()), [t.path for t in target], bool(env.get("VERBOSE")),
                 env["STEDGEAI_TIMEOUT"], say)
    return 0


def generate_model(env, spec, outdir):
    """Targets of `stedgeai generate` for one source model, into `outdir`."""
    args = _generate_args(env, spec)
    sources = [spec.model_file, spec.profile_file, args["mpool"]]
    if args["simulated"]:   # the tool's side of the install (Utilities/), not the runtime (Middlewares/), and
        # the code its launcher runs, not the launcher: it names this checkout's folders (checkouts share a cache)
        from stedgeai_sim.install import installed_files
        root = _install(env)[0]
        sources += [os.path.join(root, f) for f in installed_files(args["release"])
                    if f.startswith("Utilities") and f != CLI]
        sources.append(sim_tool_code(env))
    else:
        sources.append(args["tool"])
    targets = env.StedgeaiGenerate(env.Dir(outdir), sources + [env.Value(json.dumps(args, sort_keys=True))])
    env.Clean(targets, os.path.join(os.path.dirname(outdir), "st_ai_ws"))
    return targets


def _onnx_external_data(node, env, path):
    """An ONNX model's external data files are sources of its generate step: scanned (and with
    implicit_cache remembered) when the model changes, not read on every build."""
    from n6.models import onnx_external_data
    return [env.File(f) for f in onnx_external_data(node.abspath)]


def generate(env):
    env.SetDefault(**defaults("STEDGEAI_CORE_DIR", "STEDGEAI_SIM_RELEASE", "BUILD_DIR", "STEDGEAI_TIMEOUT"))
    env["BUILDERS"]["StedgeaiGenerate"] = SCons.Builder.Builder(
        action=SCons.Action.Action(_generate_action, progress("GEN")), emitter=_generate_emitter,
        target_factory=env.Dir, source_factory=SCons.Node.FS.Entry, single_source=False)
    env.Append(SCANNERS=SCons.Scanner.Scanner(_onnx_external_data, name="OnnxExternalData", skeys=[".onnx"]))
    env.AddMethod(generate_model, "StedgeaiGenerateModel")
    env.AddMethod(build_sim_install, "StedgeaiSimulatedInstall")
    env.AddMethod(lambda e: _install(e), "StedgeaiInstall")
    env.AddMethod(runtime_lib, "StedgeaiRuntimeLib")


def exists(env):
    return True
