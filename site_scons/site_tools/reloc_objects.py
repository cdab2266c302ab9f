"""The compiled objects of a relocatable image, with ST's flags (reloc-format.md §1.3):

  env.RelocObjects(arm, opts, name, layout, prepared) → (first, late): the objects of one model
  in ST's link order, before and after the runtime archive.

The model's prepared sources and the reloc callbacks are compiled per model, in its build
folder. The LL_ATON runtime sources that never read the model's configuration are compiled once
per flag set into build/runtime/<flags>/ and shared by every model with those flags: ST's
makefile compiles them per model, the objects are the same bytes."""
import os

import SCons.Action
import SCons.Builder
import SCons.Node
import SCons.Scanner.C

from n6 import build_layout, gcc_flags
from n6.stedgeai_install import LATE_SOURCES, LL_ATON, PLATFORM, RUNTIME_SOURCES, SW_LIB_INC

EXTRA_DEFINES = {"ll_aton_lib_sw_operators.c": ["NDEBUG"], "ecloader.c": ["NDEBUG"]}
NEEDS_SW_LIB_INC = ("ll_sw_integer.c", "ll_sw_float.c", "ecloader.c")


def reloc_objects(env, arm, opts, name, layout, prepared):
    """(first, late) objects of the model `name` (its ImageOptions `opts`, build folder `layout`,
    the RelocPrepare targets `prepared`) compiled in the arm_gcc environment `arm`."""
    install_root = env.StedgeaiInstall()[0]
    rt_dir, plt_dir = os.path.join(install_root, LL_ATON), os.path.join(install_root, PLATFORM)
    cenv = arm.Override({"CCFLAGS": gcc_flags.compile_flags(opts.secure),   # no copy
                         "CPPPATH": [rt_dir, plt_dir, os.path.dirname(plt_dir)],
                         "N6_SW_LIB_INC": os.path.join(install_root, SW_LIB_INC)})
    model_defines = _quoted(gcc_flags.defines(name, opts.dbg_info, opts.ecblob_in_params))

    def model_obj(src, name_):
        return _compiled(cenv, layout.obj(name_), src, name_, model_defines, [env.Dir(layout.reloc)])

    shared = build_layout.runtime_objects(env.subst("$BUILD_DIR"), gcc_flags.flag_set_name(
        opts.secure, opts.dbg_info, opts.ecblob_in_params))
    runtime_defines = _quoted(gcc_flags.defines(None, opts.dbg_info, opts.ecblob_in_params))
    reloc_c, mempools_c, conf_h = prepared[:3]
    first = [model_obj(reloc_c, f"{name}_reloc.c")] + \
        [_compiled(cenv, os.path.join(shared, s[:-2] + ".o"), os.path.join(rt_dir, s), s, runtime_defines, [])
         for s in RUNTIME_SOURCES]
    late = [model_obj(mempools_c, f"{name}_reloc_mempools.c")] + \
        [model_obj(os.path.join(rt_dir, s), s) for s in LATE_SOURCES]
    # MODEL_CONF is a macro include that no scanner sees: the model's sources and the runtime's
    # reloc callbacks (through ll_aton_reloc_network.h) read the prepared config header.
    env.Depends([first[0]] + late, [conf_h] + prepared[4:])
    return first, late


def _quoted(defines):
    return [d.replace('"', '\\"') for d in defines]   # the shell strips quotes SCons leaves bare


# object path → its node: a shared object is declared once, by the first model
_OBJECTS: dict[str, SCons.Node.Node] = {}


def _compiled(cenv, target, src, name, defines, includes):
    """The object `target` of C file `src` (named `name`: its extra flags) with ST's flags."""
    if target not in _OBJECTS:
        flags = cenv.ExpandedFlags(CPPDEFINES=defines + EXTRA_DEFINES.get(name, []),
                                   CPPPATH=cenv["CPPPATH"] + includes +
                                   ([cenv["N6_SW_LIB_INC"]] if name in NEEDS_SW_LIB_INC else []))
        _OBJECTS[target] = cenv.Override(flags).RelocCompile(target, src)
    return _OBJECTS[target]


def generate(env):
    env["BUILDERS"]["RelocCompile"] = SCons.Builder.Builder(   # one C file, the cc tool's command line
        action=SCons.Action.Action("$CCCOM", "$CCCOMSTR"), source_scanner=SCons.Scanner.C.CScanner())
    env.AddMethod(reloc_objects, "RelocObjects")


def exists(env):
    return True
