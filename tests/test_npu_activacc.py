"""The activation unit's function evaluator (sim/npu/npu_model/activacc.py) in the NPU model: a
table written into the unit's ROM0/ROM1 as ll_aton.c writes one (offsets and fields from ATON.h,
as literal numbers), values through a chain STRENG0 → ACTIV0 → STRENG2, outputs worked out by
hand; the forms it does not model stop in one line. Opt-in judge: the one public image we know
of that programs this unit (its sigmoid table) against onnxruntime's int8 sigmoid."""
import os
import re
import struct

import numpy as np
import pytest

from npu_model import ecblob
from npu_model.npu import Npu, NpuStop

from test_npu_model import (ACTIV, CTRL, DSTACTIV, DSTSTRENG, EN, LINK_ACTIV, LINK_STRENG, STRENG, Ram, raw_engine,
                            route)

# ACTIV registers (ATON.h): ACTIVPARAM 0x08 (FUNC 19:16), FUNC 0x0C (OUTSHIFT 5:0, CSHIFT 11:6, BSHIFT
# 16:12, SIGNEDOP 20, BWIDTH 25:23), ROM0 entries from 0x400 (4 bytes apart), ROM1 rows from 0x800
# (A 15:0 and B 31:16, then C 15:0)
ACTIVPARAM, FUNC, ROM0, ROM1 = 0x08, 0x0C, 0x400, 0x800
TYPE_FUNCTION, FBYTES_1, NO_SHIFT, SAT, OBYTES_1 = 3 << 2, 1 << 6, 16 << 8, 1 << 21, 1 << 22
INPUTS = [-128, -1, 0, 1, 7, 22, 63, 64, 100, 127]


def activation_epoch(npu, ctrl, values):
    """ACTIV0 with a two-segment table: x < 0 → row 0, C = -100 (through the shift too); 0 <= x < 64 → row 1, A = 1
    (x*x); x >= 64 → row 2, B = -1 shifted left 1 (-2x); OUTSHIFT 2, no rounding, saturated to
    one byte. STRENG0 sends `values` (8-bit) from 0x3410_0000, STRENG2 writes at 0x3410_0100."""
    npu.epoch_label = lambda: "epoch 4"
    npu.write_memory(0x3410_0000, bytes(v & 0xFF for v in values))
    npu.write(ACTIV(0) + ACTIVPARAM, 8 << 16)                           # FUNC (normalisation) 8
    npu.write(ACTIV(0) + FUNC, 2 | 1 << 12 | 1 << 20 | 1 << 23)         # OUTSHIFT 2, BSHIFT 1, SIGNEDOP, BWIDTH 1
    for i, entry in enumerate((0x00, 1 << 6 | 1)):                      # ROM0: row 0 alone; 1 inner bit from row 1
        npu.write(ACTIV(0) + ROM0 + 4 * i, entry)
    for i, (ab, c) in enumerate(((0, -100 & 0xFFFF), (1, 0), (0xFFFF << 16, 0))):
        npu.write(ACTIV(0) + ROM1 + 8 * i, ab)
        npu.write(ACTIV(0) + ROM1 + 8 * i + 4, c)
    raw_engine(npu, 0, 0x3410_0000, len(values), write=False)
    raw_engine(npu, 2, 0x3410_0100, len(values), write=True)
    npu.write(DSTACTIV(0), route(LINK_STRENG(0)))
    npu.write(DSTSTRENG(2), route(LINK_ACTIV(0)))
    for unit in (STRENG(2), STRENG(0)):
        npu.write(unit + CTRL, npu.read(unit + CTRL) | EN)
    npu.write(ACTIV(0) + CTRL, ctrl)


def test_the_function_evaluator_picks_each_values_row_and_computes_its_polynomial():
    """-128, -1 → -100 >> 2 = -25; 0, 1, 7, 22, 63 → x*x >> 2 (0, 0, 12, 121, 992 saturated to
    127); 64, 100, 127 → -2x >> 2, rounded down (-32, -50, -64)."""
    ram = Ram()
    npu = ram.attach(Npu())
    activation_epoch(npu, EN | TYPE_FUNCTION | FBYTES_1 | NO_SHIFT | SAT | OBYTES_1, INPUTS)
    out = np.frombuffer(ram.read(0x3410_0100, len(INPUTS)), dtype=np.int8).tolist()
    assert out == [-25, -25, 0, 0, 12, 121, 127, -32, -50, -64]


