"""The simulated NPU's arithmetic at the edges test_npu_units.py leaves open, judged by exact
decimal arithmetic and numpy written out by hand: left shifts, a y-term shifted further than the
x-term, the coefficient memory's words, the rounding a unit's ORNDMODE selects, global max and min,
right padding and windows that do not tile the frame, and the settings that stop the run."""
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np
import pytest

from npu_model.arithacc import ArithConfig, addresses, coefficient_memory, compute
from npu_model.convacc import ConvConfig, convolve, kernel_frames
from npu_model.fixedpoint import NotModelled, shift_right
from npu_model.poolacc import MAX, MIN, PoolConfig, pool
from test_npu_units import arith_registers, conv_registers, memory, pool_registers

RNG = np.random.default_rng(36)


def test_a_negative_shift_shifts_left_whatever_the_rounding():
    for rounding in ("floor", "half_even"):
        assert shift_right([3, -3, 0], -2, rounding).tolist() == [12, -12, 0]
        assert shift_right([3, -3], 0, rounding).tolist() == [3, -3]


def test_a_y_term_shifted_further_than_x_aligns_x_up_and_rounds_once():
    """(5x + 3y/8 - 2) / 2 with AX 0, BY 3: x is scaled up by 8 before the single rounding."""
    cfg = ArithConfig.from_registers(arith_registers("scalar", a=5, b=3, c=-2, dual=1, shifts=(0, 3, 0), res=1,
                                                     obytes=2))
    x, y = RNG.integers(-128, 128, 40), RNG.integers(-128, 128, 40)
    exact = [(Decimal(5 * int(p)) + Decimal(3 * int(q)) / 8 - 2) / 2 for p, q in zip(x, y)]
    assert compute(x, cfg, y).tolist() == [int(v.quantize(Decimal(1), rounding=ROUND_HALF_EVEN)) for v in exact]


def test_the_coefficient_memory_is_two_words_an_entry_from_0x400():
    regs = {0x2000 + 0x400: 5, 0x2000 + 0x404: 6, 0x2000 + 0x408: 7, 0x2000 + 0x40C: 8, 0x2000 + 0x3F8: 99}
    assert coefficient_memory(regs, 0x2000, entries=3) == [(5, 6), (7, 8), (0, 0)]


@pytest.mark.parametrize("field", ["FSHIFT", "FROUND", "FSAT"])
@pytest.mark.parametrize("axis", "XY")
def test_an_input_shifter_other_than_a_plain_pass_stops(field, axis):
    regs = arith_registers("scalar")
    regs["INSHIFTER"] = {f"{f}{a}": 16 if f == "FSHIFT" else 0 for f in ("FSHIFT", "FROUND", "FSAT") for a in "XY"}
    regs["INSHIFTER"][f"{field}{axis}"] = 17 if field == "FSHIFT" else 1
    with pytest.raises(NotModelled, match=f"^ARITH: INSHIFTER {axis} is not modelled"):
        compute([1], ArithConfig.from_registers(regs))


def test_round_without_orndmode_bit_0_stops_even_with_relu():
    with pytest.raises(NotModelled, match=r"^ARITH2: CTRL.ORNDMODE bit 0 = 0 with ROUND=1 is not modelled"):
        ArithConfig.from_registers(arith_registers("scalar", ornd=2), name="ARITH2")
    cfg = ArithConfig.from_registers(arith_registers("scalar", ornd=3, a=1, res=1))
    assert compute([-3, 3, 5], cfg).tolist() == [0, 2, 2]          # ReLU and rounding half to even (2.5 -> 2)


def test_coefficient_entries_past_383_stop_naming_the_limit():
    regs = arith_registers("height", width=1, height=400, depth=1, vectors="a")
    cfg = ArithConfig.from_registers(regs, memory(a=range(4)))
    assert addresses(cfg, 384).tolist() == list(range(384))
    with pytest.raises(NotModelled, match="coefficient entries past 383 are not modelled"):
        addresses(cfg, 385)


@pytest.mark.parametrize("kind, pick", [(8, np.max), (9, np.min)])       # ATON.h's POOLTYPE values
def test_global_max_and_min_take_the_whole_frame_per_channel(kind, pick):
    x = RNG.integers(-128, 128, (5, 6, 3))
    cfg = PoolConfig.from_registers(pool_registers(kind, win=(0, 0), stride=(1, 1), out=(1, 1)))
    assert pool(x, cfg).tolist() == pick(x, axis=(0, 1)).tolist()


