"""Discovery of `models/<name>/`: a source model (ONNX/TFLite + profile + mpool, optional
`model.json` of per-model options) or a prebuilt stedgeai output folder (the generated network
C file, its `c_info.json` when there is one, whatever else stedgeai wrote next to them)."""
import glob
import os
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from .build_layout import FOLDERS
from .errors import N6Error
from .jsonfile import read_json
from .paths import StrPath

MODEL_OPTIONS = {"profile": str, "name": str, "input_data_type": str, "output_data_type": str, "reloc": dict,
                 "generate_options": list, "source": str, "reference_data": str}
RELOC_OPTIONS = {"secure": bool, "split": bool, "dbg_info": bool, "ecblob_in_params": bool, "name": str}
DATA_TYPES = ("int8", "uint8", "float32", "float")
# ST's scripts write `float`; the tool's documented spelling is `float32`.
DATA_TYPE_SPELLING = {"float": "float32"}
# `stedgeai generate` options the build passes itself: each has its own model.json key or is the
# build's (where the outputs go, which model, which profile).
BUILD_GENERATE_OPTIONS = {"-m": "the model file", "--model": "the model file", "--target": "the build",
                          "--st-neural-art": '"profile" and neural_art.json',
                          "-o": "the build", "--output": "the build",
                          "-w": "the build", "--workspace": "the build", "-n": '"name"', "--name": '"name"',
                          "--input-data-type": '"input_data_type"', "--output-data-type": '"output_data_type"'}
# Targets and folders of the build itself: a model folder may not take these names.
RESERVED_NAMES = {"build", "check", "flash", "run", "validate", "profile", "clean", "install", "test", "help",
                  "all", "broken-models", "obj", *FOLDERS}
# Per-model targets are `<step>-<model>`: a folder named like one would shadow another model's target.
RESERVED_PREFIXES = ("flash-", "run-", "validate-", "profile-")
FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What stedgeai writes besides the network: ignored in a prebuilt folder.
SIDE_FILE = re.compile(r".*(_OE_[0-9_]*(_Q)?\.(onnx|json)|_report\.txt|_data\.hex|_c_info_valid\.json)$|"
                       r"LICENSE\.txt$")


@dataclass
class ModelSpec:
    name: str                   # folder name, also the build folder and alias
    path: str                   # the folder
    kind: str                   # "source" | "prebuilt"
    model_file: str | None = None
    profile_file: str | None = None
    profile: str = "default"
    c_name: str | None = None   # -n/--name (None: the tool's default)
    input_data_type: str | None = None
    output_data_type: str | None = None
    reloc: dict[str, bool | str] = field(default_factory=dict)   # per-model relocatable-image options
    network_c: str | None = None   # prebuilt: the generated C file
    inputs: list[str] = field(default_factory=list)  # prebuilt: the .raw files, c_info.json, _ecblobs.h
    generate_options: tuple[str, ...] = ()  # more `stedgeai generate` arguments, passed in this order
    # prebuilt: the model it was generated from (model.json "source"), validate's reference
    source: str | None = None
    reference_data: str | None = None  # validate's inputs and expected outputs (.npz, model.json "reference_data")


def c_identifier(value: object, where: str, what: str, fix: str) -> str:
    """`value` must be a C identifier: it names C symbols and files in the build folder."""
    if not isinstance(value, str) or not C_IDENTIFIER.fullmatch(value):
        raise N6Error(where, f"{what} {value!r} is not a C identifier", fix)
    return value


def _generated_network(path: str) -> tuple[str, str | None] | None:
    """(network C file, c_info.json or None) of a stedgeai output folder, or None. The C file is
    `<N>.c` for `<N>_c_info.json`; without one (ST's relocatable flow needs none), `<N>.c` beside
    `<N>.h` and `<N>_*.raw`."""
    infos = sorted(glob.glob(os.path.join(glob.escape(path), "*_c_info.json")))
    found: list[tuple[str, str | None]] = [(info[:-len("_c_info.json")] + ".c", info) for info in infos
             if os.path.isfile(info[:-len("_c_info.json")] + ".c")]
    if not infos:
        found = [(c, None) for c in sorted(glob.glob(os.path.join(glob.escape(path), "*.c")))
                 if os.path.isfile(c[:-2] + ".h") and glob.glob(glob.escape(c[:-2]) + "_*.raw")]
    if len(found) > 1:
        raise N6Error(path, "several generated networks (" + ", ".join(os.path.basename(c) for c, _ in found) + ")",
                      "keep one stedgeai output per model folder")
    return found[0] if found else None


