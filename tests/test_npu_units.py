"""The NPU's compute units on small synthetic frames, judged by independent computations:
onnxruntime's ConvInteger (zero point, padding, strides) for the convolution unit's sums, exact
decimal arithmetic for the output stage's rounding, and byte layouts written out by
hand for the kernel stream, ll_aton.c's register settings of each broadcast for the arithmetic
unit's coefficient addressing."""
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Decimal

import numpy as np
import pytest

from npu_model.arithacc import ArithConfig, addresses, compute
from npu_model.convacc import ConvConfig, convolve, kernel_frames, pack_kernel_frames
from npu_model.fixedpoint import NotModelled, output_stage
from npu_model.program import Route

RNG = np.random.default_rng(31)


def conv_registers(kw=3, kh=3, nr=4, depth=3, width=7, height=6, stride=(1, 1), pads=(0, 0, 0, 0), zframe=(0, 0, 0, 0),
                   fsub=0, outshift=0, round_=1, ornd=1, obytes=2, sat=1, raw=0, nosum=1, kfilt=(1, 0, 0), deep=0,
                   funsigned=1, inshift=0):
    """A CONVACC's registers by ATON.h field, the way LL_Convacc_Init sets them (ll_aton.c's facts:
    FFORMAT.WIDTH and ZFRAME's sides scaled by the depth, FSUB 24-bit)."""
    top, bottom, left, right = pads
    return {"CTRL": {"EN": 1, "NOSUM": nosum, "NO1SUM": 1, "SIMD": 1, "DEEPMODE": deep, "FUNSIGNED": funsigned},
            "KFORMAT": {"WIDTH": kw, "HEIGHT": kh, "BTCDEPTH": depth, "NR": nr},
            "SAMPLE": {"TPAD": top, "BPAD": bottom, "LPAD": left, "RPAD": right,
                       "HSTRD": stride[0], "VSTRD": stride[1]},
            "ZFRAME": {"TOP": zframe[0], "BOTTOM": zframe[1], "LEFT": zframe[2] * depth, "RIGHT": zframe[3] * depth},
            "DFORMAT": {"OUTSHIFT": outshift, "INSHIFT": inshift, "ROUND": round_, "ORNDMODE": ornd,
                        "SAT": sat, "RAW": raw,
                        "OBYTES": obytes, "FBYTES": 1},
            "FFORMAT": {"WIDTH": width * depth, "HEIGHT": height},
            "KFILT": {"TOT": kfilt[0], "FIRST": kfilt[1], "LAST": kfilt[2]}, "FSUB": {"FSUB": fsub & 0xFFFFFF}}


def ort_conv_integer(x, w, zero_point, pads, strides):
    """onnxruntime's ConvInteger: x uint8 [H, W, C], w int8 [O, KH, KW, C] → int32 [OH, OW, O]."""
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


def test_a_cropped_frame_is_framed_and_padded_before_the_kernels_slide():
    """ST's 5x5 kernel split by rows (blazeface epoch 4): rows 3..4 of the kernel on the frame
    cropped from row 2 (FVCROP), a zero-frame row and a padding row below: onnxruntime's
    ConvInteger on the cropped rows padded by 2 below."""
    depth, nr, width, height, zero = 3, 4, 9, 8, 37
    regs = conv_registers(kw=5, kh=2, nr=nr, depth=depth, width=width, height=height, stride=(2, 2),
                          pads=(0, 1, 1, 2), zframe=(0, 1, 0, 0), fsub=zero, raw=1, obytes=3)
    regs.update(FVCROP={"TOP": 2, "BOTTOM": height - 1}, FHCROP={"LEFT": depth, "RIGHT": width * depth - 1})
    cfg = ConvConfig.from_registers(regs)
    x = RNG.integers(0, 256, (height, width, depth), dtype=np.uint8)
    w = RNG.integers(-128, 128, (nr, 2, 5, depth), dtype=np.int8)
    want = ort_conv_integer(np.ascontiguousarray(x[2:, 1:]), w, zero, (0, 2, 1, 2), (2, 2))
    assert np.array_equal(convolve(x, w, cfg), want) and want.shape == cfg.output_shape