@pytest.mark.parametrize("ctrl, what", [
    (EN | FBYTES_1 | NO_SHIFT | SAT | OBYTES_1, "CTRL.TYPE=RELU"),
    (EN | 2 << 2 | FBYTES_1 | NO_SHIFT | SAT | OBYTES_1, "CTRL.TYPE=TRELU"),
    (EN | TYPE_FUNCTION | FBYTES_1 | 17 << 8 | SAT | OBYTES_1, "an input shift or subtraction (CTRL.FSHIFT, FSUB)"),
    (EN | TYPE_FUNCTION | 2 << 6 | NO_SHIFT | SAT | OBYTES_1, "CTRL.FBYTES=2 with ACTIVPARAM.FUNC=8"),
])
def test_the_forms_it_does_not_model_stop_in_one_line_naming_the_field(ctrl, what):
    npu = Ram().attach(Npu())
    with pytest.raises(NpuStop) as e:
        activation_epoch(npu, ctrl, INPUTS)
    assert str(e.value) == f"epoch 4: ACTIV0: {what} is not modelled (NPU_MODEL=control runs on with its outputs zeroed)"


# -- opt-in judge -----------------------------------------------------------------------------
# Kavin-Re/Haptic-Sense on GitHub, commit d504597fd192f66878da7d8e9a889c64bf4f7353,
# firmware/Model/STM32N6570-DK/network_ecblobs.h: ST Edge AI's blob of a 17-32-16-1 MLP whose
# sigmoid runs in ACTIV0. Its source model (model/haptic_sense_hazard_v4.tflite) feeds the sigmoid
# an int8 logit of scale 0.1126 and zero point 33 (the project's own notes, four digits) and
# writes scale 1/256, zero point -128.
HAPTIC_BLOB = os.environ.get("N6_ACTIV_BLOB")
LOGIT_SCALE, LOGIT_ZERO, OUT_SCALE, OUT_ZERO = 0.1126, 33, 1 / 256, -128


def onnxruntime_sigmoid(tmp_path, q):
    """onnxruntime's int8 sigmoid of the int8 codes q: DequantizeLinear → Sigmoid →
    QuantizeLinear, fused into its QLinearSigmoid."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    scalar = lambda name, dtype, v: helper.make_tensor(name, dtype, [], [v])
    nodes = [helper.make_node("DequantizeLinear", ["q", "si", "zi"], ["x"]), helper.make_node("Sigmoid", ["x"], ["s"]),
             helper.make_node("QuantizeLinear", ["s", "so", "zo"], ["y"])]
    graph = helper.make_graph(nodes, "sigmoid", [helper.make_tensor_value_info("q", TensorProto.INT8, [len(q)])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [len(q)])],
                              [scalar("si", TensorProto.FLOAT, LOGIT_SCALE), scalar("zi", TensorProto.INT8, LOGIT_ZERO),
                               scalar("so", TensorProto.FLOAT, OUT_SCALE), scalar("zo", TensorProto.INT8, OUT_ZERO)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(tmp_path / "sigmoid.onnx"))
    sess = ort.InferenceSession(str(tmp_path / "sigmoid.onnx"), providers=["CPUExecutionProvider"])
    return sess.run(None, {"q": np.asarray(q, dtype=np.int8)})[0].astype(np.int64)


@pytest.mark.skipif(not HAPTIC_BLOB, reason="N6_ACTIV_BLOB names no network_ecblobs.h of Kavin-Re/Haptic-Sense")
def test_the_sigmoid_table_of_a_public_image_matches_onnxruntime_within_one_lsb(tmp_path):
    """The blob's register writes executed into the model, ACTIV0's table evaluated on every int8
    input through a chain as above: 254 of 256 outputs equal onnxruntime's, none off by more than
    1 LSB (activacc.py's table)."""
    with open(HAPTIC_BLOB) as f:
        words = [int(w, 16) for w in re.findall(r"0x([0-9a-fA-F]{16})UL", f.read())]
    commands = ecblob.decode(ecblob.blob_words(b"".join(struct.pack("<Q", w) for w in words)))
    ram = Ram()
    npu = ram.attach(Npu())
    writes = [((unit << 12) + 4 * register, value) for c in commands for unit, register, value in c.writes()]
    enable = next(k for k, (offset, value) in enumerate(writes) if offset == ACTIV(0) and isinstance(value, tuple))
    for offset, value in writes[:enable]:
        if ACTIV(0) <= offset < ACTIV(1):
            npu.write(offset, value)                    # ACTIV0's settings and tables, up to its enabling
    q = np.arange(-128, 128)
    ram.write(0x3410_0000, q.astype(np.int8).tobytes())
    raw_engine(npu, 0, 0x3410_0000, 256, write=False)
    raw_engine(npu, 2, 0x3410_0100, 256, write=True)
    npu.write(DSTACTIV(0), route(LINK_STRENG(0)))
    npu.write(DSTSTRENG(2), route(LINK_ACTIV(0)))
    for unit in (STRENG(2), STRENG(0), ACTIV(0)):
        npu.write(unit + CTRL, npu.read(unit + CTRL) | EN)
    ours = np.frombuffer(ram.read(0x3410_0100, 256), dtype=np.int8).astype(np.int64)
    error = np.abs(ours - onnxruntime_sigmoid(tmp_path, q))
    print(f"ACTIV0 sigmoid against onnxruntime: {int((error == 0).sum())}/256 exact, max {int(error.max())} LSB")
    assert int((error == 0).sum()) == 254 and error.max() == 1
