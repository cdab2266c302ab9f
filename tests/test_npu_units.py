"""The NPU's compute units on small synthetic frames, judged by independent computations:
onnxruntime's ConvInteger (zero point, padding, strides) for the convolution unit's sums, exact
decimal arithmetic for the output stage's rounding, and byte layouts written out by
hand for the kernel stream."""
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal

import numpy as np
import pytest

from npu_model.convacc import ConvConfig, convolve, kernel_frames, pack_kernel_frames
from npu_model.fixedpoint import NotModelled, output_stage

RNG = np.random.default_rng(31)


def conv_registers(kw=3, kh=3, nr=4, depth=3, width=7, height=6, stride=(1, 1), pads=(0, 0, 0, 0), zframe=(0, 0, 0, 0),
                   fsub=0, outshift=0, round_=1, ornd=1, obytes=2, sat=1, raw=0, nosum=1, kfilt=(1, 0, 0), deep=0):
    """A CONVACC's registers by ATON.h field, the way LL_Convacc_Init sets them (ll_aton.c's facts:
    FFORMAT.WIDTH and ZFRAME's sides scaled by the depth, FSUB 24-bit)."""
    top, bottom, left, right = pads
    return {"CTRL": {"EN": 1, "NOSUM": nosum, "NO1SUM": 1, "SIMD": 1, "DEEPMODE": deep},
            "KFORMAT": {"WIDTH": kw, "HEIGHT": kh, "BTCDEPTH": depth, "NR": nr},
            "SAMPLE": {"TPAD": top, "BPAD": bottom, "LPAD": left, "RPAD": right, "HSTRD": stride[0], "VSTRD": stride[1]},
            "ZFRAME": {"TOP": zframe[0], "BOTTOM": zframe[1], "LEFT": zframe[2] * depth, "RIGHT": zframe[3] * depth},
            "DFORMAT": {"OUTSHIFT": outshift, "ROUND": round_, "ORNDMODE": ornd, "SAT": sat, "RAW": raw,
                        "OBYTES": obytes, "FBYTES": 1},
            "FFORMAT": {"WIDTH": width * depth, "HEIGHT": height},
            "KFILT": {"TOT": kfilt[0], "FIRST": kfilt[1], "LAST": kfilt[2]}, "FSUB": {"FSUB": fsub & 0xFFFFFF}}


def ort_conv_integer(x, w, zero_point, pads, strides):
    """onnxruntime's ConvInteger: x uint8 [H, W, C], w int8 [O, KH, KW, C] → int32 [OH, OW, O]."""
    import onnx
    import onnxruntime
    from onnx import TensorProto, helper
    top, bottom, left, right = pads
    node = helper.make_node("ConvInteger", ["x", "w", "xz"], ["y"], pads=[top, left, bottom, right],
                            strides=[strides[1], strides[0]])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, None),
                                            helper.make_tensor_value_info("w", TensorProto.INT8, None),
                                            helper.make_tensor_value_info("xz", TensorProto.UINT8, None)],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    y = session.run(None, {"x": x.transpose(2, 0, 1)[None], "w": w.transpose(0, 3, 1, 2),
                           "xz": np.array(zero_point, dtype=np.uint8)})[0]
    return y[0].transpose(1, 2, 0).astype(np.int64)


# -- kernel stream ---------------------------------------------------------------------------------
def test_a_normal_kernel_stream_gives_the_unit_its_kfilt_items_in_row_column_depth_order():
    """Two 1x2 kernels of depth 2 per frame for this unit, items 2..3 of 4 (KFILT): bytes by hand."""
    cfg = ConvConfig.from_registers(conv_registers(kw=2, kh=1, nr=2, depth=2, kfilt=(4, 2, 3)))
    frame = bytes(range(16))                       # 4 items of 1x2x2: item i is bytes 4i..4i+3
    got = kernel_frames(frame + bytes(range(100, 116)), cfg, frames=2)
    assert got.shape == (2, 2, 1, 2, 2)
    assert got[0, 0].ravel().tolist() == [8, 9, 10, 11]          # item 2: (col 0: d0 d1), (col 1: d0 d1)
    assert got[0, 1, 0, 1].tolist() == [14, 15]                 # item 3, column 1
    assert got[1, 0, 0, 0].tolist() == [108, 109]


def test_a_deep_mode_block_interleaves_groups_of_8_kernels_depth_major_padded_to_24_bits():
    """9 kernels of depth 2: kernels 0..7 at depth 0, then at depth 1, then kernel 8 at depths 0, 1;
    18 bytes are whole 24-bit words; a second unit's block (KFILT 9..17) follows."""
    cfg = ConvConfig.from_registers(conv_registers(kw=1, kh=1, nr=9, depth=2, deep=1, kfilt=(18, 9, 17)))
    k = np.arange(18 * 2).reshape(1, 18, 1, 1, 2)           # kernel i, depth d = 2i + d
    stream = pack_kernel_frames(k, cfg)
    assert len(stream) == 36
    assert list(stream[:18]) == [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 16, 17]
    assert kernel_frames(stream, cfg, 1)[0, :, 0, 0, :].tolist() == k[0, 9:, 0, 0, :].tolist()


