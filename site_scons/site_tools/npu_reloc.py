"""Relocatable Neural-ART model images as SCons builders:

  RelocPrepare  network.c (+ _ecblobs.h, c_info.json, the .raw names) → the reloc sources and
                the params description (which .raw files, in which order)
  RelocCompile  one reloc or LL_ATON runtime source → its object, with ST's flags (arm_gcc env)
  RelocLink     objects + runtime archive → <name>.elf + <name>.map, ST's link order
  RelocCode     <name>.elf → the code image (all of the image but the params; pyelftools)
  RelocPack     code image + .raw files → <name>_rel.bin [+ _rel_params.bin] + results JSON,
                then the image checker (XIP and COPY) and the size gate.

A weight change reaches pack only: the compiled sources never contain the weights, their size
or their CRC (pack writes those into rt_ctx), and prepare reads the .raw names, not the bytes."""
import os
import sys

import SCons.Action
import SCons.Builder
import SCons.Scanner.C

from n6 import build_layout, gcc_flags
from n6.board_files import board_path
from n6.models import c_identifier
from n6.paths import FIRMWARE
from n6.reloc.names import code_facts_path, params_path, prepare_outputs
from n6.reloc.options import BUDGETS, ImageOptions, PackOptions, PrepareOptions, size_budgets
from n6.stedgeai_install import LATE_SOURCES, LL_ATON, PLATFORM, RUNTIME_SOURCES, SW_LIB_INC
from n6.variables import VARIABLES, defaults
from n6_scons import describe_targets, progress, reports_errors, say, step_code

LINKER_SCRIPT = os.path.join(FIRMWARE, "reloc_network_gcc.ld")
EXTRA_DEFINES = {"ll_aton_lib_sw_operators.c": ["NDEBUG"], "ecloader.c": ["NDEBUG"]}
NEEDS_SW_LIB_INC = ("ll_sw_integer.c", "ll_sw_float.c", "ecloader.c")


# -- prepare ---------------------------------------------------------------------------------------

def _prepare_emitter(target, source, env):
    opts = env["N6_PREPARE_OPTIONS"]
    return [target[0].File(n) for n in prepare_outputs(opts.name, opts.epoch_controller)], source


@reports_errors
def _prepare_action(target, source, env):
    from n6.reloc.prepare import prepare
    opts = env["N6_PREPARE_OPTIONS"]
    prepare(source[0].path, os.path.dirname(target[0].path), opts.name, opts.ecblob_in_params,
            list(opts.install_version), opts.absolute_flash_pools, opts.simulated_install)


# -- model ------------------------------------------------------------------------------------------

def reloc_options(env, spec):
    """Per-model options: model.json "reloc" overrides the command-line variables."""
    return ImageOptions.of({"secure": env["RELOC_SECURE"], "split": env["RELOC_SPLIT"],
                            "dbg_info": env["RELOC_DBG_INFO"],
                            "ecblob_in_params": env["RELOC_ECBLOB_IN_PARAMS"], "name": env.get("RELOC_NAME") or None},
                           spec.reloc, os.path.join(spec.path, "model.json"))


def reloc_name(env, spec, network_c):
    """The image's name (RELOC_NAME / model.json "reloc" "name", else the network file's stem): its
    files are <name>_rel.bin, and the board knows the model by it."""
    return reloc_options(env, spec).name or os.path.splitext(os.path.basename(str(network_c)))[0]


def check_variables(env):
    """The variables every model shares: a bad one fails at once, not once per model."""
    if env.get("RELOC_NAME"):
        c_identifier(env["RELOC_NAME"], "RELOC_NAME", "image name", "set RELOC_NAME to a C identifier, e.g. kws")
    _budget_board(env)


