"""Relocatable Neural-ART model images as SCons builders:

  RelocPrepare  network.c (+ _ecblobs.h, c_info.json, the .raw names) → the reloc sources and
                the params description (which .raw files, in which order)
  (objects: the reloc_objects tool)
  RelocLink     objects + runtime archive → <name>.elf + <name>.map, ST's link order
  RelocCode     <name>.elf → the code image (all of the image but the params; pyelftools)
  RelocPack     code image + .raw files → <name>_rel.bin [+ _rel_params.bin] + results JSON,
                then the image checker (XIP and COPY) and the size gate.

A weight change reaches pack only: the compiled sources never contain the weights, their size
or their CRC (pack writes those into rt_ctx), and prepare reads the .raw names, not the bytes."""
import os
import sys
from dataclasses import dataclass, replace

import SCons.Action
import SCons.Builder
import SCons.Script

from n6 import gcc_flags
from n6.models import c_identifier
from n6.paths import FIRMWARE
from n6.reloc.area import ImageArea
from n6.reloc.names import params_path, prepare_outputs
from n6.reloc.options import (BUDGETS, ImageOptions, PackOptions, PrepareOptions, board_facts, gate_board,
                              gate_budgets, image_area, size_budgets)
from n6.variables import VARIABLES, defaults
from n6_scons import ArgvAction, describe_targets, progress, reports_errors, say, step_code, uses_tool

LINKER_SCRIPT = os.path.join(FIRMWARE, "reloc_network_gcc.ld")


# -- prepare ---------------------------------------------------------------------------------------

def _prepare_emitter(target, source, env):
    opts = env["N6_PREPARE_OPTIONS"]
    return [target[0].File(n) for n in prepare_outputs(opts.name, opts.epoch_controller)], source


@reports_errors
def _prepare_action(target, source, env):
    from n6.reloc.prepare import prepare
    opts = env["N6_PREPARE_OPTIONS"]
    prep = prepare(source[0].path, os.path.dirname(target[0].path), opts.name, opts.ecblob_in_params,
                   list(opts.install_version), opts.absolute_flash_pools, opts.simulated_install, opts.image_area)
    for m in prep.moved:
        say(f"  MOVE     {source[0].path}: absolute flash pool '{m.name}' 0x{m.old:08X} → 0x{m.new:08X}, clear of "
            f"the image the firmware reads at 0x{opts.image_area.start:08X}")
    if prep.kept:
        say(f"  WARNING  {prep.kept}")


# -- model ------------------------------------------------------------------------------------------

def reloc_options(env, spec):
    """Per-model options: model.json "reloc" overrides the command-line variables."""
    return ImageOptions.of({"secure": env["RELOC_SECURE"], "split": env["RELOC_SPLIT"],
                            "dbg_info": env["RELOC_DBG_INFO"],
                            "ecblob_in_params": env["RELOC_ECBLOB_IN_PARAMS"], "name": env.get("RELOC_NAME") or None},
                           spec.reloc, os.path.join(spec.path, "model.json"))


def check_variables(env):
    """The variables every model shares: a bad one fails at once, not once per model (the models'
    steps then take the _Shared found here)."""
    if env.get("RELOC_NAME"):
        c_identifier(env["RELOC_NAME"], "RELOC_NAME", "image name", "set RELOC_NAME to a C identifier, e.g. kws")
    _shared(env)


