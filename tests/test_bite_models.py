"""Model folders and model.json (n6.models): every option check on both sides, exact messages.
Written against the survivors of tools/mutate.py (target `models`): each test fails on one."""
import json

import pytest

from n6.errors import N6Error
from n6.models import read_model


def folder(tmp_path, options=None, files=("model.onnx", "neural_art.json"), name="m"):
    path = tmp_path / name
    path.mkdir()
    for f in files:
        (path / f).write_bytes(b"x")
    if options is not None:
        (path / "model.json").write_text(json.dumps(options))
    return path


def refused(tmp_path, options, message, **kw):
    with pytest.raises(N6Error, match=message) as e:
        read_model(folder(tmp_path, options, **kw))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("name, ok", [("kws", True), ("_k9", True), ("9k", False), ("k-s", False), ("", False),
                                      (7, False)])
def test_c_name_is_a_c_identifier(tmp_path, name, ok):
    if ok:
        assert read_model(folder(tmp_path, {"name": name})).c_name == name
        assert read_model(folder(tmp_path, {"reloc": {"name": name}}, name="r")).reloc == {"name": name}
    elif isinstance(name, str):
        refused(tmp_path, {"name": name}, f"'name' {name!r} is not a C identifier")
    else:
        refused(tmp_path, {"name": name}, "'name' is 7, not a string")


@pytest.mark.parametrize("value, stored", [("int8", "int8"), ("uint8", "uint8"), ("float32", "float32"),
                                           ("float", "float32")])
def test_data_types(tmp_path, value, stored):
    spec = read_model(folder(tmp_path, {"input_data_type": value, "output_data_type": value}))
    assert (spec.input_data_type, spec.output_data_type) == (stored, stored)


@pytest.mark.parametrize("key", ["input_data_type", "output_data_type"])
def test_unknown_data_type(tmp_path, key):
    refused(tmp_path, {key: "int16"}, f"'{key}' is 'int16'")


@pytest.mark.parametrize("reloc, message", [
    ({"split": "yes"}, "reloc option 'split' is 'yes', not a boolean"),
    ({"split": 1}, "reloc option 'split' is 1, not a boolean"),
    ({"name": True}, "reloc option 'name' is True, not a string"),
    ({"name": 3}, "reloc option 'name' is 3, not a string"),
    ({"colour": 1}, "unknown reloc option 'colour'"),
])
def test_reloc_option_types(tmp_path, reloc, message):
    refused(tmp_path, {"reloc": reloc}, message)


def test_reloc_options_of_the_right_type(tmp_path):
    reloc = {"secure": False, "split": True, "dbg_info": True, "ecblob_in_params": False, "name": "k"}
    assert read_model(folder(tmp_path, {"reloc": reloc})).reloc == reloc


@pytest.mark.parametrize("items, message", [
    (["--foo", 3], "'generate_options' item 2 is 3, not a string"),
    (["--foo", ""], "'generate_options' item 2 is empty"),
    (["a\nb"], r"'generate_options' item 1 'a\\nb' holds a control character"),
    (["a\0b"], r"'generate_options' item 1 'a\\x00b' holds a control character"),
    (["--foo bar"], "'generate_options' item 1 '--foo bar' holds a space"),
    (["--name=x"], r"'generate_options' item 1 '--name=x' is set by the build \(from \"name\"\)"),
])
def test_generate_option_items(tmp_path, items, message):
    refused(tmp_path, {"generate_options": items}, message)


def test_generate_options_kept_in_order(tmp_path):
    items = ["--foo", "a b", "--bar=1"]                     # a value may hold a space; an option may not
    assert read_model(folder(tmp_path, {"generate_options": items})).generate_options == tuple(items)


def test_source_only_in_a_prebuilt_folder(tmp_path):
    refused(tmp_path, {"source": "model.onnx"}, "'source' names the model of a prebuilt folder")


def test_prebuilt_network_needs_its_header_and_raw_files(tmp_path):
    """Without c_info.json, <N>.c counts as generated only beside <N>.h and <N>_*.raw."""
    spec = read_model(folder(tmp_path, files=("network.c", "network.h", "network_atonbuf.xSPI2.raw")))
    assert spec.kind == "prebuilt" and spec.network_c.endswith("network.c")
    for files in [("network.c", "network_atonbuf.xSPI2.raw"), ("network.c", "network.h")]:
        with pytest.raises(N6Error, match="no model file"):
            read_model(folder(tmp_path, files=files, name="p" + str(len(files[1]))))


def test_empty_model_file(tmp_path):
    path = folder(tmp_path)
    (path / "model.onnx").write_bytes(b"")
    with pytest.raises(N6Error, match="the model file is empty"):
        read_model(path)


@pytest.mark.parametrize("value, files, message", [
    ("data.npz", (), "'reference_data' 'data.npz' is not found"),
    ("data.txt", ("data.txt",), r"'reference_data' 'data.txt' is not a .npz file"),
])
def test_reference_data_file(tmp_path, value, files, message):
    refused(tmp_path, {"reference_data": value}, message, files=("model.onnx", "neural_art.json") + files)


def test_reference_data_found(tmp_path):
    path = folder(tmp_path, {"reference_data": "d/data.npz"})
    (path / "d").mkdir()
    (path / "d" / "data.npz").write_bytes(b"x")
    assert read_model(path).reference_data == str(path / "d" / "data.npz")


def test_a_reloc_name_must_be_a_c_identifier(tmp_path):
    refused(tmp_path, {"reloc": {"name": "9k"}}, "reloc 'name' '9k' is not a C identifier")


@pytest.mark.parametrize("option, fix", [("-n", 'remove it and use "name" in model.json'), ("-o", "remove it")])
def test_an_option_the_build_sets_names_where_to_set_it(tmp_path, option, fix):
    with pytest.raises(N6Error) as e:
        read_model(folder(tmp_path, {"generate_options": [option, "x"]}))
    assert e.value.fix == fix


def test_onnx_external_data_is_found_past_the_first_byte(tmp_path):
    """The files a model's initializers live in: found by `location` anywhere in the file."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    from n6.models import onnx_external_data
    weights = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [64, 64])], [weights])
    path = str(tmp_path / "m.onnx")
    onnx.save_model(helper.make_model(graph), path, save_as_external_data=True, location="m.data",
                    size_threshold=0)
    assert onnx_external_data(path) == (str(tmp_path / "m.data"),)
    (tmp_path / "plain.onnx").write_bytes(b"\x08\x07no external data here")
    assert onnx_external_data(str(tmp_path / "plain.onnx")) == ()


def test_two_model_files_in_a_folder_are_refused(tmp_path):
    refused(tmp_path, None, r"several model files \(model.onnx, model.tflite\)",
            files=("model.onnx", "model.tflite", "neural_art.json"))