def test_a_deep_block_pads_to_whole_24_bit_words():
    cfg = ConvConfig.from_registers(conv_registers(kw=1, kh=1, nr=1, depth=4, deep=1))
    stream = pack_kernel_frames(np.array([1, 2, 3, 4]).reshape(1, 1, 1, 1, 4), cfg)
    assert stream == bytes([1, 2, 3, 4, 0, 0])
    assert cfg.frame_bytes == 6


# -- convolution -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kw,kh,stride,pads,zframe", [(3, 3, (1, 1), (1, 1, 1, 1), (0, 0, 0, 0)),
                                                     (3, 3, (2, 2), (0, 1, 0, 1), (0, 0, 0, 0)),
                                                     (1, 1, (1, 1), (0, 0, 0, 0), (0, 0, 0, 0)),
                                                     (5, 3, (2, 1), (2, 1, 2, 2), (1, 0, 1, 1))])
def test_the_sums_equal_onnxruntime_conv_integer_with_fsub_as_zero_point(kw, kh, stride, pads, zframe):
    depth, nr, width, height, zero = 3, 4, 9, 8, 37
    regs = conv_registers(kw=kw, kh=kh, nr=nr, depth=depth, width=width, height=height, stride=stride, pads=pads,
                          zframe=zframe, fsub=zero, raw=1, obytes=3)
    cfg = ConvConfig.from_registers(regs)
    x = RNG.integers(0, 256, (height, width, depth), dtype=np.uint8)
    w = RNG.integers(-128, 128, (nr, kh, kw, depth), dtype=np.int8)
    total = tuple(p + z for p, z in zip(pads, zframe))
    want = ort_conv_integer(x, w, zero, total, stride)
    got = convolve(x, w, cfg)
    assert got.shape == want.shape == cfg.output_shape
    assert np.array_equal(got, want)


def test_a_negative_fsub_is_read_as_24_bit_signed():
    cfg = ConvConfig.from_registers(conv_registers(kw=1, kh=1, nr=1, depth=1, width=2, height=1, fsub=-1, raw=1,
                                                   obytes=3))
    assert convolve(np.array([[[5], [-3]]]), np.array([[[[2]]]]), cfg).ravel().tolist() == [12, -4]


def test_a_chained_unit_adds_the_partial_sums_then_shifts_rounds_and_saturates():
    regs = conv_registers(kw=1, kh=1, nr=2, depth=2, width=3, height=1, outshift=4, nosum=0, obytes=1)
    cfg = ConvConfig.from_registers(regs)
    x = np.array([[[10, 20], [30, -40], [100, 100]]])
    w = np.array([[[[3, 1]]], [[[-2, 5]]]])
    partial = np.array([[[8, -8], [0, 0], [1000, -1000]]])
    sums = np.einsum("hwc,kc->hwk", x, w[:, 0, 0, :]) + partial
    got = convolve(x, w, cfg, partial=partial)
    assert got.tolist()[0] == [[max(-128, min(127, _half_away(int(v), 4))) for v in px] for px in sums[0]]
    with pytest.raises(ValueError, match="port 2"):
        convolve(x, w, cfg)


def _half_away(value, shift):
    """value / 2**shift rounded half away from zero, in exact decimal arithmetic."""
    q = Decimal(value) / Decimal(2 ** shift)
    return int(q.quantize(Decimal(1), rounding=ROUND_HALF_UP))


# -- output stage ----------------------------------------------------------------------------------
def test_the_output_stage_rounds_half_away_from_zero_truncates_without_round_and_wraps_without_sat():
    values = np.array([-48, -40, -24, -8, -1, 0, 7, 8, 24, 40, 300 * 16, -300 * 16])
    assert output_stage(values, 4, "half_away", False, 1, True).tolist() == \
        [max(-128, min(127, _half_away(int(v), 4))) for v in values]
    floor = [int((Decimal(int(v)) / 16).quantize(Decimal(1), rounding=ROUND_FLOOR)) for v in values]
    assert output_stage(values, 4, "floor", False, 2, True).tolist() == floor
    assert output_stage(np.array([200, -200]), 0, "floor", False, 1, False).tolist() == [-56, 56]
    assert output_stage(np.array([-5, 5]), 0, "floor", True, 1, True).tolist() == [0, 5]


def test_an_unmodelled_setting_stops_naming_the_unit_and_field():
    regs = conv_registers()
    regs["FHCROP"] = {"LEFT": 3, "RIGHT": 20}
    cfg = ConvConfig.from_registers(regs, "CONVACC2")
    with pytest.raises(NotModelled, match=r"^CONVACC2: a crop inside the frame \(FHCROP/FVCROP\) is not modelled"):
        convolve(np.zeros((6, 7, 3)), np.zeros((4, 3, 3, 3)), cfg)
    with pytest.raises(NotModelled, match=r"^CONVACC1: DFORMAT.ORNDMODE bit 0 = 0 with ROUND=1 is not modelled"):
        ConvConfig.from_registers(conv_registers(ornd=0), "CONVACC1")
