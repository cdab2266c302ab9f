"""The float-I/O reference of `scons validate` follows the deployed model's arithmetic: its
quantisation and dequantisation equal, value for value, the simulated runtime's conversion
kernels (compiled for the host), rounding ties and out-of-range values included; the int8 grids
come from the QDQ model; errors on a float output are counted in LSB of that grid."""
import ctypes
import os
import subprocess

import numpy as np
import pytest

from conftest import MODELS, ROOT
from n6.aivalidation.messages import TensorDesc
from n6.run import reference, validate

KERNELS = os.path.join(ROOT, "sim", "stedgeai", "runtime_lib", "nr_kernels.c")
INCLUDE = os.path.join(ROOT, "sim", "stedgeai", "install", "Middlewares", "ST", "AI", "Inc")


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    lib = str(tmp_path_factory.mktemp("nr") / "nr_kernels.so")
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-I", INCLUDE, KERNELS, "-o", lib, "-lm"], check=True)
    return ctypes.CDLL(lib)


def _values(scale):
    rng = np.random.default_rng(2)
    ties = (np.arange(-140, 140) + 0.5) * np.float32(scale)          # halfway between two steps
    wide = np.float32([0.0, -0.0, 1e3, -1e3, 1e6, -1e6, 3e38, -3e38, 127.5 * scale, -128.5 * scale, -129 * scale])
    return np.concatenate([ties, wide, rng.standard_normal(2000) * 3]).astype(np.float32)


@pytest.mark.parametrize("scale, zp", [(0.0235, 0), (1 / 256, -128), (0.1, 17), (0.5, -3)])
def test_quantise_and_dequantise_as_the_runtime_does(kernels, scale, zp):
    x = _values(scale)
    out = np.zeros(len(x), np.int8)
    kernels.nr_quantize_f32(x.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p),
                            ctypes.c_int(len(x)), ctypes.c_float(scale), ctypes.c_int(zp))
    got = reference.quantize_as_deployed(x, scale, zp)
    assert got.dtype == np.int8 and np.array_equal(got, out)
    assert got.min() == -128 and got.max() == 127                    # saturated, not wrapped
    q = np.arange(-128, 128, dtype=np.int8)
    back = np.zeros(len(q), np.float32)
    kernels.nr_dequantize_s8(q.ctypes.data_as(ctypes.c_void_p), back.ctypes.data_as(ctypes.c_void_p),
                             ctypes.c_int(len(q)), ctypes.c_float(scale), ctypes.c_int(zp))
    assert np.array_equal(reference.dequantize_as_deployed(q, scale, zp), back)


def test_int8_grids_of_the_qdq_model():
    onnx_file = os.path.join(MODELS, "kws_mlp_f32", "model.onnx")
    (grid_in,), (grid_out,) = reference.io_quantization(onnx_file)
    assert grid_out == (1 / 256, -128) and grid_in[0] > 0 and isinstance(grid_in[1], int)
    model = type("Model", (), {})()
    model.outputs = [TensorDesc("q_18_float32", "float32", (1, 12))]
    assert reference.output_lsb(reference.io_quantization(onnx_file)[1], model) == [1 / 256]
    model.outputs = [TensorDesc("q_18", "int8", (1, 12), 1 / 256, -128)]
    assert reference.output_lsb(reference.io_quantization(onnx_file)[1], model) == [1.0]


def test_float_reference_is_the_int8_reference_dequantised():
    """The float-I/O reference equals the int8 model's reference on the inputs quantised as the
    board does, dequantised as the board does."""
    onnx_file = os.path.join(MODELS, "kws_mlp_f32", "model.onnx")
    grids = reference.io_quantization(onnx_file)
    (grid_in,), (grid_out,) = grids
    x = _values(grid_in[0])[:490 * 4].reshape(4, 490)
    f32 = type("Model", (), {})()
    f32.inputs, f32.outputs = [TensorDesc("in", "float32", (1, 490))], [TensorDesc("out", "float32", (1, 12))]
    i8 = type("Model", (), {})()
    i8.inputs = [TensorDesc("in", "int8", (1, 490), *grid_in)]
    i8.outputs = [TensorDesc("out", "int8", (1, 12), *grid_out)]
    q = reference.quantize_as_deployed(x, *grid_in)
    (ref_f32,) = reference.onnx_reference(onnx_file, f32, [[row.tobytes()] for row in x], grids)
    (ref_i8,) = reference.onnx_reference(onnx_file, i8, [[row.tobytes()] for row in q], grids)
    assert ref_f32.dtype == np.float32 and np.array_equal(ref_f32, reference.dequantize_as_deployed(ref_i8, *grid_out))
    got = ref_f32.copy()
    got[2, 3] += 3 * np.float32(grid_out[0])
    _, report, passed = validate.validate(f32, [got], [ref_f32], 2, "test", [grid_out[0]])
    assert not passed and report["outputs"][0]["max_abs_lsb"] == pytest.approx(3.0)
