"""The simulated runtime's int8 kernels (sim/stedgeai/runtime_lib/nr_kernels.c) built for the host
and called one by one: rounding ties and int32 saturation, int8 and activation clamps on both
sides, padding bounds of convolution and pooling against an integer numpy reference, 0 LSB (the
multipliers are 1.0, so every step is exact). A fast guard beside the slow operator tests, written
against the survivors of tools/mutate.py (target `kernels`)."""
import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import SIM

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no host C compiler (cc)")
I8, I32, F32 = (np.ctypeslib.ndpointer(t, flags="C_CONTIGUOUS") for t in (np.int8, np.int32, np.float32))


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    so = str(tmp_path_factory.mktemp("kernels") / "nr_kernels.so")
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", so, os.path.join(SIM, "runtime_lib", "nr_kernels.c"),
                    "-I", os.path.join(SIM, "install", "Middlewares", "ST", "AI", "Inc")], check=True)
    k = ctypes.CDLL(so)
    k.nr_round.argtypes, k.nr_round.restype = [ctypes.c_float], ctypes.c_int32
    k.nr_quantize_f32.argtypes = [F32, I8, ctypes.c_int, ctypes.c_float, ctypes.c_int]
    k.nr_dense_s8.argtypes = [I8, I8, I8, I32, F32] + [ctypes.c_int] * 6
    k.nr_conv2d_s8.argtypes = [I8, I8, I8, I32, F32] + [ctypes.c_int] * 19
    k.nr_pool_s8.argtypes = [I8, I8, ctypes.c_float] + [ctypes.c_int] * 14
    k.nr_shift_u8_s8.argtypes = [np.ctypeslib.ndpointer(np.uint8, flags="C_CONTIGUOUS"), I8, ctypes.c_int]
    k.nr_resize_s8.argtypes = [I8, I8] + [ctypes.c_int] * 8 + [ctypes.c_float] * 4 + [ctypes.c_int] * 2
    return k


@pytest.mark.parametrize("x, want", [
    (0.5, 0), (1.5, 2), (2.5, 2), (-0.5, 0), (-1.5, -2), (-2.5, -2),              # ties to even
    (np.nextafter(np.float32(0.5), np.float32(0)), 0), (np.nextafter(np.float32(0.5), np.float32(1)), 1),
    (np.nextafter(np.float32(-0.5), np.float32(-1)), -1), (1.25, 1), (-1.75, -2),
    (2147483520.0, 2147483647), (2147483392.0, 2147483392), (3e9, 2147483647),   # int32 saturation, both sides
    (-2147483648.0, -2147483648), (-2147483520.0, -2147483520), (-3e9, -2147483648),
])
def test_round_to_nearest_even_and_saturate(lib, x, want):
    assert lib.nr_round(float(np.float32(x))) == want


def test_quantize_clamps_to_int8(lib):
    x = np.array([-129, -128.5, -128, -127.5, 126.5, 127, 127.5, 128, 1e10, -1e10], np.float32)
    out = np.zeros(x.size, np.int8)
    lib.nr_quantize_f32(x, out, x.size, 1.0, 0)
    assert out.tolist() == [-128, -128, -128, -128, 126, 127, 127, 127, 127, -128]
    lib.nr_quantize_f32(np.array([126, 127, -129, -130], np.float32), out, 4, 1.0, 1)   # zero point 1
    assert out[:4].tolist() == [127, 127, -128, -128]


def test_dense_activation_bounds(lib):
    x = np.array([-6, -5, -4, 6, 7, 8], np.int8)
    out = np.zeros(6, np.int8)
    for i, v in enumerate(x):                     # out = (v - in_zp 1) * 1 + bias 1 + out_zp -1 = v - 1
        o = np.zeros(1, np.int8)
        lib.nr_dense_s8(np.array([v], np.int8), o, np.ones(1, np.int8), np.array([1], np.int32),
                        np.ones(1, np.float32), 1, 1, 1, -1, -6, 6)
        out[i] = o[0]
    assert out.tolist() == [-6, -6, -5, 5, 6, 6]             # lo - 1, lo, lo + 1, hi - 1, hi, hi + 1