def _model_files(path: str) -> list[str]:
    files = sorted(glob.glob(os.path.join(glob.escape(path), "*.onnx")) +
                   glob.glob(os.path.join(glob.escape(path), "*.tflite")))
    return [f for f in files if not SIDE_FILE.match(os.path.basename(f))]


def onnx_external_data(model_file: str) -> tuple[str, ...]:
    """The files an ONNX model's initializers are stored in (ONNX external data), those present.
    A model naming none holds no `location` key: such a file is not parsed at all."""
    import mmap
    with open(model_file, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data.find(b"location") < 0:
            return ()
    import onnx
    try:
        model = onnx.load(model_file, load_external_data=False)
    except Exception:     # not readable: generate says why
        return ()
    folder = os.path.dirname(model_file)
    names = {os.path.normpath(os.path.join(folder, e.value)) for t in model.graph.initializer
             if t.data_location == onnx.TensorProto.EXTERNAL for e in t.external_data if e.key == "location"}
    return tuple(sorted(n for n in names if os.path.isfile(n)))


def _options(path: str) -> dict[str, Any]:
    file = os.path.join(path, "model.json")
    if not os.path.exists(file):
        return {}
    opts = read_json(file, "model options file", shape=dict, unique=True)
    kind: type | None
    for key, value in opts.items():
        if key not in MODEL_OPTIONS:
            raise N6Error(file, f"unknown option '{key}'", f"use only {', '.join(sorted(MODEL_OPTIONS))}")
        kind = MODEL_OPTIONS[key]
        if not isinstance(value, kind):
            what, example = {dict: ("n object", "{...}"), list: (" list of strings", '["--option", "value"]')}.get(
                kind, (" string", '"..."'))
            raise N6Error(file, f"'{key}' is {value!r}, not a{what}", f"write \"{key}\": {example}")
    if "name" in opts:
        c_identifier(opts["name"], file, "'name'", 'write a C identifier, e.g. "name": "kws"')
    for key in ("input_data_type", "output_data_type"):
        if key in opts and opts[key] not in DATA_TYPES:
            raise N6Error(file, f"'{key}' is {opts[key]!r}", f"use one of {', '.join(DATA_TYPES)}")
        if key in opts:
            opts[key] = DATA_TYPE_SPELLING.get(opts[key], opts[key])
    _generate_options(file, opts.get("generate_options", []))
    for key, value in opts.get("reloc", {}).items():
        kind = RELOC_OPTIONS.get(key)
        if kind is None:
            raise N6Error(file, f"unknown reloc option '{key}'", f"use {', '.join(sorted(RELOC_OPTIONS))}")
        if not isinstance(value, kind) or (kind is str and isinstance(value, bool)):
            raise N6Error(file, f"reloc option '{key}' is {value!r}, not a {'boolean' if kind is bool else 'string'}",
                          f'write "{key}": ' + ("true or false (no quotes)" if kind is bool else '"..."'))
    if "name" in opts.get("reloc", {}):
        c_identifier(opts["reloc"]["name"], file, "reloc 'name'", 'write a C identifier, e.g. "name": "kws"')
    return opts


def _generate_options(file: str, items: list[object]) -> None:
    """Extra generate arguments: words as the shell would split them, none the build passes itself."""
    for n, item in enumerate(items, 1):
        where = f"'generate_options' item {n}"
        if not isinstance(item, str):
            raise N6Error(file, f"{where} is {item!r}, not a string", 'write "generate_options": ["--option", "value"]')
        if not item or "\0" in item or "\n" in item:
            raise N6Error(file, f"{where} is empty" if not item else f"{where} {item!r} holds a control character",
                          "write each option and each value as its own string")
        if item.startswith("-") and any(c.isspace() for c in item):
            raise N6Error(file, f"{where} {item!r} holds a space", f"write it as {item.split()!r}")
        owner = BUILD_GENERATE_OPTIONS.get(item.split("=", 1)[0])
        if owner:
            raise N6Error(file, f"{where} {item!r} is set by the build (from {owner})",
                          "remove it" + (f" and use {owner} in model.json" if owner.startswith('"') else ""))


def _model_json_file(path: str, opts: dict[str, Any], key: str, suffixes: tuple[str, ...], example: str) -> str | None:
    """The file model.json `key` names (a path from the folder), checked; None without the key."""
    if key not in opts:
        return None
    value = os.path.normpath(os.path.join(path, opts[key]))
    if not value.endswith(suffixes) or not os.path.isfile(value):
        what = "not found" if value.endswith(suffixes) else f"not a {' or '.join(suffixes)} file"
        raise N6Error(os.path.join(path, "model.json"), f"'{key}' {opts[key]!r} is {what}",
                      f'write "{key}": "{example}" (a path from the model folder)')
    return value


def _source(path: str, opts: dict[str, Any], generated: tuple[str, str | None] | None) -> str | None:
    """The model.json `source` of a prebuilt folder: the model its network was generated from."""
    if "source" in opts and not generated:
        raise N6Error(os.path.join(path, "model.json"),
                      "'source' names the model of a prebuilt folder; this folder builds its own model",
                      "remove 'source'")
    return _model_json_file(path, opts, "source", (".tflite", ".onnx"), "model.tflite")


def read_model(path: StrPath, reserved: Collection[str] = ()) -> ModelSpec:
    path = str(path)
    name = os.path.basename(os.path.normpath(path))
    if not FOLDER_NAME.fullmatch(name):
        raise N6Error(path, f"model folder name {name!r} is not a plain name",
                      "rename the folder with letters, digits, '_', '.', '+', '-' only (a letter or digit first)")
    if name in reserved or name.startswith(RESERVED_PREFIXES):
        raise N6Error(path, f"model folder name '{name}' is also a build target or folder",
                      f"rename the folder (reserved: {', '.join(sorted(reserved))})")
    generated = _generated_network(path)
    opts = _options(path)
    source = _source(path, opts, generated)
    data = _model_json_file(path, opts, "reference_data", (".npz",), "data.npz")
    models = [f for f in _model_files(path) if f != source]
    if models and generated:
        raise N6Error(path, f"holds both a model ({os.path.basename(models[0])}) and a generated network "
                            f"({os.path.basename(generated[0])})",
                      f"remove {os.path.basename(models[0])} to build the generated network as it is, or remove "
                      + " and ".join(os.path.basename(f) for f in generated if f) + " to generate from the model")
    if generated:
        network_c, info = generated
        stem = network_c[:-2]
        inputs = sorted(glob.glob(glob.escape(stem) + "_*.raw")) + \
            [f for f in [info, stem + "_ecblobs.h"] if f and os.path.exists(f)]
        return ModelSpec(name, path, "prebuilt", network_c=network_c, inputs=inputs, reloc=opts.get("reloc", {}),
                         source=source, reference_data=data)
    if not models:
        raise N6Error(path, "no model file (.onnx/.tflite) and no generated network C (<N>.c with <N>_c_info.json, or "
                            "with <N>.h and <N>_*.raw)",
                      "add a model with its neural_art.json, or a stedgeai output folder")
    if len(models) > 1:
        raise N6Error(path, f"several model files ({', '.join(map(os.path.basename, models))})",
                      "keep one model per folder")
    if not os.path.exists(models[0]):
        raise _dangling(models[0], "the model file")
    if os.path.getsize(models[0]) == 0:
        raise N6Error(models[0], "the model file is empty", "copy the model file again")
    profile_file = os.path.join(path, "neural_art.json")
    if not os.path.exists(profile_file):
        raise N6Error(profile_file, "Neural-ART profile file not found",
                      "add neural_art.json with a profile whose memory_pool names the .mpool")
    return ModelSpec(name, path, "source", model_file=models[0], profile_file=profile_file,
                     profile=opts.get("profile", "default"), c_name=opts.get("name"),
                     input_data_type=opts.get("input_data_type"), output_data_type=opts.get("output_data_type"),
                     reloc=opts.get("reloc", {}), generate_options=tuple(opts.get("generate_options", ())),
                     reference_data=data)


def _dangling(path: str, what: str) -> N6Error:
    """The error of a symbolic link whose target does not exist."""
    return N6Error(path, f"a link to {os.readlink(path)}, which does not exist",
                   f"point the link at {what}, or remove it")


def discover(models_dir: str, reserved: Collection[str] = RESERVED_NAMES) -> tuple[list[ModelSpec], dict[str, N6Error]]:
    """(specs, errors): every readable model folder, and {name: N6Error} of the others (a link to
    no folder among them)."""
    if not os.path.isdir(models_dir):
        raise N6Error(models_dir, "no models folder", "create models/<name>/ with a model and its neural_art.json")
    specs, errors = [], {}
    for entry in sorted(os.listdir(models_dir)):
        path = os.path.join(models_dir, entry)
        if entry.startswith((".", "_")):
            continue
        if os.path.islink(path) and not os.path.exists(path):
            errors[entry] = _dangling(path, "a model folder")
        elif os.path.isdir(path):
            try:
                specs.append(read_model(path, reserved))
            except N6Error as e:
                errors[entry] = e
    return specs, errors