def build_reloc(env, arm, spec, network_c, inputs, epoch_controller, layout):
    """Nodes of the relocatable image of one model, in its build folder `layout`
    (n6.build_layout.ModelLayout). `inputs`: the files next to `network_c` that the steps read:
    c_info.json and _ecblobs.h (prepare), the .raw files (pack; prepare sees only their names, so
    new weights never rerun it)."""
    opts = reloc_options(env, spec)
    name = reloc_name(env, spec, network_c)
    install_root, install_rel, simulated = env.StedgeaiInstall()
    rt_dir = os.path.join(install_root, LL_ATON)
    plt_dir = os.path.join(install_root, PLATFORM)
    runtime_lib = env.StedgeaiRuntimeLib()
    build = layout.reloc
    raws = [n for n in inputs if str(n).endswith(".raw")]
    prep_opts = PrepareOptions(name, opts.ecblob_in_params, epoch_controller, bool(env["RELOC_ABSOLUTE_FLASH_POOLS"]),
                               simulated, tuple(install_rel.atonn), tuple(sorted(str(r) for r in raws)))
    prepared = env.RelocPrepare(env.Dir(build), [network_c] + [n for n in inputs if n not in raws],
                                N6_PREPARE_OPTIONS=prep_opts)
    reloc_c, mempools_c, conf_h, params_desc = prepared[:4]

    cenv = arm.Override({"CCFLAGS": gcc_flags.compile_flags(opts.secure),   # no copy
                         "CPPPATH": [rt_dir, plt_dir, os.path.dirname(plt_dir)],
                         "N6_SW_LIB_INC": os.path.join(install_root, SW_LIB_INC)})
    model_defines = _quoted(gcc_flags.defines(name, opts.dbg_info, opts.ecblob_in_params))

    def model_obj(src, name_):
        return _compiled(cenv, layout.obj(name_), src, name_, model_defines, [env.Dir(build)])

    # ST's makefile compiles the runtime per model; the sources that never read the model's
    # configuration make the same object for every model with the same flags: compiled once.
    shared = build_layout.runtime_objects(env.subst("$BUILD_DIR"), gcc_flags.flag_set_name(
        opts.secure, opts.dbg_info, opts.ecblob_in_params))
    runtime_defines = _quoted(gcc_flags.defines(None, opts.dbg_info, opts.ecblob_in_params))
    first = [model_obj(reloc_c, f"{name}_reloc.c")] + \
        [_compiled(cenv, os.path.join(shared, s[:-2] + ".o"), os.path.join(rt_dir, s), s, runtime_defines, [])
         for s in RUNTIME_SOURCES]
    late = [model_obj(mempools_c, f"{name}_reloc_mempools.c")] + \
        [model_obj(os.path.join(rt_dir, s), s) for s in LATE_SOURCES]
    # MODEL_CONF is a macro include that no scanner sees: the model's sources and the runtime's
    # reloc callbacks (through ll_aton_reloc_network.h) read the prepared config header.
    env.Depends([first[0]] + late, [conf_h] + prepared[4:])
    elf = cenv.RelocLink(layout.elf(name), _longest_first([first[0], late[0]], first[1:] + late[1:]),
                         RELOC_FIRST=first, RELOC_LATE=late, RELOC_LIB=runtime_lib,
                         RELOC_SCRIPT=env.File(LINKER_SCRIPT))   # relative to the project, as every path signed
    env.Depends(elf, [LINKER_SCRIPT, runtime_lib])
    code = env.RelocCode(layout.code(name), elf[0])
    board = _budget_board(env)
    pack_opts = PackOptions(name, opts.split, tuple(budgets(env).items()), board, bool(env["RELOC_COPY_MODE"]))
    image = env.RelocPack(layout.image(name), code + [params_desc] + raws,
                          N6_PACK_OPTIONS=pack_opts)
    env.Depends(prepared, step_code(env, "prepare", ["n6.reloc.prepare"], __file__))
    env.Depends(code, step_code(env, "image", ["n6.reloc.pipeline"], __file__))
    env.Depends(image, step_code(env, "pack", ["n6.reloc.pipeline", "n6.reloc.report", "n6.board"], __file__))
    if board:
        env.Depends(image, board)
    return image


def _quoted(defines):
    return [d.replace('"', '\\"') for d in defines]   # the shell strips quotes SCons leaves bare


_OBJECTS = {}   # object path → its node: a shared object is declared once, by the first model


def _compiled(cenv, target, src, name, defines, includes):
    """The object `target` of C file `src` (named `name`: its extra flags) with ST's flags."""
    if target not in _OBJECTS:
        flags = cenv.ExpandedFlags(CPPDEFINES=defines + EXTRA_DEFINES.get(name, []),
                                   CPPPATH=cenv["CPPPATH"] + includes +
                                   ([cenv["N6_SW_LIB_INC"]] if name in NEEDS_SW_LIB_INC else []))
        _OBJECTS[target] = cenv.Override(flags).RelocCompile(target, src)
    return _OBJECTS[target]


def _longest_first(prepared, runtime):
    """The link's inputs in the order SCons starts them under -j: the largest runtime source (a
    proxy for the longest compile) first, so that a compiler runs while prepare, a Python step,
    holds the interpreter and with it the job dispatcher; then the prepared sources (prepare comes
    before them), then the other runtime sources, largest first. The order is stable (installed
    files' sizes), or SCons would relink; the command line keeps ST's link order ($RELOC_FIRST,
    $RELOC_LATE)."""
    def size(obj):
        source = obj[0].sources[0].abspath
        return os.path.getsize(source) if os.path.isfile(source) else 0
    runtime = sorted(runtime, key=size, reverse=True)
    return runtime[:1] + prepared + runtime[1:]