@pytest.mark.parametrize("kind", [MAX, MIN])
def test_windows_with_right_padding_and_a_width_they_do_not_tile(kind):
    """Width 7, 2x2 windows 2 apart: padded by one column on the right the last window holds one
    real column; unpadded, the last column is left out."""
    x = RNG.integers(-128, 128, (4, 7, 2))
    pick = np.max if kind == MAX else np.min
    for right, ow in ((1, 4), (0, 3)):
        cfg = PoolConfig.from_registers(pool_registers(kind, width=7, height=4, b=2, pads=(0, 0, 0, right),
                                                       out=(2, ow)))
        want = [[pick(x[2 * i:2 * i + 2, 2 * j:2 * j + 2], axis=(0, 1)) for j in range(ow)] for i in range(2)]
        assert pool(x, cfg).tolist() == np.array(want).ravel().tolist()


@pytest.mark.parametrize("change, says", [
    ({"CTRL": {"TYPE": 2}}, r"CTRL.TYPE=0x2"), ({"CTRL": {"FROUND": 1}}, "the input shifter"),
    ({"CTRL": {"FSAT": 1}}, "the input shifter"), ({"CTRL": {"FSHIFT": 17}}, "the input shifter"),
    ({"XCROP": {"LCROP": 1}}, "a crop inside the frame"),
    ({"YCROP": {"TCROP": 1}}, "a crop inside the frame"), ({"XCROP": {"RCROP": 5}}, "a crop inside the frame"),
    ({"YCROP": {"BCROP": 2}}, "a crop inside the frame")])
def test_an_unmodelled_pooling_setting_stops(change, says):
    regs = pool_registers(MAX)
    for field, values in change.items():
        regs[field].update(values)
    with pytest.raises(NotModelled, match=f"^POOL: {says}"):
        pool(np.zeros((5, 6, 3)), PoolConfig.from_registers(regs))


def test_crops_at_zero_or_the_frames_edge_are_the_whole_frame():
    regs = pool_registers(MAX)
    regs["XCROP"]["RCROP"], regs["YCROP"]["BCROP"] = 0, 0
    x = RNG.integers(-128, 128, (5, 6, 3))
    assert pool(x, PoolConfig.from_registers(regs)).tolist() == \
        pool(x, PoolConfig.from_registers(pool_registers(MAX))).tolist()


def test_kernel_stream_sizes_and_deep_pixels():
    assert ConvConfig.from_registers(conv_registers(kw=3, kh=3, nr=4, depth=3)).frame_bytes == 4 * 3 * 3 * 3
    assert ConvConfig.from_registers(conv_registers(kw=2, kh=5, nr=2, depth=1, kfilt=(6, 0, 1))).frame_bytes == 60
    deep = conv_registers(kw=1, kh=1, nr=1, depth=4, deep=1)
    assert ConvConfig.from_registers(deep).pixel_items == 6                 # two 24-bit items of 3 values
    deep["DFORMAT"]["FBYTES"] = 2
    assert ConvConfig.from_registers(deep).pixel_items == 4
    assert ConvConfig.from_registers(conv_registers(depth=4)).pixel_items == 4


def test_deep_mode_with_a_kernel_other_than_1x1_stops():
    cfg = ConvConfig.from_registers(conv_registers(kw=3, kh=1, nr=1, depth=3, deep=1), "CONVACC4")
    with pytest.raises(NotModelled, match="^CONVACC4: DEEPMODE with a kernel other than 1x1 is not modelled"):
        convolve(np.zeros((6, 7, 3)), np.zeros((1, 1, 3, 3)), cfg)


def test_round_off_truncates_whatever_orndmode_says():
    for ornd in (0, 1):
        cfg = ArithConfig.from_registers(arith_registers("scalar", round_=0, ornd=ornd, res=1))
        assert compute([3, -3], cfg).tolist() == [1, -2]                 # floor


def test_coefficient_vectors_without_memory_are_zero_and_b_keeps_all_16_bits():
    cfg = ArithConfig.from_registers(arith_registers("scalar", vectors="c", a=1))
    assert compute([5], cfg).tolist() == [5]
    cfg = ArithConfig.from_registers(arith_registers("scalar", vectors="b", a=0, dual=1, obytes=2), memory(b=[-3]))
    assert compute([0], cfg, [7]).tolist() == [-21]


