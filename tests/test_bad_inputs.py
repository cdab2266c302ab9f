"""Every input is checked where it enters: one bad input → one `scons: ***` line naming the file
or variable and the fix, exit status 2, no traceback, and nothing a later build would take as
up to date (`scons -q` still says "not up to date"). One table, one row per kind of bad input."""
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, copy_repo, scons, stedgeai_output_folder

KWS = os.path.join("models", "kws_mlp")
TINY = os.path.join("models", "tiny_prebuilt")


def _edit_json(rel, fn):
    def mutate(repo):
        path = os.path.join(repo, rel)
        data = json.load(open(path))
        data = fn(data) or data
        open(path, "w").write(json.dumps(data))
    return mutate


def _write(rel, data):
    def mutate(repo):
        os.makedirs(os.path.dirname(os.path.join(repo, rel)), exist_ok=True)
        with open(os.path.join(repo, rel), "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
    return mutate


def _options(text):
    def fn(data):
        data["Profiles"]["default"]["options"] = text
    return _edit_json(os.path.join(KWS, "neural_art.json"), fn)


def _pool(index, **changes):
    def fn(data):
        data["memory"]["mempools"][index].update(changes)
    return _edit_json(os.path.join(KWS, "kws_mlp.mpool"), fn)


def _prop(index, key, value):
    def fn(data):
        data["memory"]["mempools"][index].setdefault("prop", {})[key] = value
    return _edit_json(os.path.join(KWS, "kws_mlp.mpool"), fn)


def _replace(rel, old, new):
    def mutate(repo):
        path = os.path.join(repo, rel)
        text = open(path).read()
        assert old in text
        open(path, "w").write(text.replace(old, new))
    return mutate


def _bom(rel):
    def mutate(repo):
        path = os.path.join(repo, rel)
        data = open(path, "rb").read()
        open(path, "wb").write(b"\xef\xbb\xbf" + data)
    return mutate


def _latin1(rel):
    def mutate(repo):
        path = os.path.join(repo, rel)
        text = open(path).read()
        open(path, "wb").write(text.replace('"atonbuf"', '"aton\xe9buf"').encode("latin-1"))
    return mutate


def _truncate(rel, keep):
    def mutate(repo):
        path = os.path.join(repo, rel)
        data = open(path, "rb").read()
        open(path, "wb").write(data[:int(len(data) * keep)])
    return mutate


def _folder(name, source=TINY):
    def mutate(repo):
        shutil.copytree(os.path.join(repo, source), os.path.join(repo, "models", name))
    return mutate


def _onnx_initializer(name, value):
    """models/kws_mlp/model.onnx with every element of initializer `name` set to `value`."""
    def mutate(repo):
        import onnx
        from onnx import numpy_helper
        path = os.path.join(repo, KWS, "model.onnx")
        model = onnx.load(path)
        init = next(i for i in model.graph.initializer if i.name == name)
        array = numpy_helper.to_array(init).copy()
        array[...] = value
        init.CopyFrom(numpy_helper.from_array(array, name))
        onnx.save(model, path)
    return mutate


def _link(rel, target, *args):
    """`rel` made a symbolic link to `target`, which does not exist; scons is given `args`."""
    def mutate(repo):
        path = os.path.join(repo, rel)
        if os.path.lexists(path):
            os.unlink(path)
        os.symlink(target, path)
        return list(args)
    return mutate


def _tflite_weight_scale_nan(repo):
    """models/ds_cnn/model.tflite with its first weight scale NaN (LiteRT loads and prepares it)."""
    import struct
    from ai_edge_litert.interpreter import Interpreter
    path = os.path.join(repo, "models", "ds_cnn", "model.tflite")
    weights = next(d for d in Interpreter(path).get_tensor_details() if d["name"] == "conv_3_weights")
    data = open(path, "rb").read()
    scale = struct.pack("<f", float(weights["quantization_parameters"]["scales"][0]))
    assert data.count(scale) == 1
    open(path, "wb").write(data.replace(scale, struct.pack("<f", float("nan"))))
    return ["ds_cnn"]


def _onnx_stamped(opset, ir, *args):
    """models/kws_mlp/model.onnx stamped with ONNX opset `opset` and IR version `ir` (None: as
    they are); scons is given `args`."""
    def mutate(repo):
        import onnx
        path = os.path.join(repo, KWS, "model.onnx")
        model = onnx.load(path)
        model.opset_import[0].version = opset or model.opset_import[0].version
        model.ir_version = ir or model.ir_version
        onnx.save(model, path)
        return list(args)
    return mutate


def _external_data(repo, keep=True):
    """models/kws_mlp/model.onnx saved with its initializers in weights.bin beside it (removed
    unless `keep`)."""
    import onnx
    path = os.path.join(repo, KWS, "model.onnx")
    model = onnx.load(path)
    onnx.save(model, path, save_as_external_data=True, location="weights.bin", size_threshold=0)
    if not keep:
        os.unlink(os.path.join(repo, KWS, "weights.bin"))


def _both(repo):
    stedgeai_output_folder(os.path.join(repo, "models", "both"))
    shutil.copyfile(os.path.join(repo, KWS, "model.onnx"), os.path.join(repo, "models", "both", "model.onnx"))


def _file_as_dir(var):
    def mutate(repo):
        open(os.path.join(repo, "afile"), "w").write("x")
        return [f"{var}=afile"]
    return mutate


def _under_file(repo):
    open(os.path.join(repo, "afile"), "w").write("x")
    return ["BUILD_DIR=afile/build"]


def _args(*args):
    return lambda repo: list(args)


def _utf16(rel):
    def mutate(repo):
        path = os.path.join(repo, rel)
        text = open(path, encoding="utf-8").read()
        open(path, "wb").write(text.encode("utf-16-le"))
    return mutate


def _io_field(field, value):
    """The prebuilt model's c_info.json with the input buffer's `field` set to `value`: mutate(repo[, model])."""
    def mutate(repo, model="tiny_prebuilt"):
        def fn(data):
            next(b for b in data["buffers"] if b["name"] == "input")[field] = value
        return _edit_json(os.path.join("models", model, "network_c_info.json"), fn)(repo)
    return mutate


def _io_format(value):
    return _io_field("format", value)


def _npy(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def _with(array, at, value):
    array[at] = value
    return array


def _npz(**arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _inputs(data, name="inputs.npy", model="tiny_prebuilt"):
    """An INPUTS= file of `data` (bytes), for a run of `model`."""
    def mutate(repo):
        _write(name, data)(repo)
        return [f"INPUTS={name}", f"run-{model}"]
    return mutate


def _board(old, new):
    """A board file (the DK's, `old` replaced by `new`) for BOARD=, building the prebuilt model."""
    def mutate(repo):
        text = open(os.path.join(repo, "firmware", "boards", "stm32n6570-dk.toml")).read()
        assert old in text
        _write(BAD_BOARD, text.replace(old, new))(repo)
        return [f"BOARD={BAD_BOARD}", "tiny_prebuilt"]
    return mutate


BAD_BOARD = "board.toml"
BOARD_LOCK = os.path.join("build", "sim-board", ".n6-board.lock")
BOARD_PROBE = os.path.join("build", "sim-board", "probe.json")


def _unusable_board_lock(repo):
    """The simulated board's lock file cannot be opened (here: a folder in its place)."""
    os.makedirs(os.path.join(repo, BOARD_LOCK))
    return ["flash-tiny_prebuilt"]
FAKE_TOOL = "fake-stedgeai"
FULL_DISK = os.path.join(ROOT, "tests", "fixtures", "disk_full_write")    # with N6_FULL_SUFFIX: those files


def _stedgeai(script, *args):
    """A copy of the simulated install whose stedgeai is `script` (sh), generating kws_mlp alone."""
    def mutate(repo):
        shutil.copytree(os.path.join(repo, "build", "stedgeai-sim", "2.2"), os.path.join(repo, FAKE_TOOL))
        tool = os.path.join(repo, FAKE_TOOL, "Utilities", "linux", "stedgeai")
        os.rename(tool, tool + ".orig")
        open(tool, "w").write("#!/bin/sh\n" + script)
        os.chmod(tool, 0o755)
        return [f"STEDGEAI_CORE_DIR={FAKE_TOOL}", "BUILD_DIR=fake-build", "fake-build/kws_mlp/st_ai_output/network.c",
                *args]
    return mutate


def _damaging_stedgeai(damage):
    """The simulated stedgeai, then `damage` (sh, $out: its output folder) of what it wrote,
    exit 0: a tool that crashed mid-write, a full disk."""
    return _stedgeai('"$0.orig" "$@" || exit $?\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done\n'
                     + damage + "\n")


# (id, mutate(repo) → extra scons args or None, the one error line must contain all of these)
CASES = [
    # JSON files: encoding, byte-order mark, types, top-level shape
    ("profile-bom", _bom(os.path.join(KWS, "neural_art.json")),
     ["models/kws_mlp/neural_art.json: Neural-ART profile file starts with a byte-order mark", "without BOM"]),
    ("mpool-not-utf8", _latin1(os.path.join(KWS, "kws_mlp.mpool")),
     ["models/kws_mlp/kws_mlp.mpool: .mpool file is not UTF-8 (byte 0xE9", "save it as UTF-8"]),
    ("model-json-string-boolean", _write(os.path.join(KWS, "model.json"), '{"reloc": {"split": "true"}}'),
     ["models/kws_mlp/model.json: reloc option 'split' is 'true', not a boolean", "true or false (no quotes)"]),
    ("model-json-shape", _write(os.path.join(KWS, "model.json"), '["split"]'),
     ["models/kws_mlp/model.json: model options file must hold an object {...} at the top level, not list"]),
    ("model-json-type", _write(os.path.join(KWS, "model.json"), '{"profile": 3}'),
     ["models/kws_mlp/model.json: 'profile' is 3, not a string"]),
    ("profile-shape", _write(os.path.join(KWS, "neural_art.json"), '"default"'),
     ["models/kws_mlp/neural_art.json: Neural-ART profile file must hold an object"]),
    ("c-info-bom", _bom(os.path.join(TINY, "network_c_info.json")),
     ["models/tiny_prebuilt/network_c_info.json: c_info.json starts with a byte-order mark"]),
    ("c-info-shape", _write(os.path.join(TINY, "network_c_info.json"), "[]"),
     ["models/tiny_prebuilt/network_c_info.json: not a c_info.json of schema 2.0"]),
    ("mpool-flag-typo", _prop(0, "constants_preferred", "yes"),
     ["models/kws_mlp/kws_mlp.mpool: pool '", "'constants_preferred' is 'yes'", '"true" or "false"']),
    ("mpool-number-type", _prop(0, "byteWidth", "wide"),
     ["models/kws_mlp/kws_mlp.mpool: pool '", "'byteWidth' is 'wide', not a number"]),
    ("mpool-magnitude-type", _pool(0, size={"value": "1", "magnitude": ["MBYTES"]}),
     ["models/kws_mlp/kws_mlp.mpool: pool '", "unknown magnitude ['MBYTES'] in 'size'", "BYTES, KBYTES or MBYTES"]),
    ("mpool-flag-type", _prop(0, "constants_preferred", {"on": True}),
     ["models/kws_mlp/kws_mlp.mpool: pool '", "'constants_preferred' is {'on': True}", '"true" or "false"']),
    # profile options
    ("not-an-option", _options("--Os enable-epoch-controller"),
     ["models/kws_mlp/neural_art.json: profile 'default': 'enable-epoch-controller' follows --Os, which takes no "
      "value", "remove it"]),
    ("unbalanced-quotes", _options('--Os --csv-file "net.csv'),
     ["models/kws_mlp/neural_art.json: profile 'default': options: no closing quotation", "balance the quotes"]),
    # .mpool layout
    ("mpool-overlap", _pool(1, offset={"value": "0x34180000", "magnitude": "BYTES"}),
     ["models/kws_mlp/kws_mlp.mpool: pools '", "overlap", "disjoint"]),
    ("mpool-beyond-32-bits", _pool(0, offset={"value": "0xFFFFF000", "magnitude": "BYTES"},
                                   size={"value": "1", "magnitude": "MBYTES"}),
     ["models/kws_mlp/kws_mlp.mpool: pool '", "ends beyond the 32-bit address space"]),
    # ONNX
    ("empty-onnx", _write(os.path.join(KWS, "model.onnx"), b""),
     ["models/kws_mlp/model.onnx: the model file is empty"]),
    ("onnx-external-data-missing", lambda repo: _external_data(repo, keep=False),
     ["models/kws_mlp/weights.bin: missing: the external data of initializer", "copy the data file next to the model"]),
    ("onnx-opset-99", _onnx_stamped(99, None), ["models/kws_mlp/model.onnx: IR version 9, opset 99: newer than any "
                                                "ONNX release this tool reads", "export the model with an older ONNX"]),
    ("onnx-ir-99", _onnx_stamped(None, 99), ["models/kws_mlp/model.onnx: IR version 99, opset 19: newer than any ONNX "
                                             "release this tool reads", "(IR version and opset)"]),
    ("onnx-opset-onnxruntime-cannot-load", _onnx_stamped(28, None, "validate-kws_mlp"),   # the tool reads it, ORT not
     ["models/kws_mlp/model.onnx: onnxruntime ", " cannot load the model: ONNX Runtime only *guarantees* support",
      "export the model with an opset and IR version onnxruntime supports"]),
    ("model-file-dangling-link", _link(os.path.join(KWS, "model.onnx"), "gone.onnx"),
     ["models/kws_mlp/model.onnx: a link to gone.onnx, which does not exist", "point the link at the model file"]),
    ("model-folder-dangling-link", _link(os.path.join("models", "linked"), "../elsewhere", "linked"),
     ["models/linked: a link to ../elsewhere, which does not exist", "point the link at a model folder"]),
    ("model-json-duplicate-key", _write(os.path.join(KWS, "model.json"), '{"profile": "default", "profile": "x"}'),
     ["models/kws_mlp/model.json: model options file: key 'profile' is given twice in one object", "keep one"]),
    ("weight-scale-nan", _onnx_initializer("w_2_scale", np.nan),
     ["models/kws_mlp/model.onnx: node 'w_2_DQ': scale 'w_2_scale' holds nan, not a finite number 0 or "
      "more", "quantise the model again"]),
    ("tflite-weight-scale-nan", _tflite_weight_scale_nan,
     ["models/ds_cnn/model.tflite: tensor 'conv_3_weights' has the scale nan, not a finite number 0 or more"]),
    ("input-scale-zero", _onnx_initializer("q_1_scale", 0),
     ["models/kws_mlp/model.onnx: node 'q_1_Q': scale 'q_1_scale' is 0: no value can be quantised"]),
    # names
    ("reloc-name-escapes", _args("RELOC_NAME=../evil"), ["RELOC_NAME: image name '../evil' is not a C identifier"]),
    ("model-json-name", _write(os.path.join(KWS, "model.json"), '{"name": "kws net"}'),
     ["models/kws_mlp/model.json: 'name' 'kws net' is not a C identifier"]),
    ("model-json-reloc-name", _write(os.path.join(KWS, "model.json"), '{"reloc": {"name": "../../x"}}'),
     ["models/kws_mlp/model.json: reloc 'name' '../../x' is not a C identifier"]),
    ("folder-named-like-a-target", _folder("flash"),
     ["models/flash: model folder name 'flash' is also a build target"]),
    ("folder-named-like-a-build-folder", _folder("stedgeai-sim"),
     ["models/stedgeai-sim: model folder name 'stedgeai-sim' is also a build target or folder"]),
    ("model-and-generated-network", _both,
     ["models/both: holds both a model (model.onnx) and a generated network (network.c)", "remove model.onnx"]),
    # variables
    ("size-zero", _args("RELOC_FLASH_SIZE=0"),
     ["RELOC_FLASH_SIZE: size '0' is zero", "or none to switch the gate off"]),
    ("size-negative", _args("RELOC_EXEC_RAM_SIZE=-640K"), ["RELOC_EXEC_RAM_SIZE: size '-640K' is negative"]),
    ("size-garbage", _args("RELOC_EXT_RAM_SIZE=lots"), ["RELOC_EXT_RAM_SIZE: size 'lots' is not a byte count"]),
    ("bool-garbage", _args("RELOC_SPLIT=maybe"), ["'RELOC_SPLIT' Invalid value for boolean variable: 'maybe'"]),
    ("build-dir-empty", _args("BUILD_DIR="), ["BUILD_DIR= is empty", "give BUILD_DIR a value (default: build)"]),
    ("build-dir-is-a-file", _file_as_dir("BUILD_DIR"), ["afile: BUILD_DIR is a file, not a folder"]),
    ("build-dir-cannot-be-made", _under_file, ["afile/build: cannot create BUILD_DIR: Not a directory"]),
    ("cache-dir-is-a-file", _file_as_dir("CACHE_DIR"), ["afile: CACHE_DIR is a file, not a folder"]),
    ("build-dir-is-the-models-folder", _args("BUILD_DIR=models"),
     ["models: BUILD_DIR is inside the models folder models/", "a folder outside it"]),
    ("build-dir-in-a-model-folder", _args("BUILD_DIR=models/kws_mlp/out"),
     ["models/kws_mlp/out: BUILD_DIR is inside the models folder models/"]),
    ("build-dir-is-the-repository", _args("BUILD_DIR=."), [".: BUILD_DIR is the repository"]),
    ("build-dir-is-the-filesystem-root", _args("-n", "BUILD_DIR=/"),     # -n: nothing written, were it let through
     ["/: BUILD_DIR is a folder holding the repository"]),
    ("build-dir-in-a-source-folder", _args("BUILD_DIR=site_scons"),
     ["site_scons: BUILD_DIR is inside the source folder site_scons/"]),
    ("cache-dir-is-the-repository", _args("CACHE_DIR=."), [".: CACHE_DIR is the repository"]),
    ("board-image-outside-flash", _board("network = 0x71000000", "network = 0x10000000"),
     ["board.toml: key images.network: 0x10000000 is outside the flash [0x70000000, 0x78000000]",
      "an address inside [flash]"]),
    ("board-lock-unusable", _unusable_board_lock,
     ["build/sim-board: cannot write the board's lock there: Is a directory", "make that folder writable"]),
    ("sim-board-probe-damaged", lambda repo: _write(BOARD_PROBE, '{"serial": ')(repo) or ["flash-tiny_prebuilt"],
     ["build/sim-board/probe.json: the simulated board's probe file is damaged: Expecting value", "remove it"]),
    ("runs-zero", _args("RUNS=0", "run-tiny_prebuilt"), ["RUNS: 0 is zero", "RUNS=1 or more"]),
    ("runs-negative", _args("RUNS=-1", "run-tiny_prebuilt"), ["RUNS: -1 is negative"]),
    ("seed-negative", _args("SEED=-1", "run-tiny_prebuilt"), ["SEED: -1 is negative", "SEED=0 or more"]),
    ("profile-samples-zero", _args("PROFILE_SAMPLES=0", "profile-tiny_prebuilt"), ["PROFILE_SAMPLES: 0 is zero"]),
    ("tolerance-negative", _args("VALIDATE_TOLERANCE=-1", "validate-tiny_prebuilt"),
     ["VALIDATE_TOLERANCE: '-1' is negative", "a number 0 or more"]),
    ("tolerance-nan", _args("VALIDATE_TOLERANCE=nan", "validate-tiny_prebuilt"),
     ["VALIDATE_TOLERANCE: 'nan' is not a finite number"]),
    ("stedgeai-timeout-zero", _args("STEDGEAI_TIMEOUT=0"), ["STEDGEAI_TIMEOUT: '0' is zero"]),
    # INPUTS= files
    ("inputs-empty", _inputs(b""), ["inputs.npy: the inputs file is empty", "INPUTS="]),
    ("inputs-cut-short", _inputs(_npy(np.zeros((4, 64), np.int8))[:-10]), ["inputs.npy: not a numpy inputs file"]),
    ("inputs-text", _inputs(b"1 2 3\n"), ["inputs.npy: not a numpy inputs file"]),
    ("inputs-no-sample", _inputs(_npy(np.zeros((0, 64), np.int8))),
     ["inputs.npy: an array of shape [0, 64] holds no sample"]),
    ("inputs-strings", _inputs(_npy(np.array(["a", "b"]))), ["inputs.npy: the inputs file holds <U1, not numbers"]),
    ("inputs-no-array", _inputs(b"PK\x05\x06" + bytes(18), "inputs.npz"),        # an empty .npz (zip)
     ["inputs.npz: the inputs file holds no array"]),
    ("inputs-nan", _inputs(_npy(_with(np.zeros((2, 490), np.float32), (1, 7), np.nan)), "in.npy", "kws_mlp_f32"),
     ["in.npy: array[1, 7] is nan, not a finite number", "give finite numbers"]),
    ("inputs-inf-in-npz", _inputs(_npz(input_float32=_with(np.zeros((1, 490), np.float32), (0, 3), -np.inf)),
                                  "inputs.npz", "kws_mlp_f32"),
     ["inputs.npz: array input_float32[0, 3] is -inf, not a finite number"]),
    # c_info.json: encoding, the inputs' and outputs' formats against network.c
    ("c-info-utf16", _utf16(os.path.join(TINY, "network_c_info.json")),
     ["models/tiny_prebuilt/network_c_info.json: c_info.json is UTF-16-LE text (no byte-order mark)",
      "save it as UTF-8"]),
    ("c-info-format-type", _io_format(8),
     ["models/tiny_prebuilt/network_c_info.json: buffer 'input': format 8 is not an STAI_FORMAT_ name"]),
    ("c-info-format-unknown", _io_format("STAI_FORMAT_BOGUS"),
     ["models/tiny_prebuilt/network_c_info.json: buffer 'input': format 'STAI_FORMAT_BOGUS' is not an STAI_FORMAT_ "
      "name"]),
    ("c-info-format-contradicts-network-c", _io_format("STAI_FORMAT_FLOAT"),
     ["models/tiny_prebuilt/network_c_info.json: buffer 'input' is STAI_FORMAT_FLOAT here but DataType_INT8 in "
      "network.c"]),
    # stedgeai itself: fails, writes nothing, hangs
    ("stedgeai-fails", _stedgeai('echo "ST Edge AI Core v2.2.0"; echo "E010(InvalidModelError): not supported" >&2; '
                                 "exit 1\n"),
     ["stedgeai generate of models/kws_mlp/model.onnx failed (exit 1): E010(InvalidModelError): not supported",
      "see the tool's output above"]),
    ("stedgeai-prints-binary", _stedgeai("printf 'ST Edge AI Core v2.2.0\\n\\033[31m\\001bad\\377\\n'; exit 1\n"),
     ["failed (exit 1): \\x1b[31m\\x01bad"]),
    ("stedgeai-writes-nothing", _stedgeai('echo "ST Edge AI Core v2.2.0"\n'),
     ["models/kws_mlp/model.onnx: stedgeai generate wrote no network.c (exit 0); last output: ST Edge AI Core"]),
    ("stedgeai-hangs", _stedgeai('echo "ST Edge AI Core v2.2.0"; sleep 600\n', "STEDGEAI_TIMEOUT=3"),
     ["STEDGEAI_TIMEOUT: stedgeai generate of models/kws_mlp/model.onnx stopped after 3 s",
      "STEDGEAI_TIMEOUT=<seconds>"]),
    # stedgeai's outputs damaged as it wrote them: the generate step's failure (it runs again)
    ("stedgeai-writes-truncated-network-c",
     _damaging_stedgeai('head -c 3000 "$out/network.c" > "$out/cut" && mv "$out/cut" "$out/network.c"'),
     ["fake-build/kws_mlp/st_ai_output/network.c: stedgeai generate wrote a damaged file: truncated",
      "run the build again (generate runs again)"]),
    ("stedgeai-writes-broken-c-info", _damaging_stedgeai('echo \'{"graphs": [\' > "$out/network_c_info.json"'),
     ["fake-build/kws_mlp/st_ai_output/network_c_info.json: stedgeai generate wrote a damaged file: malformed"]),
    ("stedgeai-writes-short-raw", _damaging_stedgeai('truncate -s 100 "$out"/*.raw'),
     ["fake-build/kws_mlp/st_ai_output/network_atonbuf.AXISRAM2.raw: stedgeai generate wrote a damaged file"]),
    # what stedgeai writes: names the file system takes, inside its output folder; a full disk
    ("stedgeai-name-too-long", _write(os.path.join(KWS, "model.json"), json.dumps({"name": "n" * 250})),
     ["failed (exit 2): --name: the file name 'nnn", "' is 252 bytes long, more than", "give a shorter --name"]),
    ("mpool-fname-escapes", _pool(0, fname="../../evil"),
     ["failed (exit 2): models/kws_mlp/kws_mlp.mpool: the file name 'network_atonbuf.../../evil.raw' is not one of "
      "the output folder", "a short fname"]),
    ("stedgeai-disk-full", _stedgeai(f'PYTHONPATH={FULL_DISK} N6_FULL_SUFFIX=.raw exec "$0.orig" "$@"\n'),
     ["failed (exit 2): fake-build/kws_mlp/st_ai_output: cannot write: No space left on device",
      "(fix: free space on its disk, then build again)"]),
    # generated C
    ("truncated-network-c", _truncate(os.path.join(TINY, "network.c"), 0.6),
     ["models/tiny_prebuilt/network.c: truncated", "copy the complete file"]),
    ("real-output-on-the-simulated-install", _replace(os.path.join(TINY, "network.c"), "(simulated)", ""),
     ["models/tiny_prebuilt/network.c: written by a real ST Edge AI Core", "set STEDGEAI_CORE_DIR"]),
]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = copy_repo(tmp_path_factory.mktemp("bad"))
    scons(repo)
    return repo


@pytest.fixture
def pristine(repo, tmp_path):
    """The case's repository; its models and stray files are put back afterwards."""
    saved = tmp_path / "models"
    shutil.copytree(os.path.join(repo, "models"), saved)
    yield repo
    shutil.rmtree(os.path.join(repo, "models"))
    shutil.copytree(saved, os.path.join(repo, "models"))
    for stray in ("afile", "inputs.npy", "inputs.npz", "in.npy", FAKE_TOOL, "fake-build", BAD_BOARD, BOARD_LOCK,
                  BOARD_PROBE):
        path = os.path.join(repo, stray)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.unlink(path)


@pytest.mark.parametrize("mutate,fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_leaves_nothing_up_to_date(pristine, mutate, fragments):
    repo = pristine
    args = mutate(repo) or []
    proc = scons(repo, *args, check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert proc.returncode == 2, proc.stdout[-1500:] + proc.stderr
    assert "Traceback" not in proc.stderr and len(errors) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    assert "(fix: " in errors[0] and errors[0].isprintable(), errors[0]
    again = scons(repo, "-q", *args, check=False)
    assert again.returncode != 0, "a later run takes the failed output as up to date"


def test_st_files_with_a_key_given_twice_are_read_as_st_reads_them(pristine):
    """ST's tools read c_info.json with Python's json: a key given twice keeps its last value. n6
    takes it the same (here the last `format` agrees with network.c, the first does not)."""
    _replace(os.path.join(TINY, "network_c_info.json"), '"format": "STAI_FORMAT_S8"',
             '"format": "STAI_FORMAT_FLOAT", "format": "STAI_FORMAT_S8"')(pristine)
    assert "  PREPARE " in scons(pristine, "tiny_prebuilt").stdout


def test_onnx_external_data_is_read_and_a_change_to_it_regenerates(pristine):
    """An ONNX model whose weights are in a file of their own builds, and that file is one of the
    generate step's sources: new weights in it generate again."""
    _external_data(pristine)
    assert "  GEN " in scons(pristine, "kws_mlp").stdout
    assert scons(pristine, "-q", "kws_mlp", check=False).returncode == 0
    weights = os.path.join(pristine, KWS, "weights.bin")
    data = bytearray(open(weights, "rb").read())
    data[0] ^= 1
    open(weights, "wb").write(bytes(data))
    assert scons(pristine, "-q", "kws_mlp", check=False).returncode != 0


def test_damaged_generate_output_is_rewritten_by_the_next_run_with_the_same_tool(pristine):
    """A generate whose tool cut network.c short once (a full disk, a crash): the build fails at
    GEN, and the next run with the same tool generates again and builds the image."""
    repo = pristine
    once = '[ -e "$out/../once" ] || { touch "$out/../once"; head -c 3000 "$out/network.c" > "$out/cut"; ' \
           'mv "$out/cut" "$out/network.c"; }'
    args = _damaging_stedgeai(once)(repo)[:2] + ["fake-build/kws_mlp/network_rel.bin"]
    failed = scons(repo, *args, check=False)
    assert failed.returncode == 2 and "stedgeai generate wrote a damaged file: truncated" in failed.stderr
    assert "  PREPARE" not in failed.stdout
    again = scons(repo, *args)
    assert "  GEN " in again.stdout and "  PACK " in again.stdout


def test_the_table_covers_every_boundary():
    """Issue's list: JSON (encoding, BOM, types, shape) of profile, .mpool, model.json, c_info.json;
    profile options; .mpool layout; ONNX; names; variables; truncated C; the image tools below."""
    ids = {c[0] for c in CASES}
    for needed in ("profile-bom", "mpool-not-utf8", "model-json-string-boolean", "model-json-shape", "c-info-bom",
                   "not-an-option", "unbalanced-quotes", "mpool-overlap", "mpool-beyond-32-bits", "empty-onnx",
                   "reloc-name-escapes", "folder-named-like-a-target", "size-zero", "size-negative",
                   "build-dir-is-a-file", "cache-dir-is-a-file", "truncated-network-c",
                   "build-dir-is-the-models-folder", "build-dir-in-a-model-folder", "build-dir-empty",
                   "build-dir-is-the-repository", "build-dir-is-the-filesystem-root", "build-dir-in-a-source-folder",
                   "runs-zero", "runs-negative",
                   "profile-samples-zero", "tolerance-negative", "tolerance-nan", "inputs-empty", "c-info-utf16",
                   "c-info-format-type", "c-info-format-contradicts-network-c", "stedgeai-fails",
                   "stedgeai-writes-nothing", "stedgeai-hangs", "stedgeai-writes-truncated-network-c",
                   "stedgeai-writes-broken-c-info", "stedgeai-writes-short-raw", "stedgeai-prints-binary",
                   "board-image-outside-flash", "board-lock-unusable", "weight-scale-nan", "tflite-weight-scale-nan",
                   "input-scale-zero", "inputs-nan", "inputs-inf-in-npz", "model-json-duplicate-key",
                   "c-info-format-unknown", "model-file-dangling-link", "model-folder-dangling-link",
                   "onnx-external-data-missing", "onnx-opset-99", "onnx-ir-99", "onnx-opset-onnxruntime-cannot-load",
                   "stedgeai-name-too-long", "mpool-fname-escapes", "stedgeai-disk-full",
                   "mpool-magnitude-type", "mpool-flag-type", "sim-board-probe-damaged"):
        assert needed in ids


@pytest.mark.parametrize("field, value, refusal", [
    ("name", ["input"], None),                   # no buffer of network.c: not compared, as any other name
    ("format", ["STAI_FORMAT_S8"], "buffer 'input': format ['STAI_FORMAT_S8'] is not an STAI_FORMAT_ name"),
    ("format", {"S8": 1}, "buffer 'input': format {'S8': 1} is not an STAI_FORMAT_ name"),
])
def test_c_info_buffer_fields_of_another_json_type(tmp_path, field, value, refusal):
    """A c_info.json buffer's name or format given as a list or object: read as any other value
    that is not a buffer of network.c or a format name, never a TypeError."""
    from n6.errors import N6Error
    from n6.reloc.prepare import analyse
    folder = shutil.copytree(os.path.join(ROOT, TINY), tmp_path / "models" / "m")
    _io_field(field, value)(str(tmp_path), "m")
    if refusal is None:
        analyse(str(folder / "network.c"))
    else:
        with pytest.raises(N6Error, match=re.escape(refusal)):
            analyse(str(folder / "network.c"))


def _zip_entry(data, at, value):
    """The .npz `data` with the 2-byte field at offset `at` of its first central-directory entry
    set to `value` (8: the flags, bit 0 encrypted; 10: the compression method)."""
    entry = data.index(b"PK\x01\x02")
    return data[:entry + at] + value.to_bytes(2, "little") + data[entry + at + 2:]


_SAMPLES = _npz(x=np.zeros((2, 16), np.float32), y=np.zeros(2, np.int64), m_inputs_1=np.zeros((2, 16), np.int8))


@pytest.mark.parametrize("content, problem", [
    (b"", "the {what} file is empty"),
    (_SAMPLES[:len(_SAMPLES) // 2], "not a numpy {what} file: File is not a zip file"),
    (_zip_entry(_SAMPLES, 10, 99), "not a numpy {what} file: That compression method is not supported"),
    (_zip_entry(_SAMPLES, 8, 1), "not a numpy {what} file: File 'x.npy' is encrypted"),
    (_npz(x=np.float32(1), y=np.int64(1), m_inputs_1=np.int8(1)), "an array x of shape [] holds no sample"),
    (_npz(x=_with(np.zeros((2, 16), np.float32), (1, 3), np.nan)), "array x[1, 3] is nan, not a finite number"),
])
@pytest.mark.parametrize("what", ["inputs", "reference data", "test set"])
def test_the_numpy_files_a_user_gives_are_read_alike(tmp_path, what, content, problem):
    """INPUTS=, model.json "reference_data" and a model's test_data.npz: a damaged, cut-short or
    empty file, a sample that is one number, a float that is not finite: one line naming the file."""
    from n6.aivalidation.messages import ModelInfo, TensorDesc
    from n6.errors import N6Error
    from n6.run import inference, reference, validate
    model = ModelInfo("network", [TensorDesc("input", "int8", (1, 16), 0.1, 0)],
                      [TensorDesc("out", "int8", (1, 4), 0.1, 0)])
    read = {"inputs": inference.read_inputs, "reference data": lambda p: reference.read_data(p, model),
            "test set": lambda p: validate.test_set(p, model)}[what]
    path = tmp_path / "data.npz"
    path.write_bytes(content)
    with pytest.raises(N6Error, match="^" + re.escape(f"{path}: {problem.format(what=what)}")):
        read(str(path))


def test_a_damaged_board_file_stops_neither_help_nor_clean(tmp_path):
    """The size gate's budgets (and with absolute flash pools the image area) are read from the
    board file while the build is declared, but `scons -h` and `scons -c` build nothing: they do
    not read it; a build stops in one line."""
    repo = copy_repo(tmp_path / "repo")
    _board("network = 0x71000000", "network = 0x10000000")(repo)
    for args in ((), ("RELOC_ABSOLUTE_FLASH_POOLS=1",)):
        shown = scons(repo, "-h", f"BOARD={BAD_BOARD}", *args)
        assert "Models (<model>):" in shown.stdout and "cannot be built" not in shown.stdout, args
        cleaned = scons(repo, "-c", f"BOARD={BAD_BOARD}", *args)
        assert "scons: ***" not in shown.stdout + shown.stderr + cleaned.stdout + cleaned.stderr, args
        proc = scons(repo, f"BOARD={BAD_BOARD}", "tiny_prebuilt", *args, check=False)
        assert proc.returncode == 2 and proc.stderr.count("scons: ***") == 1 and \
            "board.toml: key images.network: 0x10000000 is outside the flash" in proc.stderr, args


@pytest.mark.parametrize("value", ["none", "0x800000", "8M", "8388608"])
def test_size_spellings_and_none_are_accepted(repo, value):
    proc = scons(repo, f"RELOC_FLASH_SIZE={value}", "tiny_prebuilt")
    assert ("flash (network_rel.bin)" in proc.stdout) == (value != "none") or "up to date" in proc.stdout


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))
    return subprocess.run([sys.executable, "-m", "n6.reloc", *args], capture_output=True, text=True, env=env)


@pytest.mark.parametrize("command", ["inspect", "check"])
def test_image_tools_on_a_file_that_is_not_an_image(repo, command):
    proc = _cli(command, os.path.join(repo, "README.md"))
    assert proc.returncode in (1, 2) and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert ("not a relocatable model image" if command == "inspect" else "INVALID_BIN") in proc.stderr


@pytest.mark.parametrize("command", ["inspect", "check"])
def test_image_tools_on_a_split_image_without_its_params_file(repo, tmp_path, command):
    scons(repo, "RELOC_SPLIT=1", "tiny_prebuilt")
    image = tmp_path / "network_rel.bin"
    shutil.copyfile(os.path.join(repo, "build", "tiny_prebuilt", "network_rel.bin"), image)
    proc = _cli(command, str(image))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert f"{tmp_path}/network_rel_params.bin: missing: this split image's params file" in proc.stderr
    shutil.copyfile(os.path.join(repo, "build", "tiny_prebuilt", "network_rel_params.bin"),
                    tmp_path / "network_rel_params.bin")
    assert _cli(command, str(image)).returncode == 0
    scons(repo, "tiny_prebuilt")


def _errors(proc):
    return [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]


def test_stedgeai_gets_no_stdin_and_its_prompt_is_shown(pristine):
    """A tool that asks (a licence prompt) fails at once instead of waiting for an answer that
    never comes, and what it printed is shown above the error."""
    args = _stedgeai('echo "ST Edge AI Core v2.2.0"; printf "Accept the licence agreement [y/n]? "; '
                     'read answer || { echo; echo "E103(CliArgumentError): no answer" >&2; exit 3; }\n')(pristine)
    answer, never = os.pipe()       # stdin open and silent: a prompt reading it would wait for ever
    try:
        proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=pristine, stdin=answer,
                              capture_output=True, text=True, timeout=60)
    finally:
        os.close(answer)
        os.close(never)
    assert proc.returncode == 2 and len(_errors(proc)) == 1, proc.stdout + proc.stderr
    assert "failed (exit 3): E103(CliArgumentError): no answer" in _errors(proc)[0]
    assert "  | Accept the licence agreement [y/n]?" in proc.stdout


def _damaged(repo, *args):
    """A build whose pack steps damage the images they wrote, after the packer checked them."""
    return scons(repo, "RELOC_FLASH_SIZE=9M", *args, check=False,
                 env={"PYTHONPATH": os.path.join(ROOT, "tests", "fixtures", "damaged_pack")})


def test_check_reports_every_bad_image(repo):
    proc = _damaged(repo, "-k", "check")
    models = os.path.join(repo, "models")
    images = sorted(d for d in os.listdir(models) if os.path.isdir(os.path.join(models, d)))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert [e.split("]", 1)[1].split(":")[0].strip() for e in _errors(proc)] == \
        [f"build/{m}/network_rel.bin" for m in images]
    assert all("rejected: n6 rule 'params_crc' (ST's loader installs it)" in e and "(fix: build it again: `scons`)" in e
               for e in _errors(proc))
    assert scons(repo, "-q", check=False).returncode != 0          # the advice works: rejected images are gone
    scons(repo)
    assert "CHECK" in scons(repo, "check").stdout


def test_image_tools_are_quiet_on_a_broken_pipe(repo):
    """`./n6 inspect ... | head`: the reader stopped, the image is fine: no error line."""
    reader, writer = os.pipe()
    os.close(reader)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))
    try:
        proc = subprocess.run([sys.executable, "-m", "n6.reloc", "inspect",
                               os.path.join(repo, "build", "big_mlp", "network_rel.bin")],
                              stdout=writer, stderr=subprocess.PIPE, text=True, env=env)
    finally:
        os.close(writer)
    assert proc.stderr == "" and proc.returncode == 141


def _folder_digest(folder):
    out = {}
    for d, _, files in os.walk(folder):
        for f in files:
            with open(os.path.join(d, f), "rb") as data:
                out[os.path.relpath(os.path.join(d, f), folder)] = hashlib.sha256(data.read()).hexdigest()
    return out


def test_disk_full_while_packing_is_one_line_and_leaves_no_image(repo):
    """The disk fills up while the pack step writes network_rel.bin: one line naming the image and
    the fix, no image (nor a temporary) left, and the next build packs again."""
    args = ("BUILD_DIR=full-build", "tiny_prebuilt")
    full = {"PYTHONPATH": FULL_DISK}
    proc = scons(repo, *args, check=False, env=full)
    assert proc.returncode == 2 and len(_errors(proc)) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert _errors(proc)[0].endswith("full-build/tiny_prebuilt/network_rel.bin: cannot write: No space left on device "
                                     "(fix: free space on its disk, then build again)"), _errors(proc)[0]
    folder = os.path.join(repo, "full-build", "tiny_prebuilt")
    assert not [f for f in os.listdir(folder) if f.startswith("network_rel.bin")]
    assert "  PACK " in scons(repo, *args).stdout
    shutil.rmtree(os.path.join(repo, "full-build"))


def test_a_killed_board_is_one_line_and_stores_nothing(repo):
    """The simulated board process killed during a run (not one of its own faults): one line saying
    so, not the board file with a last line the board never printed; nothing stored."""
    args = ("BUILD_DIR=killed-build", "run-tiny_prebuilt")
    proc = scons(repo, *args, check=False, env={"N6_SIM_BOARD_FAULT": "kill:1"})
    assert proc.returncode == 2 and len(_errors(proc)) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert re.search(r"\] simulated board \(pid \d+\): killed by SIGKILL during the step; nothing of this step "
                     r"was stored \(fix: run the step again\)$", _errors(proc)[0]), _errors(proc)[0]
    assert not os.path.exists(os.path.join(repo, "killed-build", "tiny_prebuilt", "run", "run.json"))
    assert scons(repo, "-q", *args, check=False).returncode != 0
    shutil.rmtree(os.path.join(repo, "killed-build"))


def test_bad_profile_baseline_keeps_the_previous_profile(repo, tmp_path):
    scons(repo, "profile-tiny_prebuilt", timeout=900)
    folder = os.path.join(repo, "build", "tiny_prebuilt", "profile")
    before = _folder_digest(folder)
    baseline = tmp_path / "baseline.json"
    baseline.write_text('{"epochs": 3}')
    proc = scons(repo, "profile-tiny_prebuilt", f"PROFILE_BASELINE={baseline}", check=False, timeout=900)
    assert proc.returncode == 2 and len(_errors(proc)) == 1 and "Traceback" not in proc.stderr
    assert "not a profile.json written by `scons profile`" in _errors(proc)[0]
    assert _folder_digest(folder) == before


def test_run_failing_half_way_keeps_the_previous_report(repo):
    """A run whose saving fails (the disk fills up after its first file) leaves the previous run's
    report whole (outputs, epoch tensors, run.json, validate.json) and nothing of its own; a run
    that succeeds replaces the outputs and drops the verdict about the old ones."""
    args = ("run-tiny_prebuilt", "RUN_PER_LAYER=data")
    scons(repo, *args, "validate-tiny_prebuilt", "VALIDATE_TOLERANCE=0", timeout=900)
    folder = os.path.join(repo, "build", "tiny_prebuilt", "run")
    before = _folder_digest(folder)
    assert "validate.json" in before and any(f.startswith("epochs/") for f in before)
    proc = scons(repo, *args, "SEED=3", check=False, timeout=900,
                 env={"PYTHONPATH": os.path.join(ROOT, "tests", "fixtures", "disk_full")})
    assert proc.returncode == 2 and len(_errors(proc)) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "build/tiny_prebuilt/run: cannot save the run's outputs: No space left on device" in _errors(proc)[0]
    assert _folder_digest(folder) == before
    assert scons(repo, *args, "SEED=3", "-q", check=False).returncode != 0
    scons(repo, *args, "SEED=3", timeout=900)
    after = _folder_digest(folder)
    assert "validate.json" not in after and after["run.json"] != before["run.json"]
    assert {f for f in after if f.endswith(".npy")} == {f for f in before if f.endswith(".npy")}