def budgets(env):
    """The size gate's budgets as the RELOC_*_SIZE variables give them (n6.reloc.options)."""
    return size_budgets({k: env.get(f"RELOC_{k.upper()}_SIZE", "") for k in BUDGETS})


def _budget_board(env):
    """The board file the size gate reads, if any budget comes from it (a missing one: one line)."""
    if "board" not in budgets(env).values():
        return None
    path = board_path(env["BOARD"])
    if not os.path.isfile(path):
        from n6.board import load_board
        load_board(path)   # says which boards there are
    return path


def _link_emitter(target, source, env):
    return target + [os.path.splitext(str(target[0]))[0] + ".map"], source


def _pack_emitter(target, source, env):
    """<name>_rel.bin [, <name>_rel_params.bin], <name>_reloc_results.json (always last)."""
    opts = env["N6_PACK_OPTIONS"]
    extra = [params_path(target[0].path)] if opts.split else []
    return target + extra + [os.path.join(target[0].dir.path, f"{opts.name}_reloc_results.json")], source


def _code_emitter(target, source, env):
    return target + [code_facts_path(target[0].path)], source


@reports_errors
def _code_action(target, source, env):
    from n6.reloc.pipeline import code_step
    code_step(source[0].path, target[0].path)


@reports_errors
def _pack_action(target, source, env):
    from n6.reloc.pipeline import pack_budgets, pack_step   # tabulate and the checker: only when packing
    opts = env["N6_PACK_OPTIONS"]
    pack_step(source[0].path, source[2].path, target[0].path, target[-1].path, opts.name, pack_budgets(opts),
              split=opts.split, log=say)


@reports_errors
def _check_action(target, source, env):
    from n6.reloc.pipeline import check_step
    check_step([node.path for node in source], say, lambda error: sys.stderr.write(f"scons: *** [check] {error}\n"))


def check_alias(env, images):
    alias = env.Alias("check", [i for i in images if i.path.endswith("_rel.bin")],
                      SCons.Action.Action(_check_action, None))
    env.AlwaysBuild(alias)
    return alias


def generate(env):
    describe_targets(env, ("build", "every model: generate, relocatable image, size report (default)"),
                     ("<model>", "that model's images"),
                     ("check", "run the image checker (XIP and COPY install) on every image"))
    env.SetDefault(**defaults("BOARD", *(v.name for v in VARIABLES if v.name.startswith("RELOC_"))))
    env["BUILDERS"]["RelocCompile"] = SCons.Builder.Builder(   # one C file, the cc tool's command line
        action=SCons.Action.Action("$CCCOM", "$CCCOMSTR"), source_scanner=SCons.Scanner.C.CScanner())
    env["BUILDERS"]["RelocPrepare"] = SCons.Builder.Builder(
        action=SCons.Action.Action(_prepare_action, progress("PREPARE"), varlist=["N6_PREPARE_OPTIONS"]),
        emitter=_prepare_emitter,
        target_factory=env.Dir)
    env["BUILDERS"]["RelocLink"] = SCons.Builder.Builder(
        action=SCons.Action.Action(
            "$LINK $CCFLAGS $RELOC_FIRST -T $RELOC_SCRIPT -nostartfiles -nostdlib -Wl,--gc-sections -Wl,--cref "
            "-Bstatic -Wl,--emit-relocs -Wl,-Map,${TARGETS[1]} $RELOC_LIB $RELOC_LATE -o $TARGET",
            "$LINKCOMSTR"), emitter=_link_emitter)
    env["BUILDERS"]["RelocCode"] = SCons.Builder.Builder(
        action=SCons.Action.Action(_code_action, progress("IMAGE")), emitter=_code_emitter)
    env["BUILDERS"]["RelocPack"] = SCons.Builder.Builder(
        action=SCons.Action.Action(_pack_action, progress("PACK"), varlist=["N6_PACK_OPTIONS"]),
        emitter=_pack_emitter)
    env.AddMethod(build_reloc, "RelocImage")
    env.AddMethod(reloc_name, "RelocName")
    env.AddMethod(check_alias, "RelocCheckAlias")
    env.AddMethod(check_variables, "RelocCheckVariables")


def exists(env):
    return True
