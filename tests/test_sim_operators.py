"""Every operator of the simulated ST Edge AI Core: a one-operator float graph, quantised to int8
QDQ (per-tensor and per-channel weights), generated, built for the host with the runtime's int8
kernels, and compared with onnxruntime on the same QDQ model: 0 LSB where onnxruntime's steps
are reproducible, else within 1 LSB. The same operator as TFLite must give the same bytes."""
import zlib

import numpy as np
import pytest
from onnx import helper

import qdq
from conftest import MODELS, generate, host_build, host_run

N = helper.make_node
RNG = np.random.default_rng(11)


def _w(*shape):
    return (RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)


def _f(*values):
    return np.asarray(values, np.float32)


def _i(*values):
    return np.asarray(values, np.int64)


# name: (nodes, input shape, constants, per-channel weights[, float values fused into one group])
CASES = {
    "conv_depthwise_dilated_asym_pads": (
        [N("Conv", ["x", "W", "B"], ["y"], group=8, pads=[1, 0, 2, 1], dilations=[2, 1])],
        [1, 8, 9, 9], {"W": _w(8, 1, 3, 3), "B": _w(8)}, True),
    "conv_grouped_stride2_relu": (
        [N("Conv", ["x", "W", "B"], ["c"], group=2, pads=[0, 1, 1, 0], strides=[2, 2]), N("Relu", ["c"], ["y"])],
        [1, 4, 10, 7], {"W": _w(6, 2, 3, 3), "B": _w(6)}, False, ["c"]),
    "conv_pointwise_relu6": (
        [N("Conv", ["x", "W", "B"], ["c"]), N("Clip", ["c", "lo", "hi"], ["y"])],
        [1, 5, 6, 6], {"W": _w(7, 5, 1, 1), "B": _w(7), "lo": _f(0), "hi": _f(6)}, True, ["c"]),
    "add_residual": (
        [N("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]), N("Add", ["x", "c"], ["y"])],
        [1, 4, 5, 5], {"W": _w(4, 4, 3, 3), "B": _w(4)}, True),
    "add_broadcast_channel": (
        [N("GlobalAveragePool", ["x"], ["g"]), N("Add", ["x", "g"], ["y"])], [1, 6, 4, 5], {}, False),
    "mul_squeeze_excite": (
        [N("GlobalAveragePool", ["x"], ["g"]), N("Sigmoid", ["g"], ["s"]), N("Mul", ["x", "s"], ["y"])],
        [1, 6, 4, 4], {}, False),
    "mul_constant_2d_broadcast": ([N("Mul", ["x", "k"], ["y"])], [1, 3, 8], {"k": _w(1, 8) * 4}, False),
    "concat_channels": (
        [N("Conv", ["x", "W", "B"], ["c"]), N("Relu", ["x"], ["r"]), N("Concat", ["c", "r"], ["y"], axis=1)],
        [1, 3, 4, 4], {"W": _w(5, 3, 1, 1) * 3, "B": _w(5)}, True),
    "concat_last_axis_2d": ([N("Sigmoid", ["x"], ["s"]), N("Concat", ["x", "s"], ["y"], axis=-1)], [1, 7], {},
                            False),
    "resize_nearest_asymmetric": (
        [N("Resize", ["x", "", "sc"], ["y"], mode="nearest", coordinate_transformation_mode="asymmetric",
           nearest_mode="floor")], [1, 3, 4, 5], {"sc": _f(1, 1, 2, 2)}, False),
    "resize_nearest_half_pixel": (
        [N("Resize", ["x", "", "sc"], ["y"], mode="nearest")], [1, 2, 3, 4], {"sc": _f(1, 1, 2, 3)}, False),
    "resize_bilinear_half_pixel": (
        [N("Resize", ["x", "", "sc"], ["y"], mode="linear")], [1, 3, 4, 4], {"sc": _f(1, 1, 2, 2)}, False),
    "resize_bilinear_align_corners_sizes": (
        [N("Resize", ["x", "", "", "sz"], ["y"], mode="linear", coordinate_transformation_mode="align_corners")],
        [1, 2, 3, 5], {"sz": _i(1, 2, 7, 9)}, False),
    "sigmoid": ([N("Sigmoid", ["x"], ["y"])], [1, 4, 3, 3], {}, False),
    "hardsigmoid": ([N("HardSigmoid", ["x"], ["y"], alpha=0.25, beta=0.4)], [1, 20], {}, False),
    "hardswish": ([N("HardSwish", ["x"], ["y"])], [1, 4, 3, 3], {}, False),
    "clip": ([N("Clip", ["x", "lo", "hi"], ["y"])], [1, 30], {"lo": _f(-1), "hi": _f(0.5)}, False),
    "leakyrelu": ([N("LeakyRelu", ["x"], ["y"], alpha=0.1)], [1, 4, 3, 3], {}, False),
    "prelu_per_channel": ([N("PRelu", ["x", "sl"], ["y"])], [1, 5, 3, 3],
                          {"sl": RNG.uniform(0.05, 0.5, (5, 1, 1)).astype(np.float32)}, False),
    "batchnorm_folded_into_conv": (
        [N("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
         N("BatchNormalization", ["c", "g", "b", "m", "v"], ["y"])],
        [1, 3, 6, 6], {"W": _w(4, 3, 3, 3), "B": _w(4), "g": _f(1.5, -0.7, 0.9, 2.0), "b": _f(0.1, -0.2, 0.3, 0),
                       "m": _f(0.05, 0, -0.1, 0.2), "v": _f(1.2, 0.8, 1.0, 0.5)}, True, ["c"]),
    "batchnorm_standalone": (
        [N("BatchNormalization", ["x", "g", "b", "m", "v"], ["y"])],
        [1, 3, 4, 4], {"g": _f(1.5, -0.7, 0.9), "b": _f(0.1, -0.2, 0.3), "m": _f(0.05, 0, -0.1),
                       "v": _f(1.2, 0.8, 1.0)}, False),
    "pad_constant": ([N("Pad", ["x", "p"], ["y"])], [1, 3, 4, 4], {"p": _i(0, 1, 2, 0, 0, 0, 1, 3)}, False),
    "transpose_4d": ([N("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])], [1, 3, 4, 5], {}, False),
    "transpose_3d": ([N("Transpose", ["x"], ["y"], perm=[0, 2, 1])], [1, 3, 6], {}, False),
    "squeeze_gemm": (
        [N("GlobalAveragePool", ["x"], ["g"]), N("Squeeze", ["g", "ax"], ["s"]), N("Gemm", ["s", "W", "B"], ["y"],
                                                                                   transB=1)],
        [1, 8, 3, 3], {"ax": _i(2, 3), "W": _w(5, 8), "B": _w(5)}, True),
    "unsqueeze_to_4d": ([N("Unsqueeze", ["x", "ax"], ["y"])], [1, 6], {"ax": _i(2, 3)}, False),
    "flatten_4d": ([N("Flatten", ["x"], ["y"])], [1, 3, 2, 4], {}, False),
    "slice_channels_and_step": (
        [N("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [1, 6, 7, 5],
        {"st": _i(1, 0, -4), "en": _i(5, 7, 5), "ax": _i(1, 2, 3), "sp": _i(1, 2, 1)}, False),
    "reducemean_spatial": ([N("ReduceMean", ["x"], ["y"], axes=[2, 3], keepdims=0)], [1, 5, 4, 3], {}, False),
    "global_average_pool": ([N("GlobalAveragePool", ["x"], ["y"])], [1, 5, 6, 6], {}, False),
    "maxpool_padded": ([N("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
                       [1, 4, 7, 7], {}, False),
    "averagepool": ([N("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])], [1, 4, 6, 6], {},
                    False),
    "gemm_per_channel_relu": ([N("Gemm", ["x", "W", "B"], ["g"], transB=1), N("Relu", ["g"], ["y"])], [1, 12],
                              {"W": _w(9, 12), "B": _w(9)}, True, ["g"]),
    "matmul": ([N("MatMul", ["x", "W"], ["y"])], [1, 10], {"W": _w(10, 6)}, False),
    "matmul_add_bias_per_channel": ([N("MatMul", ["x", "W"], ["m"]), N("Add", ["m", "B"], ["y"])], [1, 10],
                                    {"W": _w(10, 6), "B": _w(6)}, True, ["m"]),
    "softmax_last_axis": ([N("Softmax", ["x"], ["y"], axis=-1)], [1, 10], {}, False),
    "softmax_channels_4d": ([N("Softmax", ["x"], ["y"], axis=1)], [1, 6, 2, 3], {}, False),
}
# operators that TFLite has too (models/tflite_writer.py writes them); not "averagepool": its output
# has a grid of its own, and TFLite's AVERAGE_POOL_2D keeps its input's (LiteRT averages the codes)
TFLITE_CASES = {"conv_depthwise_dilated_asym_pads", "conv_pointwise_relu6", "add_residual", "add_broadcast_channel",
                "mul_squeeze_excite", "concat_channels", "concat_last_axis_2d", "resize_nearest_asymmetric",
                "resize_bilinear_half_pixel", "resize_bilinear_align_corners_sizes", "sigmoid", "hardswish",
                "leakyrelu", "pad_constant", "maxpool_padded", "global_average_pool",
                "gemm_per_channel_relu", "softmax_last_axis", "transpose_4d", "transpose_3d", "slice_channels_and_step",
                "prelu_per_channel", "unsqueeze_to_4d"}
# Operators whose onnxruntime semantics the kernels reproduce step for step (float32 tables over the
# 256 input codes, copies, max pooling, Resize on the dequantised floats, requantisation ties to
# even): 0 LSB. The others sum in float inside onnxruntime (DQ -> float op -> Q) in an order of its
# own: a value within float rounding of a .5 tie may round the other way, so within 1 LSB (measured:
# 0 except batchnorm_folded_into_conv, whose folded int32 bias is rounded to an integer).
EXACT = {"batchnorm_standalone", "clip", "concat_last_axis_2d", "flatten_4d", "hardsigmoid", "hardswish", "leakyrelu",
         "maxpool_padded", "pad_constant", "prelu_per_channel", "resize_nearest_asymmetric",
         "resize_nearest_half_pixel",
         "resize_bilinear_half_pixel", "resize_bilinear_align_corners_sizes",
         "sigmoid", "slice_channels_and_step", "transpose_3d", "transpose_4d", "unsqueeze_to_4d"}
PROFILES = {"no_ec": f"{MODELS}/kws_mlp/neural_art.json", "ec": f"{MODELS}/cifar_cnn/neural_art.json"}


def _quantised(tmp_path, case):
    nodes, shape, consts, per_channel, *fuse = CASES[case]
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    samples = [rng.standard_normal(shape).astype(np.float32) for _ in range(8)]
    qdq.float_model(tmp_path / "f.onnx", nodes, shape, consts)
    qdq.quantize(tmp_path / "f.onnx", tmp_path / "q.onnx", samples, per_channel, *fuse)
    return tmp_path / "q.onnx", samples


def check_within(model, exe, info, tmp_path, samples, lsb, fused=False):
    """Host build vs onnxruntime (qdq.reference) on float samples; returns (max abs LSB, top-1
    agreement, share of output values that are equal)."""
    (inp,), (outp,) = info["graphs"][0]["original_inputs"], info["graphs"][0]["original_outputs"]
    qi, qo = inp["data_format"], outp["data_format"]
    feed = np.concatenate([qdq.to_memory(qdq.on_grid(x, *qdq.grid(qi))).reshape(-1) for x in samples])
    got = np.frombuffer(host_run(exe, tmp_path, feed), np.int8).reshape(len(samples), -1)
    worst, agree, equal = 0, 0, 0
    for x, g in zip(samples, got):
        want = qdq.on_grid(qdq.reference(model, x, fused), *qdq.grid(qo))
        mine = qdq.from_memory(g.tobytes(), want.shape)
        worst = max(worst, int(np.max(np.abs(mine.astype(int) - want.astype(int)))))
        agree += int(np.argmax(mine) == np.argmax(want))
        equal += int(np.sum(mine == want))
    assert worst <= lsb, f"{worst} LSB off onnxruntime"
    return worst, agree, equal / got.size


def _generate_and_build(sim_install, model, out, profile="no_ec"):
    return host_build(generate(model, out, PROFILES[profile]), sim_install("2.2"), out.parent)


@pytest.mark.parametrize("case", sorted(CASES))
def test_operator_matches_onnxruntime(sim_install, tmp_path, case):
    """...and, where TFLite has the operator, its TFLite form (same int8 weights and scales) gives
    byte-identical outputs."""
    model, samples = _quantised(tmp_path, case)
    exe, info = _generate_and_build(sim_install, model, tmp_path / "onnx" / "st_ai_output")
    check_within(model, exe, info, tmp_path, samples[:3], 0 if case in EXACT else 1)
    if case not in TFLITE_CASES:
        return
    from stedgeai_sim.onnx_import import import_onnx
    from tflite_writer import tflite_bytes
    (tmp_path / "q.tflite").write_bytes(tflite_bytes(import_onnx(str(model))))
    tfl_exe, tfl_info = _generate_and_build(sim_install, tmp_path / "q.tflite",
                                            tmp_path / "tflite" / "st_ai_output")
    assert tfl_info["environment"]["tools"][0]["input_model"]["type"] == "tflite"
    qi = info["graphs"][0]["original_inputs"][0]["data_format"]
    feed = np.concatenate([qdq.to_memory(qdq.on_grid(x, *qdq.grid(qi))).reshape(-1) for x in samples[:3]])
    assert host_run(tfl_exe, tmp_path, feed) == host_run(exe, tmp_path, feed)


@pytest.mark.parametrize("case", ["conv_depthwise_dilated_asym_pads", "maxpool_padded", "global_average_pool",
                                  "averagepool", "gemm_per_channel_relu"])
def test_epoch_controller_blobs_match_onnxruntime(sim_install, tmp_path, case):
    """The same operators inside epoch-controller blobs (grouped/dilated conv, pools)."""
    model, samples = _quantised(tmp_path, case)
    out = tmp_path / "st_ai_output"
    exe, info = _generate_and_build(sim_install, model, out, "ec")
    assert "_ec_blob_" in (out / "network_ecblobs.h").read_text()
    check_within(model, exe, info, tmp_path, samples[:3], 1)

