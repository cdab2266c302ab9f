"""Discovery of `models/<name>/`: a source model (ONNX/TFLite + profile + mpool, optional
`model.json` of per-model options) or a prebuilt stedgeai output folder."""
import glob
import os
from dataclasses import dataclass, field

from .errors import N6Error
from .jsonfile import read_json

MODEL_OPTIONS = {"profile", "name", "input_data_type", "output_data_type", "reloc"}


@dataclass
class ModelSpec:
    name: str                   # folder name, also the build folder and alias
    path: str                   # the folder
    kind: str                   # "source" | "prebuilt"
    model_file: str = None
    profile_file: str = None
    profile: str = "default"
    c_name: str = None          # -n/--name (None: the tool's default)
    input_data_type: str = None
    output_data_type: str = None
    reloc: dict = field(default_factory=dict)   # per-model relocatable-image options
    network_c: str = None       # prebuilt: the generated C file


def _prebuilt(path, name):
    infos = sorted(glob.glob(os.path.join(path, "*c_info.json")))
    cfiles = [c for c in sorted(glob.glob(os.path.join(path, "*.c"))) if not os.path.basename(c).startswith("stai_")]
    if not infos or not cfiles:
        return None
    if len(cfiles) > 1:
        raise N6Error(path, f"prebuilt folder has several C files ({', '.join(map(os.path.basename, cfiles))})",
                      "keep only the generated network C file")
    return ModelSpec(name, path, "prebuilt", network_c=cfiles[0])


def read_model(path):
    name = os.path.basename(os.path.normpath(path))
    models = sorted(glob.glob(os.path.join(path, "*.onnx")) + glob.glob(os.path.join(path, "*.tflite")))
    opts = {}
    if os.path.exists(os.path.join(path, "model.json")):
        opts = read_json(os.path.join(path, "model.json"), "model options file")
        unknown = sorted(set(opts) - MODEL_OPTIONS)
        if unknown:
            raise N6Error(os.path.join(path, "model.json"), f"unknown option '{unknown[0]}'",
                          f"use only {', '.join(sorted(MODEL_OPTIONS))}")
    if not models:
        spec = _prebuilt(path, name)
        if spec is None:
            raise N6Error(path, "no model file (.onnx/.tflite) and no prebuilt network C + c_info.json",
                          "add a model with its neural_art.json, or a stedgeai output folder")
        spec.reloc = opts.get("reloc", {})
        return spec
    if len(models) > 1:
        raise N6Error(path, f"several model files ({', '.join(map(os.path.basename, models))})",
                      "keep one model per folder")
    profile_file = os.path.join(path, "neural_art.json")
    if not os.path.exists(profile_file):
        raise N6Error(profile_file, "Neural-ART profile file not found",
                      "add neural_art.json with a profile whose memory_pool names the .mpool")
    return ModelSpec(name, path, "source", model_file=models[0], profile_file=profile_file,
                     profile=opts.get("profile", "default"), c_name=opts.get("name"),
                     input_data_type=opts.get("input_data_type"), output_data_type=opts.get("output_data_type"),
                     reloc=opts.get("reloc", {}))


def discover(models_dir):
    if not os.path.isdir(models_dir):
        raise N6Error(models_dir, "no models folder", "create models/<name>/ with a model and its neural_art.json")
    out = []
    for entry in sorted(os.listdir(models_dir)):
        path = os.path.join(models_dir, entry)
        if os.path.isdir(path) and not entry.startswith((".", "_")):
            out.append(read_model(path))
    return out