def _conv_reference(x, w, bias, stride, pads, dil, groups, in_zp, out_zp, act):
    h, wd, c = x.shape
    oc, kh, kw, gc = w.shape
    oh = (h + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    padded = np.zeros((h + pads[0] + pads[2], wd + pads[1] + pads[3], c), np.int64)
    padded[pads[0]:pads[0] + h, pads[1]:pads[1] + wd] = x.astype(np.int64) - in_zp
    out = np.zeros((oh, ow, oc), np.int64)
    goc = oc // groups
    for y in range(oh):
        for xx in range(ow):
            for o in range(oc):
                c0 = o // goc * gc
                patch = padded[y * stride[0]:y * stride[0] + dil[0] * (kh - 1) + 1:dil[0],
                               xx * stride[1]:xx * stride[1] + dil[1] * (kw - 1) + 1:dil[1], c0:c0 + gc]
                out[y, xx, o] = bias[o] + np.sum(patch * w[o])
    return np.clip(out + out_zp, *act).astype(np.int8), oh, ow


CONV_CASES = [
    ((1, 1), (1, 1, 1, 1), (1, 1), 1, (3, 3), 4, 4), ((2, 2), (0, 1, 1, 0), (1, 1), 2, (3, 3), 4, 4),
    ((1, 1), (2, 0, 2, 1), (2, 1), 4, (3, 3), 4, 4), ((1, 2), (0, 0, 0, 0), (1, 2), 1, (3, 3), 4, 4),
    # one kernel row read as one run, two output channels at a time (an odd one left), runs of 4 bytes
    # and a 3-byte tail; a row cut short by the padding
    ((1, 1), (0, 0, 0, 0), (1, 1), 1, (1, 1), 7, 5), ((1, 1), (0, 1, 0, 1), (1, 1), 1, (1, 3), 5, 6),
]
# (accumulator, output) with multiplier 0.5, output zero point 1: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, ...
REQUANT_CASES = [(1, 1), (3, 3), (5, 3), (-1, 1), (-3, -1), (-5, -1), (7, 5), (8_388_609, 127), (-8_388_609, -128),
                 (2_000_000_000, 127), (-2_000_000_000, -128)]


def conv_case(stride, pads, dil, groups, kernel, in_c, out_c):
    """(input, weights, bias, expected output, nr_conv2d_s8's arguments after the five pointers) of
    one CONV_CASES row: a 5x6 input, input zero point 3, output zero point -2, clamp [-100, 90]."""
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, (5, 6, in_c), dtype=np.int8)
    w = rng.integers(-3, 4, (out_c, *kernel, in_c // groups), dtype=np.int8)
    bias = rng.integers(-20, 20, out_c, dtype=np.int32)
    want, oh, ow = _conv_reference(x, w, bias, stride, pads, dil, groups, 3, -2, (-100, 90))
    return x, w, bias, want, [5, 6, in_c, oh, ow, out_c, *kernel, *stride, pads[0], pads[1], *dil, groups, 3, -2,
                              -100, 90]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_padding_bounds_exact(lib, case):
    x, w, bias, want, args = conv_case(*case)
    out = np.zeros(want.size, np.int8)
    lib.nr_conv2d_s8(x.ravel(), out, w.ravel(), bias, np.ones(w.shape[0], np.float32), *args)
    assert np.array_equal(out.reshape(want.shape), want)


def test_requantisation_rounds_ties_to_even_and_clamps_far_values(lib):
    """acc * multiplier rounded half to even, then the output zero point and clamp; values far past
    int8 (where float32 steps exceed 1) still clamp."""
    for acc, want in REQUANT_CASES:
        o = np.zeros(1, np.int8)
        lib.nr_dense_s8(np.zeros(1, np.int8), o, np.zeros(1, np.int8), np.array([acc], np.int32),
                        np.array([0.5], np.float32), 1, 1, 0, 1, -128, 127)
        assert o[0] == want, acc


@pytest.mark.parametrize("is_max", [1, 0])
def test_pool_padding_bounds_exact(lib, is_max):
    """A 3x3 window over a padded 3x4 input: the padding is never a maximum (all inputs -128
    included), and adds zeros to a sum."""
    for x in (np.full((3, 4, 2), -128, np.int8), np.arange(-12, 12, dtype=np.int8).reshape(3, 4, 2) * 5):
        padded = np.full((5, 6, 2), -1000 if is_max else 0, np.int64)
        padded[1:4, 1:5] = x.astype(np.int64) - 1
        win = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(0, 1))
        want = (win.max(axis=(-2, -1)) if is_max else win.sum(axis=(-2, -1))) + 2
        out = np.zeros(3 * 4 * 2, np.int8)
        lib.nr_pool_s8(x.ravel(), out, 1.0, 3, 4, 2, 3, 4, 3, 3, 1, 1, 1, 1, 1, 2, is_max)
        assert np.array_equal(out.reshape(3, 4, 2), np.clip(want, -128, 127).astype(np.int8))


def test_shift_u8_s8_writes_count_bytes(lib):
    out = np.full(4, 7, np.int8)
    lib.nr_shift_u8_s8(np.array([0, 128, 255, 1], np.uint8), out, 3)
    assert out.tolist() == [-128, 0, 127, 7]                 # the fourth byte is not the kernel's


ROW = np.array([10, 20, 30, 40, 99], np.int8)                  # 99: past the 4-wide input, never read


def _resize_row(lib, out_w, coord, nearest):
    out = np.full(out_w + 8, 77, np.int8)                     # 77: past the output, never written
    lib.nr_resize_s8(ROW, out, 1, 4, 1, 1, out_w, 0, coord, nearest, 1.0, out_w / 4, 1.0, 1.0, 0, 0)
    assert out[out_w:].tolist() == [77] * 8
    return out[:out_w].tolist()


@pytest.mark.parametrize("out_w, coord, nearest, want", [
    # asymmetric (x / 2): 0, 0.5, 1, 1.5, ... 3.5; the last clamps to the input's end
    (8, 1, 0, [10, 10, 20, 20, 30, 30, 40, 40]),                  # round, ties to floor
    (8, 1, 1, [10, 20, 20, 30, 30, 40, 40, 40]),                  # round, ties to ceil
    (8, 1, 2, [10, 10, 20, 20, 30, 30, 40, 40]),                  # floor
    (8, 1, 3, [10, 20, 20, 30, 30, 40, 40, 40]),                  # ceil
    (2, 2, 2, [10, 40]),                                          # align corners, 2 outputs: 0 and 3
    (1, 2, 2, [10]),                                              # align corners, 1 output: 0
    (1, 3, 2, [10]),                                              # pytorch half pixel, 1 output: 0
    (2, 3, 2, [10, 30]),                                          # pytorch half pixel: 0.5, 2.5
])
def test_resize_nearest_source_index(lib, out_w, coord, nearest, want):
    assert _resize_row(lib, out_w, coord, nearest) == want


def test_pool_average_of_codes_counts_only_the_inside_cells_and_rounds_half_away(lib):
    """NR_POOL_AVG_CODES (TFLite's AVERAGE_POOL_2D): the mean of the codes under the window, the
    padding neither summed nor counted, rounded half away from zero (ties of both signs: a corner
    window holds 4 cells, an edge one 6)."""
    x = np.array([[1, -1, 2, -2], [3, -3, 1, -1], [0, 2, -2, 5]], np.int8).reshape(3, 4, 1)
    padded = np.zeros((5, 6), np.int64)
    inside = np.zeros((5, 6), np.int64)
    padded[1:4, 1:5], inside[1:4, 1:5] = x[..., 0], 1
    win = np.lib.stride_tricks.sliding_window_view(padded, (3, 3)).sum(axis=(-2, -1))
    n = np.lib.stride_tricks.sliding_window_view(inside, (3, 3)).sum(axis=(-2, -1))
    want = np.sign(win) * ((np.abs(win) + n // 2) // n)
    out = np.zeros(12, np.int8)
    lib.nr_pool_s8(x.ravel(), out, 1.0, 3, 4, 1, 3, 4, 3, 3, 1, 1, 1, 1, 3, 3, 2)   # in_zp 3: codes, not values
    assert out.reshape(3, 4).tolist() == want.tolist()
    assert sorted(set((np.abs(win) % n * 2 == n).ravel().tolist())) == [False, True]   # a tie is among them


def test_resize_quantizes_into_int8_clamping_below(lib):
    """(x - 100) / 0.5 for x = 10, 20, 30, 40: -180, -160, -140 clamp to -128, -120 stays."""
    out = np.full(16, 77, np.int8)
    lib.nr_resize_s8(ROW, out, 1, 4, 1, 1, 8, 0, 1, 2, 1.0, 2.0, 1.0, 0.5, 100, 0)
    assert out.tolist() == [-128] * 6 + [-120] * 2 + [77] * 8
