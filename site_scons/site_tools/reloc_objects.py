"""The compiled objects of a relocatable image, with ST's flags (reloc-format.md §1.3):

  env.RelocObjects(arm, opts, name, layout, prepared) → (first, late): the objects of one model
  in ST's link order, before and after the runtime archive.

The model's prepared sources are compiled per model, in its build folder. The LL_ATON runtime
sources are compiled once per flag set into build/runtime/<flags>/ and shared by every model with
those flags: ST's makefile compiles them per model, the objects are the same bytes. Those that
never read the model's configuration header compile as they are; the reloc callbacks, which read
it but use none of its values, with a neutral one, a step that checks it (n6.reloc.shared)."""
import os
from dataclasses import dataclass
from typing import Any

import SCons.Action
import SCons.Builder
import SCons.Node
import SCons.Scanner.C

from n6 import build_layout, gcc_flags
from n6.reloc.names import CONF_NAME
from n6.stedgeai_install import (CONF_SHARED_SOURCES, LL_ATON, NDEBUG_SOURCES, PLATFORM, SW_LIB_INC,
                                 SW_LIB_INC_SOURCES, is_simulated_install, runtime_sources)
from n6_scons import ArgvAction, progress, reports_errors, step_code


def reloc_objects(env, arm, opts, name, layout, prepared):
    """(first, late) objects of the model `name` (its ImageOptions `opts`, build folder `layout`,
    the RelocPrepare targets `prepared`) compiled in the arm_gcc environment `arm`."""
    install_root, _, simulated = env.StedgeaiInstall()
    rt_dir, plt_dir = os.path.join(install_root, LL_ATON), os.path.join(install_root, PLATFORM)
    flags = _Flags(arm, gcc_flags.compile_flags(opts.secure), [rt_dir, plt_dir, os.path.dirname(plt_dir)],
                  os.path.join(install_root, SW_LIB_INC))
    model_defines = _quoted(gcc_flags.defines(name, opts.dbg_info, opts.ecblob_in_params))

    def model_obj(src, name_):
        return _compiled(flags, layout.obj(name_), src, name_, model_defines, [env.Dir(layout.reloc)])

    shared = build_layout.runtime_objects(env.subst("$BUILD_DIR"), gcc_flags.flag_set_name(
        opts.secure, opts.dbg_info, opts.ecblob_in_params))

    def shared_obj(src, defines, shared_conf=False):
        return _compiled(flags, os.path.join(shared, src[:-2] + ".o"), os.path.join(rt_dir, src), src, defines, [],
                         shared_conf)

    runtime_defines = _quoted(gcc_flags.defines(None, opts.dbg_info, opts.ecblob_in_params))
    conf_defines = gcc_flags.defines(CONF_NAME, opts.dbg_info, opts.ecblob_in_params)
    reloc_c, mempools_c, conf_h = prepared[:3]
    # the build's own simulated install (laid out or not yet: -h, -c), or a copy of it as STEDGEAI_CORE_DIR
    runtime = [shared_obj(s, runtime_defines)
               for s in runtime_sources(simulated or is_simulated_install(install_root))]
    first = [model_obj(reloc_c, f"{name}_reloc.c")] + runtime
    late = [model_obj(mempools_c, f"{name}_reloc_mempools.c")] + \
        [shared_obj(s, conf_defines, shared_conf=True) for s in CONF_SHARED_SOURCES]
    # MODEL_CONF is a macro include that no scanner sees: the model's sources read the prepared
    # config header.
    env.Depends([first[0], late[0]], [conf_h] + prepared[4:])
    return first, late


def _quoted(defines):
    return [d.replace('"', '\\"') for d in defines]   # the shell strips quotes SCons leaves bare


@dataclass(frozen=True)
class _Flags:
    """What every object of one model is compiled with: the arm_gcc environment, ST's flags, the
    install's include folders (and the one some sources add)."""
    arm: object
    ccflags: list
    cpppath: list
    sw_lib_inc: str


_OBJECTS: dict[str, Any] = {}   # object path → its node: a shared object is declared once, by the first model


def _compiled(flags, target, src, name, defines, includes, shared_conf=False):
    """The object `target` of C file `src` (named `name`: its extra flags) with ST's flags;
    `shared_conf`: compiled with a neutral configuration header, checked (n6.reloc.shared)."""
    if target not in _OBJECTS:
        cpppath = flags.cpppath + includes + ([flags.sw_lib_inc] if name in SW_LIB_INC_SOURCES else [])
        argv = flags.arm.CompileArgv(flags.ccflags, defines + (["NDEBUG"] if name in NDEBUG_SOURCES else []), cpppath)
        builder = flags.arm.RelocSharedCompile if shared_conf else flags.arm.RelocCompile
        _OBJECTS[target] = builder(target, src, N6_ARGV=argv, CPPPATH=cpppath)   # CPPPATH: for the scanner
        if shared_conf:
            flags.arm.Depends(_OBJECTS[target], step_code(flags.arm, "shared-compile", ["n6.reloc.shared"], __file__))
    return _OBJECTS[target]


@reports_errors
def _shared_compile_action(target, source, env):
    from n6.reloc.shared import compile_shared
    compile_shared(env["N6_ARGV"], source[0].path, target[0].path)


def generate(env):
    env["BUILDERS"]["RelocCompile"] = SCons.Builder.Builder(   # one C file, the cc tool's command line
        action=ArgvAction("$CCCOMSTR"), source_scanner=SCons.Scanner.C.CScanner())
    env["BUILDERS"]["RelocSharedCompile"] = SCons.Builder.Builder(   # run as a subprocess: defines unquoted
        action=SCons.Action.Action(_shared_compile_action, progress("CC"), varlist=["N6_ARGV"]),
        source_scanner=SCons.Scanner.C.CScanner())
    env.AddMethod(reloc_objects, "RelocObjects")


def exists(env):
    return True