def test_a_pool_block_size_of_0_is_one_channel():
    x = RNG.integers(-128, 128, (4, 6, 1))
    regs = pool_registers(MAX, width=6, height=4, b=1, out=(2, 3))
    regs["PDIMS"]["BSIZE"] = 0
    want = x.reshape(2, 2, 3, 2).max(axis=(1, 3)).ravel()
    assert pool(x, PoolConfig.from_registers(regs)).tolist() == want.tolist()


def test_windows_with_left_padding():
    x = RNG.integers(-128, 128, (4, 5, 2))
    cfg = PoolConfig.from_registers(pool_registers(MAX, width=5, height=4, b=2, pads=(0, 0, 1, 0), out=(2, 3)))
    padded = np.concatenate([np.full((4, 1, 2), -1000), x], axis=1)
    want = [[padded[2 * i:2 * i + 2, 2 * j:2 * j + 2].max(axis=(0, 1)) for j in range(3)] for i in range(2)]
    assert pool(x, cfg).tolist() == np.array(want).ravel().tolist()


@pytest.mark.parametrize("crop", [{"FHCROP": {"LEFT": 0, "RIGHT": 7 * 3 - 1}}, {"FVCROP": {"TOP": 0, "BOTTOM": 5}},
                                  {"FHCROP": {"LEFT": 0, "RIGHT": 0xFFFF}, "FVCROP": {"TOP": 0, "BOTTOM": 0xFFFF}}])
def test_convolution_crops_at_the_frames_edges_are_the_whole_frame(crop):
    x, w = RNG.integers(0, 256, (6, 7, 3)), RNG.integers(-128, 128, (4, 3, 3, 3))
    regs = conv_registers(raw=1, obytes=3)
    plain = convolve(x, w, ConvConfig.from_registers(regs))
    regs.update(crop)
    assert convolve(x, w, ConvConfig.from_registers(regs)).tolist() == plain.tolist()


@pytest.mark.parametrize("crop", [{"FHCROP": {"LEFT": 1}}, {"FHCROP": {"RIGHT": 19}}, {"FHCROP": {"LEFT": 2}}])
def test_a_horizontal_crop_inside_a_pixel_stops(crop):
    regs = conv_registers()
    regs.update({"FHCROP": {"LEFT": 0, "RIGHT": 0xFFFF}, "FVCROP": {"TOP": 0, "BOTTOM": 0xFFFF}})
    for field, values in crop.items():
        regs[field].update(values)
    with pytest.raises(NotModelled, match="FHCROP inside a pixel"):
        convolve(np.zeros((6, 7, 3)), np.zeros((4, 3, 3, 3)), ConvConfig.from_registers(regs))


def test_a_kernel_stream_of_one_set_gives_every_kernel_and_a_short_one_is_refused():
    cfg = ConvConfig.from_registers(conv_registers(kw=1, kh=1, nr=2, depth=2, kfilt=(1, 0, 0)))
    assert kernel_frames(bytes([1, 2, 3, 4]), cfg, 1).ravel().tolist() == [1, 2, 3, 4]
    with pytest.raises(NotModelled, match="kernel stream: 7 bytes for 2 frames of 4"):
        kernel_frames(bytes(7), cfg, 2)


def test_signed_16_bit_features_are_read_as_16_bit():
    regs = conv_registers(kw=1, kh=1, nr=1, depth=1, width=2, height=1, raw=1, obytes=3, funsigned=0)
    regs["DFORMAT"]["FBYTES"] = 2
    got = convolve(np.array([-300, 0x7FFF]), np.array([[[[1]]]]), ConvConfig.from_registers(regs))
    assert got.ravel().tolist() == [-300, 32767]


def test_the_coefficient_address_is_a_9_bit_counter_that_wraps():
    """383 + 255 wraps to 126 (mod 512): an address past the 384 entries on the way is never used."""
    from types import SimpleNamespace
    cfg = SimpleNamespace(name="ARITH0", counters=(((1, 1), (0, 0), (0, 0)), 0, 255, (128, 0, 0)))
    assert addresses(cfg, 4).tolist() == [0, 255, 383, 126]


def test_a_coefficient_vector_c_comes_from_the_memory():
    cfg = ArithConfig.from_registers(arith_registers("scalar", vectors="c", a=1, c=3), memory(c=[7]))
    assert compute([5], cfg).tolist() == [12]                       # 5 + the memory's 7, not COEFFAC.C's 3
