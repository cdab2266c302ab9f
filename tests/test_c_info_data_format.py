"""c_info.json's `data_format` of the model's inputs and outputs is spelt as ST's tool spells it
(the test bed's samples, 2.2 and 3.0): a quantizer name, one-element scale and zero lists (empty
for float), the element size in bits, SIGNED / UNSIGNED / FLOAT."""
import glob
import json
import os

import pytest

REAL = os.environ.get("N6_REAL_STEDGEAI", "")


def _formats(info):
    graph = info["graphs"][0]
    return [t["data_format"] for t in graph["original_inputs"] + graph["original_outputs"]]


def _shape(fmt):
    """What a data_format says apart from its values: its keys, and each value's kind."""
    return {k: (type(v).__name__, type(v[0]).__name__ if isinstance(v, list) and v else None) for k, v in fmt.items()}


def test_an_int8_model_and_float_io_are_spelt_as_st_spells_them(generated):
    info = json.load(open(os.path.join(generated("kws_mlp"), "network_c_info.json")))
    inp, out = _formats(info)
    assert inp == {"quantizer": "UNIFORM", "scale": [inp["scale"][0]], "size": 8, "type": "SIGNED",
                   "zero": [inp["zero"][0]]} and isinstance(inp["zero"][0], int) and inp["scale"][0] > 0
    assert out["type"] == "SIGNED" and out["size"] == 8


@pytest.mark.skipif(not REAL, reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")
def test_the_spelling_is_the_one_of_st_samples(generated):
    theirs = [f for path in sorted(glob.glob(os.path.join(REAL, "samples", "*", "network_c_info.json")))
              + [os.path.join(REAL, "ec-workspace", "c_info.json")] for f in _formats(json.load(open(path)))]
    ours = [f for m in ("kws_mlp", "kws_mlp_f32")
            for f in _formats(json.load(open(os.path.join(generated(m), "network_c_info.json"))))]
    by_type = {f["type"]: _shape(f) for f in theirs}
    assert {"SIGNED", "UNSIGNED", "FLOAT"} <= set(by_type)
    for fmt in ours:
        assert _shape(fmt) == by_type[fmt["type"]], (fmt, by_type[fmt["type"]])
        assert fmt["quantizer"] in {f["quantizer"] for f in theirs if f["type"] == fmt["type"]}
        assert fmt["size"] in {f["size"] for f in theirs if f["type"] == fmt["type"]}