def build_reloc(env, arm, spec, network_c, inputs, epoch_controller, layout):
    """Nodes of the relocatable image of one model, in its build folder `layout`
    (n6.build_layout.ModelLayout), and the image's name. `inputs`: the files next to `network_c`
    that the steps read: c_info.json and _ecblobs.h (prepare), the .raw files (pack; prepare sees
    only their names, so new weights never rerun it)."""
    opts = reloc_options(env, spec)
    name = opts.name or os.path.splitext(os.path.basename(str(network_c)))[0]
    shared = _shared(env)
    build = layout.reloc
    raws = [n for n in inputs if str(n).endswith(".raw")]
    prep_opts = PrepareOptions(name, opts.ecblob_in_params, epoch_controller, shared.absolute_flash_pools,
                               replace(shared.image_area, split=opts.split) if shared.image_area else None,
                               shared.simulated, shared.atonn, tuple(sorted(str(r) for r in raws)))
    prepared = env.RelocPrepare(env.Dir(build), [network_c] + [n for n in inputs if n not in raws],
                                N6_PREPARE_OPTIONS=prep_opts)
    params_desc = prepared[3]

    first, late = env.RelocObjects(arm, opts, name, layout, prepared)
    elf = arm.RelocLink(layout.elf(name), _longest_first([first[0], late[0]], first[1:] + late[1:]),
                        N6_ARGV=_link_argv(arm, gcc_flags.compile_flags(opts.secure), first, late, shared.runtime_lib,
                                           shared.linker_script))
    env.Depends(elf, [shared.linker_script, shared.runtime_lib])
    code = env.RelocCode(layout.code(name), elf[0])[0]
    pack_opts = PackOptions(name, opts.split, shared.budgets, bool(env["RELOC_COPY_MODE"]))
    image = env.RelocPack(layout.image(name), [code, params_desc] + raws,
                          N6_PACK_OPTIONS=pack_opts)
    env.Depends(prepared, shared.prepare_code)
    env.Depends(code, shared.image_code)
    env.Depends(image, shared.pack_code)
    return image, name


@dataclass(frozen=True)
class _Shared:
    """What every model's image steps share, found once per build."""
    simulated: bool
    absolute_flash_pools: bool     # RELOC_ABSOLUTE_FLASH_POOLS
    image_area: ImageArea | None   # where a 2.x firmware reads the image (3.x: the header places it)
    atonn: tuple             # the install's ATONN version
    runtime_lib: object      # the runtime archive node
    linker_script: object
    budgets: tuple           # the size gate's (budget, bytes or None) pairs, the board file's resolved
    prepare_code: object     # the steps' code (step_code)
    image_code: object
    pack_code: object


_SHARED: dict[tuple, _Shared] = {}   # what a _Shared is found from → it


def _shared(env):
    """The _Shared of `env`, found once for each set of what it is found from: the install, the
    RELOC_*_SIZE variables, the board, RELOC_ABSOLUTE_FLASH_POOLS and the build folder (the steps'
    code nodes are per build folder)."""
    install = env.StedgeaiInstall()
    sizes = tuple(env.get(f"RELOC_{k.upper()}_SIZE", "") for k in BUDGETS)
    absolute = bool(env["RELOC_ABSOLUTE_FLASH_POOLS"])
    key = (env.subst("$BUILD_DIR"), install, sizes, env["BOARD"], absolute)
    if key not in _SHARED:
        _, install_rel, simulated = install
        budgets, facts = pack_gate(env, absolute)
        _SHARED[key] = _Shared(
            simulated, absolute, image_area(facts.area, install_rel) if facts and absolute else None,
            tuple(install_rel.atonn), env.StedgeaiRuntimeLib(), env.File(LINKER_SCRIPT),
            budgets, step_code(env, "prepare", ["n6.reloc.prepare"], __file__),
            step_code(env, "image", ["n6.reloc.pipeline"], __file__),
            step_code(env, "pack", ["n6.reloc.pipeline"], __file__))
    return _SHARED[key]


_SOURCE_SIZES: dict[str, int] = {}   # a runtime source → its size: the same sources for every model


def _longest_first(prepared, runtime):
    """The link's inputs in the order SCons starts them under -j: the largest runtime source (a
    proxy for the longest compile) first, so that a compiler runs while prepare, a Python step,
    holds the interpreter and with it the job dispatcher; then the prepared sources (prepare comes
    before them), then the other runtime sources, largest first. The order is stable (installed
    files' sizes), or SCons would relink; the command line keeps ST's link order ($RELOC_FIRST,
    $RELOC_LATE)."""
    def size(obj):
        source = obj[0].sources[0].abspath
        if source not in _SOURCE_SIZES:
            _SOURCE_SIZES[source] = os.path.getsize(source) if os.path.isfile(source) else 0
        return _SOURCE_SIZES[source]
    runtime = sorted(runtime, key=size, reverse=True)
    return runtime[:1] + prepared + runtime[1:]


