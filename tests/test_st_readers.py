"""The simulated generator's network.c where ST's readers look: float literals as ST prints them
(the float32 value to 15 significant digits, 0.00784313771873713), and in each software epoch's
function the unit and kind lines (`/* Unit= 27 [PROCESSOR 0] */`, `/* kind=<c_info's node kind>
node=<name> */`) that ST's c_network_parser.py (npu_profiler.py -c) reads. With the test bed: ST's
parser on every bundled model finds the epochs and the operation kinds the c_info lists."""
import json
import os
import re
import subprocess

import numpy as np
import pytest

from conftest import MODELS

BUNDLED = sorted(d for d in os.listdir(MODELS) if os.path.isfile(os.path.join(MODELS, d, "neural_art.json")))
REAL = os.environ.get("N6_REAL_STEDGEAI", "")
ST_CLIENT = os.path.join(REAL, "st_ai_runner.sh")
FLOAT_ARRAY = re.compile(r"static const float \w+\[\d*\] = \{([^}]*)\}")
FLOAT_FIELD = re.compile(r"\.(?:multiplier|mult_a|mult_b|scale_h|scale_w|in_scale|out_scale|scale) = ([-\d][^,\s]*),")


def epochs_of(c_info):
    """[(epoch number, mapping, [(kind, node name)])] from the c_info's graph."""
    out = []
    for node in json.load(open(c_info))["graphs"][0]["nodes"]:
        kinds = [(n["description"].removeprefix("Node kind="), n["name"]) for n in node["subgraph_nodes"]]
        out.append((int(node["name"].removeprefix("epoch_")), node["mapping"], kinds))
    return out


@pytest.mark.parametrize("model", BUNDLED)
def test_float_literals_are_st_decimals_that_read_back_to_the_same_float32(generated, model):
    text = open(os.path.join(generated(model), "network.c")).read()
    assert not re.search(r"0x[0-9a-f.]+p[-+]?\d+f", text)                      # no C99 hex floats
    literals = [v.strip() for body in FLOAT_ARRAY.findall(text) for v in body.replace("\n", " ").split(",")
                if v.strip()] + FLOAT_FIELD.findall(text)
    assert literals
    for lit in literals:
        value = np.float32(float(lit))
        assert f"{float(value):.15g}" == lit, lit


@pytest.mark.parametrize("model", BUNDLED)
def test_each_software_epoch_names_its_unit_and_kind_as_st_writes_them(generated, model):
    out = generated(model)
    text = open(os.path.join(out, "network.c")).read()
    for epoch, mapping, kinds in epochs_of(os.path.join(out, "network_c_info.json")):
        start = text.find(f"static void LL_ATON_Start_EpochBlock_{epoch}(const void *epoch_block)")
        if mapping != "NODE_SW":
            continue
        body = text[start:text.index("\n}\n", start)].splitlines()
        (kind, node), = kinds
        assert [line.strip() for line in body[2:4]] == ["/* Unit= 27 [PROCESSOR 0] */",
                                                        f"/* kind={kind} node={node} */"]


ST_PARSE = """
import json, sys
from stm_ai_runner.neural_art.c_network_parser import CNpuNetworkDesc
desc = CNpuNetworkDesc(sys.argv[1])
print(json.dumps([[e.epoch_num, e.type.name, e.get_ops()] for e in desc._epochs]))
"""


@pytest.mark.skipif(not (REAL and os.path.isfile(ST_CLIENT)),
                    reason="no ST client in the test bed (set N6_REAL_STEDGEAI to a test bed folder)")
@pytest.mark.parametrize("model", BUNDLED)
def test_st_network_c_parser_finds_the_epochs_and_kinds_the_c_info_lists(generated, model, tmp_path):
    out = generated(model)
    proc = subprocess.run([ST_CLIENT, "-c", ST_PARSE, os.path.join(out, "network.c")], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = [[epoch, "SW" if mapping == "NODE_SW" else "BLOB",
                 [f"sw.{kind.lower()}" for kind, _ in kinds] if mapping == "NODE_SW" else ["hw.blob"]]
                for epoch, mapping, kinds in epochs_of(os.path.join(out, "network_c_info.json"))]
    assert found == expected