def test_the_zero_frame_holds_zfbias_and_the_unit_padding_zeros():
    """blazeface's channel padding: a 1x1 unit kernel copies the frame, the zero frame's rows
    come out as ZFBIAS (16-bit signed: 0xFF80 is -128); the unit's own padding stays 0."""
    regs = conv_registers(kw=1, kh=1, nr=1, depth=1, width=3, height=2, pads=(0, 0, 0, 1), zframe=(0, 2, 0, 0),
                          raw=1, obytes=1, funsigned=0)
    regs["ZFBIAS"] = {"ZFBIAS": 0xFF80}
    x = np.array([[5, -7, 9], [1, 2, -3]]).reshape(2, 3, 1)
    got = convolve(x, np.ones((1, 1, 1, 1)), ConvConfig.from_registers(regs))
    assert got[..., 0].tolist() == [[5, -7, 9, 0], [1, 2, -3, 0], [-128] * 3 + [0], [-128] * 3 + [0]]


def test_a_unit_summing_over_frames_feeds_back_its_output_scaled_by_inshift_and_emits_every_last_frame():
    """nucleo_mnv1's fully connected layer: a 4-deep vector in two passes of 2 (AFILT 2, 1..1),
    the first pass's output (OUTSHIFT 3, rounded) fed back through INSHIFT 3: exact decimals."""
    from npu_model.chain import run, wire
    regs = conv_registers(kw=1, kh=1, nr=1, depth=2, width=1, height=1, outshift=3, inshift=3, nosum=0, obytes=2)
    regs["CTRL"].update(AFILTMODE=3, GEN1SUM=1)
    regs["AFILT"] = {"TOT": 2, "FIRST": 1, "LAST": 1}
    cfg = ConvConfig.from_registers(regs, "CONVACC3")
    x = RNG.integers(0, 256, (3, 4))                                  # three outputs' worth of one vector
    w = RNG.integers(-128, 128, (3, 4))
    frames = [x[o, h * 2:h * 2 + 2] for o in range(3) for h in range(2)]
    kernels = np.stack([w[o, h * 2:h * 2 + 2] for o in range(3) for h in range(2)]).reshape(6, 1, 1, 1, 2)
    units = wire({"STRENG0": None, "STRENG1": None, "STRENG2": None, "CONVACC3": cfg},
                 [Route("CONVACC3", 0, 0, "STRENG0"), Route("CONVACC3", 1, 0, "STRENG1"),
                  Route("CONVACC3", 2, 0, "CONVACC3"),
                  Route("STRENG2", 0, 1, "CONVACC3", (1, 1))])             # ST's form: every second frame, context 1
    streams = {"STRENG0": frames, "STRENG1": [np.frombuffer(pack_kernel_frames(kernels, cfg), np.uint8)]}
    written = {}
    run(units, streams.__getitem__, written.__setitem__)
    want = []
    for o in range(3):
        first = _half_even(int(x[o, :2] @ w[o, :2]), 3)
        want.append(_half_even((first << 3) + int(x[o, 2:] @ w[o, 2:]), 3))
    assert [int(f[0]) for f in written["STRENG2"]] == want


def test_a_negative_fsub_is_read_as_24_bit_signed():
    cfg = ConvConfig.from_registers(conv_registers(kw=1, kh=1, nr=1, depth=1, width=2, height=1, fsub=-1, raw=1,
                                                   obytes=3, funsigned=0))
    assert convolve(np.array([[[5], [-3]]]), np.array([[[[2]]]]), cfg).ravel().tolist() == [12, -4]