def pack_gate(env, absolute_flash_pools):
    """The size gate's budgets: the RELOC_*_SIZE variables, the board file's where one is empty
    (n6.reloc.options.gate_budgets); and the board file's facts (n6.reloc.options.board_facts,
    with RELOC_ABSOLUTE_FLASH_POOLS its image area), else None. Read once per content of the
    board file and of the code that reads it (the stat cache keeps them: a no-op reads no board
    file, loads no board code). `scons -h` and `-c` build nothing: they do not read it (a damaged
    one stops neither)."""
    gate = size_budgets({k: env.get(f"RELOC_{k.upper()}_SIZE", "") for k in BUDGETS})
    board = gate_board(gate, env["BOARD"], absolute_flash_pools)
    if board is None or SCons.Script.GetOption("help") or SCons.Script.GetOption("clean"):
        return gate_budgets(gate, dict.fromkeys(BUDGETS)), None
    reader = step_code(env, "board-facts", ["n6.reloc.options"]).value   # board_facts and the code it runs
    facts = env.N6FromContent(board, board_facts, f"board_facts {reader}")
    return gate_budgets(gate, facts.budgets), facts


def _link_argv(arm, ccflags, first, late, runtime_lib, script):
    """ST's link line: the objects before the runtime archive, the linker script (a node: a path
    relative to the project, as every path signed), the archive, the objects after it."""
    return [arm["LINK"], *ccflags, *(str(o[0]) for o in first), "-T", str(script), "-nostartfiles", "-nostdlib",
            "-Wl,--gc-sections", "-Wl,--cref", "-Bstatic", "-Wl,--emit-relocs", "-Wl,-Map,${TARGETS[1]}",
            str(runtime_lib), *(str(o[0]) for o in late), "-o", "$TARGET"]


def _link_emitter(target, source, env):
    return target + [os.path.splitext(str(target[0]))[0] + ".map"], source


def _pack_emitter(target, source, env):
    """<name>_rel.bin [, <name>_rel_params.bin], <name>_reloc_results.json (always last)."""
    opts = env["N6_PACK_OPTIONS"]
    extra = [params_path(target[0].path)] if opts.split else []
    return target + extra + [os.path.join(target[0].dir.path, f"{opts.name}_reloc_results.json")], source


@reports_errors
def _code_action(target, source, env):
    from n6.reloc.pipeline import code_step
    code_step(source[0].path, target[0].path)


@reports_errors
def _pack_action(target, source, env):
    from n6.reloc.pipeline import pack_step   # tabulate and the checker: only when packing
    from n6.reloc.report import Budgets
    opts = env["N6_PACK_OPTIONS"]
    written = pack_step(source[0].path, source[1].path, target[0].path, target[-1].path, opts.name,
                        Budgets(**dict(opts.budgets), copy_mode=opts.copy_mode), split=opts.split, log=say,
                        hash_name=env.N6HashName())
    for path, sig in written.items():
        env.N6Written(path, sig)


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
    uses_tool(env, "reloc_objects")
    env["BUILDERS"]["RelocPrepare"] = SCons.Builder.Builder(
        action=SCons.Action.Action(_prepare_action, progress("PREPARE"), varlist=["N6_PREPARE_OPTIONS"]),
        emitter=_prepare_emitter,
        target_factory=env.Dir)
    env["BUILDERS"]["RelocLink"] = SCons.Builder.Builder(action=ArgvAction("$LINKCOMSTR"), emitter=_link_emitter)
    env["BUILDERS"]["RelocCode"] = SCons.Builder.Builder(
        action=SCons.Action.Action(_code_action, progress("IMAGE")))
    env["BUILDERS"]["RelocPack"] = SCons.Builder.Builder(
        action=SCons.Action.Action(_pack_action, progress("PACK"), varlist=["N6_PACK_OPTIONS"]),
        emitter=_pack_emitter)
    env.AddMethod(build_reloc, "RelocImage")
    env.AddMethod(check_alias, "RelocCheckAlias")
    env.AddMethod(check_variables, "RelocCheckVariables")


def exists(env):
    return True
