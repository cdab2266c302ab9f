"""The n6 project as the SConstruct declares it: loading this tool reads the variables
(n6.variables), takes the build folder and loads the other tools; then

  env.N6ModelFolders("models")  the model folders (one that cannot be read is remembered: it stops
                                neither the others nor `scons -h` / `scons -c`)
  env.N6Model(spec)             one model's nodes: generate (a source model), relocatable image
  env.N6ProjectTargets()        build, check, flash / run / validate / profile over the models,
                                stale outputs removed, `scons -h`

Bad input while reading is one `scons: ***` line and exit 2 (n6_fail), never a traceback."""
import functools
import os
from dataclasses import dataclass, field

import SCons.Errors
import SCons.Script

from n6 import build_layout
from n6.errors import N6Error
from n6.models import discover
from n6_scons import scons_variables, targets_help


def _fails_in_one_line(fn):
    """Run `fn`; an N6Error becomes one line and exit 2."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except N6Error as e:
            SCons.Script.n6_fail(e)
    return wrapped


@dataclass
class _Model:
    spec: object
    image: list             # the image step's targets
    alias: list             # `scons <model>`
    image_name: str         # the name the board knows the model by (its image's)
    c_info: object          # its c_info.json node, or the path one would have (a prebuilt folder may have none)


@dataclass
class _Project:
    arm: object                                    # the arm-none-eabi-gcc environment images compile with
    tool_nodes: list                               # the simulated install's runtime archive, if simulated
    models: dict = field(default_factory=dict)     # name → _Model
    broken: dict = field(default_factory=dict)     # name → the N6Error of a folder that cannot be built


def _read_variables(env):
    variables = scons_variables(SCons.Script.ARGUMENTS)
    try:
        variables.Update(env)
    except SCons.Errors.UserError as e:   # a bad boolean or choice: one line, not SCons's two plus a File line
        raise N6Error(None, " ".join(str(e).split()).replace("Error converting option: ", ""),
                      "see `scons -h`") from None
    unknown = variables.UnknownVariables()
    if unknown:
        raise N6Error(None, f"unknown variable {sorted(unknown)[0]}", "see `scons -h` for the variables")
    env["N6_VARIABLES_HELP"] = "Variables (scons NAME=value ...):\n" + variables.GenerateHelpText(env)


@_fails_in_one_line
def model_folders(env, models_dir):
    """The readable model folders of `models_dir` (ModelSpec); the others are remembered."""
    specs, broken = discover(models_dir)
    env["N6_PROJECT"].broken.update(broken)
    return specs


def model(env, spec):
    """The nodes of one model folder: its generate step (a source model) and relocatable image,
    the `<model>` alias. A bad model is remembered (the build fails at the end, after the others)."""
    project = env["N6_PROJECT"]
    layout = build_layout.ModelLayout(env.subst("$BUILD_DIR"), spec.name)
    try:
        if spec.kind == "source":
            generated = env.StedgeaiGenerateModel(spec, layout.st_ai_output)
            network_c = generated[0]
            inputs = [n for n in generated if n.name.endswith((".raw", "_c_info.json", "_ecblobs.h"))]
        else:
            network_c, inputs = env.File(spec.network_c), [env.File(f) for f in spec.inputs]
        epoch_controller = any(n.name.endswith("_ecblobs.h") for n in inputs)
        image, image_name = env.RelocImage(project.arm, spec, network_c, inputs, epoch_controller, layout)
        c_info = next((n for n in inputs if n.name.endswith("c_info.json")),
                      os.path.splitext(str(network_c))[0] + "_c_info.json")
        project.models[spec.name] = _Model(spec, image, env.Alias(spec.name, image), image_name,
                                           c_info)
    except N6Error as e:
        project.broken[spec.name] = e


@_fails_in_one_line
def project_targets(env):
    """After every model: the deploy targets the command line asks for, `build` (the default),
    `check`, the broken folders' errors, stale outputs removed, and `scons -h`."""
    project = env["N6_PROJECT"]
    models = project.models
    env.FlashTargets({name: m.image for name, m in models.items()}, env.StedgeaiInstall()[1], project.broken)
    env.RunTargets([m.spec for m in models.values()], {name: m.image_name for name, m in models.items()})
    env.ProfileTargets({name: (m.c_info, m.image_name) for name, m in models.items()})
    env.DeployOrder()
    aliases = [m.alias for m in models.values()]
    env.Alias("build", aliases + project.tool_nodes)
    env.RelocCheckAlias([n for m in models.values() for n in m.image])
    env.N6BrokenModels(project.broken, aliases)   # each reports its one line; the build fails at the end
    env.N6PruneStale(keep=list(project.broken))
    SCons.Script.Default("build")
    SCons.Script.Help(
        "n6: SCons builds for the STM32N6 Neural-ART NPU (scons -H: SCons's own options)\n"
        f"Parallel jobs: {SCons.Script.GetOption('num_jobs')} (default: one per core; -j N to change).\n\n"
        "Targets:\n" + targets_help(env) + "\nModels (<model>):\n" +
        "".join(f"  {name:<18} models/{name}\n" for name in models) +
        "".join(f"  {name:<18} models/{name} cannot be built (its error is above)\n" for name in project.broken) +
        "\n" + env["N6_VARIABLES_HELP"])


@_fails_in_one_line
def generate(env):
    env.Tool("n6_unchanged")
    if env.N6NothingChanged():   # nothing the last complete build depended on changed: nothing to declare
        env.AddMethod(lambda env, models_dir: [], "N6ModelFolders")
        # an alias of an unchanged value is "up to date", as after a walk (one of nothing has "nothing to be done")
        env.AddMethod(lambda env: env.Default(env.Alias("build", env.Value(""))), "N6ProjectTargets")
        return
    SCons.Script.SetOption("num_jobs", os.cpu_count() or 1)   # parallel by default; -j N (or SCONSFLAGS) wins
    SCons.Script.SetOption("hash_format", "sha256")   # hashes tens of MB of weights ~2x faster than MD5
    SCons.Script.DefaultEnvironment(tools=[])          # no host-compiler probing behind Default() and friends
    _read_variables(env)
    env.Tool("n6_outputs")
    build_dir = env.subst("$BUILD_DIR")
    folder = env.N6BuildFolder()       # one build at a time in a build folder; before any signature is read
    env.Tool("n6_cache")
    env.SConsignFile(build_layout.sconsign(build_dir))
    env.Tool("n6_decider")             # content signatures, re-hashed only when a file's stat moves
    env.N6WatchBuild(folder)           # a plain build is watched, recorded before the stat cache is saved
    SCons.Script.SetOption("implicit_cache", 1)   # remember #include scans between runs
    for tool in ("n6_progress", "stedgeai", "npu_reloc", "n6_flash", "n6_run", "n6_profile"):
        env.Tool(tool)
    arm = env.Clone(tools=["arm_gcc"])
    env.RelocCheckVariables()
    simulated = env.StedgeaiInstall()[2]
    env["N6_PROJECT"] = _Project(arm, env.StedgeaiSimulatedInstall(arm) if simulated else [])
    env.AddMethod(model_folders, "N6ModelFolders")
    env.AddMethod(model, "N6Model")
    env.AddMethod(project_targets, "N6ProjectTargets")


def exists(env):
    return True