def test_a_chained_unit_adds_the_partial_sums_then_shifts_rounds_and_saturates():
    regs = conv_registers(kw=1, kh=1, nr=2, depth=2, width=3, height=1, outshift=4, nosum=0, obytes=1, funsigned=0)
    cfg = ConvConfig.from_registers(regs)
    x = np.array([[[10, 20], [30, -40], [100, 100]]])
    w = np.array([[[[3, 1]]], [[[-2, 5]]]])
    partial = np.array([[[8, -8], [0, 0], [1000, -1000]]])
    sums = np.einsum("hwc,kc->hwk", x, w[:, 0, 0, :]) + partial
    got = convolve(x, w, cfg, partial=partial)
    assert got.tolist()[0] == [[max(-128, min(127, _half_even(int(v), 4))) for v in px] for px in sums[0]]
    with pytest.raises(NotModelled, match="port 2"):
        convolve(x, w, cfg)


def _half_even(value, shift):
    """value / 2**shift rounded half to even, in exact decimal arithmetic."""
    q = Decimal(value) / Decimal(2 ** shift)
    return int(q.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


# -- output stage ----------------------------------------------------------------------------------
def test_the_output_stage_rounds_half_to_even_truncates_without_round_and_wraps_without_sat():
    values = np.array([-48, -40, -24, -8, -1, 0, 7, 8, 24, 40, 300 * 16, -300 * 16])
    assert output_stage(values, 4, "half_even", False, 1, True).tolist() == \
        [max(-128, min(127, _half_even(int(v), 4))) for v in values]
    floor = [int((Decimal(int(v)) / 16).quantize(Decimal(1), rounding=ROUND_FLOOR)) for v in values]
    assert output_stage(values, 4, "floor", False, 2, True).tolist() == floor
    assert output_stage(np.array([200, -200]), 0, "floor", False, 1, False).tolist() == [-56, 56]
    assert output_stage(np.array([-5, 5]), 0, "floor", True, 1, True).tolist() == [0, 5]


def test_features_are_read_unsigned_or_signed_as_funsigned_says_whatever_the_sender_wrapped_them_to():
    """An arithmetic unit upstream sends u8 200 as the byte -56: FUNSIGNED=1 reads 200, 0 reads -56."""
    for funsigned, want in ((1, 200 * 3), (0, -56 * 3)):
        cfg = ConvConfig.from_registers(conv_registers(kw=1, kh=1, nr=1, depth=1, width=1, height=1, raw=1, obytes=3,
                                                       funsigned=funsigned))
        assert convolve(np.array([-56]), np.array([[[[3]]]]), cfg).ravel().tolist() == [want]


def test_an_unmodelled_setting_stops_naming_the_unit_and_field():
    regs = conv_registers()
    regs["FHCROP"] = {"LEFT": 1, "RIGHT": 20}
    cfg = ConvConfig.from_registers(regs, "CONVACC2")
    with pytest.raises(NotModelled, match=r"^CONVACC2: FHCROP inside a pixel is not modelled"):
        convolve(np.zeros((6, 7, 3)), np.zeros((4, 3, 3, 3)), cfg)
    with pytest.raises(NotModelled, match=r"^CONVACC1: DFORMAT.ORNDMODE bit 0 = 0 with ROUND=1 is not modelled"):
        ConvConfig.from_registers(conv_registers(ornd=0), "CONVACC1")


# -- arithmetic unit -------------------------------------------------------------------------------
def arith_registers(bcast="chan", width=3, height=2, depth=4, channels=8, a=1, b=0, c=0, vectors="", combinebc=0,
                    dual=0, shifts=(0, 0, 0), res=0, round_=1, ornd=1, obytes=1, sat=1, inbytes=(3, 3)):
    """An ARITH's registers by ATON.h field as LL_Arithacc_Init sets them for a broadcast
    (ll_aton.c's facts: counters, offsets, the input shifters at a plain pass)."""
    m9 = lambda v: v & 0x1FF
    regs = {"CTRL": {"EN": 1, "ROUND": round_, "SAT": sat, "ORNDMODE": ornd, "OBYTES": obytes, "OP": 0,
                     "DUALIN": dual, "COMBINEBC": combinebc, "COEFFA": int("a" in vectors),
                     "COEFFB": int("b" in vectors), "COEFFC": int("c" in vectors), "CNT1": 0, "CNT2": 0, "CNT3": 0},
            "SHIFT": {"AX": shifts[0], "BY": shifts[1], "C": shifts[2], "RES": res},
            "COEFFAC": {"A": a & 0xFFFF, "C": c & 0xFFFF}, "COEFFB": {"B": b & 0xFFFF},
            "INSHIFTER": {"FBYTESX": inbytes[0], "FSHIFTX": 16, "FBYTESY": inbytes[1], "FSHIFTY": 16}}
    if bcast == "chan":
        regs["CTRL"].update(CNT1=1, CNT2=1, CNT3=1)
        regs.update({"INCCNT": {"INCVAL": 0}, "RSTCNT1": {"RSTCNT": depth - 1},
                     "RSTCNT2": {"RSTCNT": width * height * depth - 1},
                     "RSTCNT3": {"RSTCNT": width * height * channels - 1}, "INCOFFSET": {"VAL": 1},
                     "ADDROFFSET": {"OFFSET1": m9(-(depth - 1)), "OFFSET2": 1, "OFFSET3": m9(-(channels - 1))}})
    elif bcast == "height":
        regs["CTRL"].update(CNT1=1)
        regs.update({"INCCNT": {"INCVAL": width * depth - 1}, "RSTCNT1": {"RSTCNT": width * height * depth - 1},
                     "INCOFFSET": {"VAL": 1}, "ADDROFFSET": {"OFFSET1": m9(-(height - 1))}})
    return regs


def memory(a=(), b=(), c=()):
    n = max(len(a), len(b), len(c))
    get = lambda v, i: v[i] if i < len(v) else 0
    return [((get(a, i) & 0xFFFF) | (get(b, i) & 0xFFFF) << 16, get(c, i) & 0xFFFF) for i in range(n)]


def test_channel_broadcast_addresses_each_element_by_its_channel_across_frames():
    """Frames of 4 channels (HWC within a frame) of an 8-channel tensor, twice over: the entry of
    an element is its channel, frame * 4 + channel in frame, written out with numpy indexing."""
    width, height, depth, channels = 3, 2, 4, 8
    cfg = ArithConfig.from_registers(arith_registers(width=width, height=height, depth=depth, channels=channels,
                                                     vectors="a"), memory(a=range(8)))
    n = width * height * channels
    frame, within = np.divmod(np.arange(2 * n) % n, width * height * depth)
    assert addresses(cfg, 2 * n).tolist() == (frame * depth + within % depth).tolist()


def test_height_broadcast_addresses_each_element_by_its_row():
    width, height, depth = 3, 4, 2
    cfg = ArithConfig.from_registers(arith_registers("height", width=width, height=height, depth=depth, vectors="a"),
                                     memory(a=range(4)))
    rows = np.arange(width * height * depth) // (width * depth)
    assert addresses(cfg, 2 * rows.size).tolist() == rows.tolist() * 2


def test_the_requantisation_chain_of_st_is_a_per_channel_affine_with_a_32_bit_bias():
    """x * A[ch], then (21760 * that + bias[ch]) >> 20 with the bias a 32-bit B:C constant, then
    + 128 as a scalar B:C: each against exact decimal arithmetic on Python integers."""
    channels = 4
    regs = dict(width=5, height=1, depth=channels, channels=channels)
    scale = [1580, -2646, 283, 19120]
    bias = [-72069512, 11419623, 137467469, 0]
    x = RNG.integers(-20000, 20000, 5 * channels)
    mul = ArithConfig.from_registers(arith_registers(vectors="a", res=10, obytes=2, **regs), memory(a=scale))
    add = ArithConfig.from_registers(arith_registers(vectors="bc", a=21760, combinebc=1, res=20, **regs),
                                     memory(b=[v >> 16 for v in bias], c=[v & 0xFFFF for v in bias]))
    offset = ArithConfig.from_registers(arith_registers("scalar", a=16384, b=32, combinebc=1, res=14, round_=0,
                                                        sat=0, **regs))
    y1, y2, y3 = compute(x, mul), None, None
    want1 = [max(-32768, min(32767, _half_even(int(v) * scale[i % channels], 10))) for i, v in enumerate(x)]
    assert y1.tolist() == want1
    y2 = compute(y1, add)
    want2 = [max(-128, min(127, _half_even(21760 * v + bias[i % channels], 20))) for i, v in enumerate(want1)]
    assert y2.tolist() == want2
    y3 = compute(y2, offset)
    assert y3.tolist() == [(v + 128 + 128) % 256 - 128 for v in want2]     # wraps into the byte: u8 = s8 + 128


def test_a_dual_input_add_divides_x_and_y_by_their_shifts_scales_c_up_and_rounds_once():
    """(3x/4 - 5y/2 + 7*16) / 8, rounded half to even, in exact decimal arithmetic."""
    regs = arith_registers("scalar", a=3, b=-5, c=7, dual=1, shifts=(2, 1, 4), res=3, obytes=2)
    cfg = ArithConfig.from_registers(regs)
    x, y = RNG.integers(-128, 128, 50), RNG.integers(-128, 128, 50)
    exact = [Decimal(3 * int(p)) / 4 + Decimal(-5 * int(q)) / 2 + 7 * 16 for p, q in zip(x, y)]
    assert compute(x, cfg, y).tolist() == [int((v / 8).quantize(Decimal(1), rounding=ROUND_HALF_EVEN)) for v in exact]
    with pytest.raises(NotModelled, match="port 1"):
        compute(x, cfg)


def test_an_unmodelled_arithmetic_operation_stops_naming_it():
    regs = arith_registers("scalar")
    regs["CTRL"]["OP"] = 0x7
    with pytest.raises(NotModelled, match=r"^ARITH3: CTRL.OP=0x7 is not modelled"):
        compute([1, 2], ArithConfig.from_registers(regs, name="ARITH3"))


# -- chain wiring ----------------------------------------------------------------------------------
def test_a_chain_runs_two_accumulating_convolutions_and_a_dual_input_add_as_the_switch_routes_them():
    """STRENG0 (features) → CONVACC0 → CONVACC1 (accumulates, its own depth slice on STRENG1) →
    ARITH0 (+ STRENG3 on port 1) → STRENG4, kernels on STRENG2: two frames, against the sums of
    ConvInteger over the whole depth and the add written out by hand."""
    from npu_model.chain import run, wire
    depth, nr, width, height = 2, 3, 4, 3
    x = RNG.integers(0, 256, (height, width, 2 * depth), dtype=np.uint8)
    w = RNG.integers(-128, 128, (2 * nr, 1, 1, 2 * depth), dtype=np.int8)        # 2 frames of NR kernels
    y = RNG.integers(-100, 100, 2 * height * width * nr)
    first = ConvConfig.from_registers(conv_registers(kw=1, kh=1, nr=nr, depth=depth, width=width, height=height,
                                                     raw=1, obytes=3, kfilt=(2 * nr, 0, nr - 1)), "CONVACC0")
    second = ConvConfig.from_registers(conv_registers(kw=1, kh=1, nr=nr, depth=depth, width=width, height=height,
                                                      raw=1, obytes=3, nosum=0, kfilt=(2 * nr, nr, 2 * nr - 1)),
                                       "CONVACC1")
    add = ArithConfig.from_registers(arith_registers("scalar", a=1, b=1, dual=1, obytes=3, sat=0), name="ARITH0")
    items = np.stack([np.concatenate([w[f * nr:(f + 1) * nr, :, :, :depth], w[f * nr:(f + 1) * nr, :, :, depth:]])
                      for f in range(2)])                                     # per frame: slice 0 items, slice 1
    streams = {"STRENG0": [x[:, :, :depth].ravel()] * 2, "STRENG1": [x[:, :, depth:].ravel()] * 2,
               "STRENG2": [np.frombuffer(pack_kernel_frames(items, first), np.uint8)], "STRENG3": np.split(y, 2)}
    units = wire({"STRENG0": None, "STRENG1": None, "STRENG2": None, "STRENG3": None, "STRENG4": None,
                  "CONVACC0": first, "CONVACC1": second, "ARITH0": add},
                 [Route("CONVACC0", 0, 0, "STRENG0"), Route("CONVACC0", 1, 0, "STRENG2"),
                  Route("CONVACC1", 0, 0, "STRENG1"), Route("CONVACC1", 1, 0, "STRENG2"),
                  Route("CONVACC1", 2, 0, "CONVACC0"), Route("ARITH0", 0, 0, "CONVACC1"),
                  Route("ARITH0", 1, 0, "STRENG3"), Route("STRENG4", 0, 0, "ARITH0")])
    written = {}
    run(units, streams.__getitem__, written.__setitem__)
    sums = [ort_conv_integer(x, w[f * nr:(f + 1) * nr], 0, (0, 0, 0, 0), (1, 1)).ravel() for f in range(2)]
    assert [f.tolist() for f in written["STRENG4"]] == [(s + t).tolist() for s, t in zip(sums, np.split(y, 2))]


def test_a_unit_fed_from_outside_the_chain_stops_naming_the_source():
    from npu_model.chain import run, wire
    units = wire({"STRENG1": None, "ARITH0": ArithConfig.from_registers(arith_registers("scalar"), name="ARITH0")},
                 [Route("ARITH0", 0, 0, "RECBUF"), Route("STRENG1", 0, 0, "ARITH0")])
    with pytest.raises(NotModelled, match=r"^RECBUF feeds the chain's units but is not one of them"):
        run(units, lambda name: [], lambda name, frames: None)


def test_a_port_fed_by_two_sources_in_the_two_contexts_stops_naming_it():
    from npu_model.chain import wire
    with pytest.raises(NotModelled, match=r"^ARITH0 port 0: fed by STRENG1 and STRENG2 in the switch's two contexts"):
        wire({"ARITH0": None}, [Route("ARITH0", 0, 0, "STRENG1"), Route("ARITH0", 0, 1, "STRENG2")])


@pytest.mark.parametrize("contexts,switch,frames", [((0,), (0, 0), [0, 1, 2, 3, 4, 5, 6]),
                                                    ((0,), (3, 255), [0, 1, 2]),
                                                    ((1,), (1, 1), [1, 3, 5]),
                                                    ((0, 1), (2, 1), [0, 1, 2, 3, 4, 5, 6]),
                                                    ((0,), (2, 1), [0, 1, 3, 4, 6])])
def test_a_port_receives_the_frames_of_the_contexts_it_is_enabled_in(contexts, switch, frames):
    """FNR0 frames in context 0, FNR1 in context 1, in turn (FNR0 = 0: context 0 throughout): the
    forms of the references (context 0 alone; FNR0 3 with context 1 off, blazeface; context 1
    alone with FNR 1 and 1, nucleo_mnv1's fully connected layer) and two more."""
    from npu_model.chain import run, wire
    units = wire({"STRENG0": None, "STRENG1": None}, [Route("STRENG1", 0, c, "STRENG0", switch) for c in contexts])
    written = {}
    run(units, lambda name: [np.array([k]) for k in range(7)], written.__setitem__)
    assert [int(f[0]) for f in written["STRENG1"]] == frames


# -- pooling unit ----------------------------------------------------------------------------------
def pool_registers(kind, width=6, height=5, b=3, win=(2, 2), stride=(2, 2), pads=(0, 0, 0, 0), out=(3, 3),
                   mulval=0, outshift=0, obytes=1):
    """A POOL's registers by ATON.h field as LL_Poolacc_Init sets them (FEATX scaled by BSIZE,
    FSHIFT a plain pass: shift 0 + 16)."""
    top, bottom, left, right = pads
    return {"CTRL": {"EN": 1, "TYPE": kind, "ROUND": 1, "SAT": 1, "OUTSHIFT": outshift, "FSHIFT": 16, "CROPEN": 1},
            "PDIMS": {"WINX": win[1], "WINY": win[0], "STRDX": stride[1], "STRDY": stride[0], "TPAD": top,
                      "BPAD": bottom, "LPAD": left, "RPAD": right, "BSIZE": b},
            "FDIMS": {"FEATX": width * b, "FEATY": height}, "OUTDIMS": {"FEATX": out[1], "FEATY": out[0]},
            "MULVAL": {"MULVAL": mulval}, "XCROP": {"LCROP": 0, "RCROP": width * b - 1},
            "YCROP": {"TCROP": 0, "BCROP": height - 1}, "RNDCTRL": {"ORNDMODE": 1, "OBYTES": obytes}}


@pytest.mark.parametrize("kind", ["max", "min"])
def test_window_pooling_equals_numpy_sliding_windows_with_padding_left_out(kind):
    from npu_model.poolacc import MAX, MIN, PoolConfig, pool
    x = RNG.integers(-128, 128, (5, 6, 3))
    cfg = PoolConfig.from_registers(pool_registers(MAX if kind == "max" else MIN, pads=(0, 1, 0, 0)))
    padded = np.concatenate([x, x[-1:]])                      # a repeated row: the same max/min as leaving it out
    windows = np.lib.stride_tricks.sliding_window_view(padded, (2, 2), axis=(0, 1))[::2, ::2]
    want = (windows.max(axis=(-2, -1)) if kind == "max" else windows.min(axis=(-2, -1)))
    assert pool(x, cfg).tolist() == want.ravel().tolist()


def test_global_average_is_the_sum_times_mulval_shifted_with_rounding():
    """nucleo_mnv1's global average: 7x7, MULVAL 21400, OUTSHIFT 12, 16-bit out (8 fraction bits)."""
    from npu_model.poolacc import GAVG, PoolConfig, pool
    x = RNG.integers(0, 256, (7, 7, 8))
    cfg = PoolConfig.from_registers(pool_registers(GAVG, width=7, height=7, b=8, win=(0, 0), stride=(1, 1),
                                                   mulval=21400, outshift=12, obytes=2))
    want = [max(-32768, min(32767, _half_even(int(s) * 21400, 12))) for s in x.sum(axis=(0, 1))]
    assert pool(x, cfg).tolist() == want


def test_deep_mode_8_bit_features_come_in_whole_24_bit_items_per_pixel_the_spare_dropped():
    """Depth 4 in DEEPMODE with FBYTES=1: 6 values a pixel (two 24-bit items), values 5 and 6 are
    not features (nucleo_mnv1 epoch 29: depth 128 read as 43 items a pixel)."""
    regs = conv_registers(kw=1, kh=1, nr=2, depth=4, width=3, height=2, raw=1, obytes=3, deep=1)
    cfg = ConvConfig.from_registers(regs)
    x = RNG.integers(0, 256, (2, 3, 4), dtype=np.uint8)
    w = RNG.integers(-128, 128, (2, 1, 1, 4), dtype=np.int8)
    items = np.concatenate([x, RNG.integers(0, 256, (2, 3, 2))], axis=-1)     # spare values: noise
    assert cfg.pixel_items == 6
    assert np.array_equal(convolve(items, w, cfg), ort_conv_integer(x, w, 0, (0, 0, 0, 0), (1, 1)))
