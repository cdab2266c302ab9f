"""Make the bundled int8 (QDQ) ONNX / TFLite models, deterministically.

    python models/make_models.py [OUT [NAME...]]   # rewrite models/*/model.{onnx,tflite}
Weights come from a seeded generator; activation scales are calibrated with a float pass over
a seeded random input, so the int8 models compute something meaningful. The reference
architectures (architectures.py) are calibrated with onnxruntime; digits_mlp is trained with
scikit-learn, the one dependency outside requirements.txt (`pip install scikit-learn`), needed
only to remake that model: without it the bundled digits_mlp is kept."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
for _p in (HERE, os.path.join(HERE, "..", "sim", "stedgeai"), os.path.join(HERE, "..", "site_scons")):
    sys.path.insert(0, os.path.abspath(_p))
import architectures  # noqa: E402  (after the path set-up)


class QDQModel:
    """Builds a QDQ graph and, alongside, its float reference values for calibration."""

    def __init__(self, name, seed):
        self.name, self.rng = name, np.random.default_rng(seed)
        self.nodes, self.inits, self.inputs = [], [], []
        self.n = 0

    def _id(self, prefix):
        self.n += 1
        return f"{prefix}_{self.n}"

    def _const(self, name, array):
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def _qparams(self, name, y, relu):
        hi = float(np.max(np.abs(y))) or 1.0
        if relu:   # all non-negative: use the full int8 range from zero
            scale, zp = np.float32(float(np.max(y)) / 255 or 1.0), np.int8(-128)
        else:
            scale, zp = np.float32(hi / 127), np.int8(0)
        return self._const(name + "_scale", scale), self._const(name + "_zp", zp), scale, zp

    def _quantize(self, x_name, y, relu=False):
        """QuantizeLinear + DequantizeLinear of a float value; returns (dq name, dequantised value)."""
        q = self._id("q")
        s, z, scale, zp = self._qparams(q, y, relu)
        self.nodes.append(helper.make_node("QuantizeLinear", [x_name, s, z], [q], name=q + "_Q"))
        dq = q + "_dq"
        self.nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [dq], name=q + "_DQ"))
        yq = np.clip(np.round(y / scale) + zp, -128, 127)
        return dq, ((yq - zp) * scale).astype(np.float32), q

    def input(self, shape, name="input"):
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        x = self.rng.standard_normal(shape).astype(np.float32)
        dq, xv, _ = self._quantize(name, x)
        return dq, xv

    def _weights(self, shape, axis):
        w = self.rng.integers(-127, 128, size=shape, dtype=np.int8)
        fan_in = int(np.prod(shape)) // shape[axis]
        scale = (np.full(shape[axis], 1.0, np.float32) / np.sqrt(fan_in) / 127 * 2).astype(np.float32)
        scale *= self.rng.uniform(0.8, 1.2, shape[axis]).astype(np.float32)
        name = self._id("w")
        self._const(name, w)
        self._const(name + "_scale", scale)
        self._const(name + "_zp", np.zeros(shape[axis], np.int8))
        dq = name + "_dq"
        self.nodes.append(helper.make_node("DequantizeLinear", [name, name + "_scale", name + "_zp"], [dq],
                                           name=name + "_DQ", axis=axis))
        bshape = [1] * len(shape)
        bshape[axis] = shape[axis]
        return dq, w.astype(np.float32) * scale.reshape(bshape), scale

    def _bias(self, n, x_scale, w_scale):
        b = self.rng.integers(-2000, 2000, size=n, dtype=np.int32)
        scale = (np.float32(x_scale) * w_scale).astype(np.float32)
        name = self._id("b")
        self._const(name, b)
        self._const(name + "_scale", scale)
        self._const(name + "_zp", np.zeros(n, np.int32))
        dq = name + "_dq"
        self.nodes.append(helper.make_node("DequantizeLinear", [name, name + "_scale", name + "_zp"], [dq],
                                           name=name + "_DQ", axis=0))
        return dq, b.astype(np.float32) * scale

    def _scale_of(self, dq_name):
        init = {i.name: i for i in self.inits}
        return numpy_helper.to_array(init[dq_name[:-3] + "_scale"])

    def gemm(self, x, xv, n_out, relu, style="gemm"):
        k = xv.shape[-1]
        if style == "gemm":
            wdq, wv, ws = self._weights((n_out, k), 0)
            bdq, bv = self._bias(n_out, self._scale_of(x), ws)
            y = xv @ wv.T + bv
            out = self._id("gemm")
            self.nodes.append(helper.make_node("Gemm", [x, wdq, bdq], [out], name=out, transB=1))
        else:   # MatMul + Add
            wdq, wv, ws = self._weights((k, n_out), 1)
            bdq, bv = self._bias(n_out, self._scale_of(x), ws)
            y = xv @ wv + bv
            mm, out = self._id("matmul"), self._id("add")
            self.nodes += [helper.make_node("MatMul", [x, wdq], [mm], name=mm),
                           helper.make_node("Add", [mm, bdq], [out], name=out)]
        return self._act(out, y, relu)

    def _act(self, out, y, relu):
        if relu:
            r = self._id("relu")
            self.nodes.append(helper.make_node("Relu", [out], [r], name=r))
            out, y = r, np.maximum(y, 0)
        dq, yv, _ = self._quantize(out, y, relu)
        return dq, yv

    def conv(self, x, xv, c_out, k=3, pad=1, stride=1, relu=True):
        c_in = xv.shape[1]
        wdq, wv, ws = self._weights((c_out, c_in, k, k), 0)
        bdq, bv = self._bias(c_out, self._scale_of(x), ws)
        xp = np.pad(xv, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        h = (xp.shape[2] - k) // stride + 1
        w = (xp.shape[3] - k) // stride + 1
        y = np.zeros((1, c_out, h, w), np.float32)
        for i in range(h):
            for j in range(w):
                patch = xp[0, :, i * stride:i * stride + k, j * stride:j * stride + k]
                y[0, :, i, j] = np.tensordot(wv, patch, axes=([1, 2, 3], [0, 1, 2]))
        y += bv.reshape(1, -1, 1, 1)
        out = self._id("conv")
        self.nodes.append(helper.make_node("Conv", [x, wdq, bdq], [out], name=out, kernel_shape=[k, k],
                                           pads=[pad] * 4, strides=[stride] * 2))
        return self._act(out, y, relu)

    def maxpool(self, x, xv):
        n, c, h, w = xv.shape
        y = xv.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))
        out = self._id("maxpool")
        self.nodes.append(helper.make_node("MaxPool", [x], [out], name=out, kernel_shape=[2, 2], strides=[2, 2]))
        dq, yv, _ = self._quantize(out, y, relu=bool(np.all(y >= 0)))
        return dq, yv

    def global_avgpool_flatten(self, x, xv):
        y = xv.mean(axis=(2, 3), keepdims=True)
        out = self._id("gap")
        self.nodes.append(helper.make_node("GlobalAveragePool", [x], [out], name=out))
        dq, yv, _ = self._quantize(out, y, relu=bool(np.all(y >= 0)))
        flat = self._id("flatten")
        self.nodes.append(helper.make_node("Flatten", [dq], [flat], name=flat, axis=1))
        return self._quantize(flat, yv.reshape(1, -1), relu=bool(np.all(yv >= 0)))[:2]

    def concat(self, parts):
        """Concat of (dq name, value) pairs along the features, requantised."""
        out = self._id("concat")
        self.nodes.append(helper.make_node("Concat", [x for x, _ in parts], [out], name=out, axis=1))
        y = np.concatenate([v for _, v in parts], axis=1)
        dq, yv, _ = self._quantize(out, y, relu=bool(np.all(y >= 0)))
        return dq, yv

    def softmax(self, x, xv, name="output"):
        e = np.exp(xv - xv.max(axis=-1, keepdims=True))
        y = e / e.sum(axis=-1, keepdims=True)
        out = self._id("softmax")
        self.nodes.append(helper.make_node("Softmax", [x], [out], name=out, axis=-1))
        q = self._id("q")
        s = self._const(q + "_scale", np.float32(1 / 256))
        z = self._const(q + "_zp", np.int8(-128))
        self.nodes.append(helper.make_node("QuantizeLinear", [out, s, z], [q], name=q + "_Q"))
        self.nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [name], name=q + "_DQ"))
        return y

    def output(self, x, xv, name):
        """A graph output holding `x` requantised (a regression head)."""
        q = self._id("q")
        s, z, _, _ = self._qparams(q, xv, relu=False)
        self.nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [q], name=q + "_Q"))
        self.nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [name], name=q + "_DQ"))

    def save(self, path, out_shape, outputs=None):
        """outputs: [(name, shape)] of the graph; default one output named "output"."""
        outputs = outputs or [("output", out_shape)]
        graph = helper.make_graph(self.nodes, self.name, self.inputs,
                                  [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in outputs],
                                  self.inits)
        model = helper.make_model(graph, producer_name="n6-models", opset_imports=[helper.make_opsetid("", 19)])
        model.ir_version = 9
        onnx.checker.check_model(model)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        onnx.save(model, path)


def kws_mlp(path):
    """Keyword spotting: 49x10 MFCC frame → 12 classes (about 93 KB of weights)."""
    m = QDQModel("kws_mlp", seed=1)
    x, xv = m.input([1, 490])
    x, xv = m.gemm(x, xv, 144, relu=True)
    x, xv = m.gemm(x, xv, 144, relu=True, style="matmul")
    x, xv = m.gemm(x, xv, 12, relu=False)
    m.softmax(x, xv)
    m.save(path, [1, 12])


def cifar_cnn(path):
    """32x32 RGB image → 10 classes, three conv blocks."""
    m = QDQModel("cifar_cnn", seed=2)
    x, xv = m.input([1, 3, 32, 32])
    x, xv = m.conv(x, xv, 16)
    x, xv = m.maxpool(x, xv)
    x, xv = m.conv(x, xv, 32)
    x, xv = m.maxpool(x, xv)
    x, xv = m.conv(x, xv, 64)
    x, xv = m.global_avgpool_flatten(x, xv)
    x, xv = m.gemm(x, xv, 10, relu=False)
    m.softmax(x, xv)
    m.save(path, [1, 10])


def big_mlp(path, width=2048):
    """A wide MLP with several MB of weights, for pack and incremental-build scale."""
    m = QDQModel("big_mlp", seed=3)
    x, xv = m.input([1, 1024])
    x, xv = m.gemm(x, xv, width, relu=True)
    x, xv = m.gemm(x, xv, 1024, relu=True)
    x, xv = m.gemm(x, xv, 256, relu=True)
    x, xv = m.gemm(x, xv, 10, relu=False)
    m.softmax(x, xv)
    m.save(path, [1, 10])


def fusion_mlp(path):
    """Two sensors, two heads: an audio frame and a motion window through their own branches,
    joined (Concat), then a class head (Softmax) and a position head (regression). The bundled
    model with several inputs and outputs: multi-tensor framing, acks and .npz inputs."""
    m = QDQModel("fusion_mlp", seed=5)
    a, av = m.input([1, 40], "audio")
    b, bv = m.input([1, 24], "motion")
    a, av = m.gemm(a, av, 32, relu=True)
    b, bv = m.gemm(b, bv, 16, relu=True)
    x, xv = m.concat([(a, av), (b, bv)])
    x, xv = m.gemm(x, xv, 32, relu=True)
    c, cv = m.gemm(x, xv, 6, relu=False)
    m.softmax(c, cv, "event")
    p, pv = m.gemm(x, xv, 3, relu=False, style="matmul")
    m.output(p, pv, "position")
    m.save(path, None, [("event", [1, 6]), ("position", [1, 3])])


def tiny_dense(path):
    """The smallest useful model; source of the prebuilt example."""
    m = QDQModel("tiny_dense", seed=4)
    x, xv = m.input([1, 64])
    x, xv = m.gemm(x, xv, 32, relu=True)
    x, xv = m.gemm(x, xv, 10, relu=False)
    m.softmax(x, xv)
    m.save(path, [1, 10])


def _save_onnx(model, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(model, path)


def mobilenet_v2(path):
    _save_onnx(architectures.mobilenet_v2(), path)


def tiny_yolo(path):
    _save_onnx(architectures.tiny_yolo(), path)


def _save_tflite(model, path, input_type=None, output_type=None):
    """The QDQ model lowered by the simulated tool, written with TFLite's schema; input_type /
    output_type: edges converted as a model-zoo export has them (QUANTIZE in, DEQUANTIZE out)."""
    import tempfile

    from stedgeai_sim.allocate import add_io_conversions
    from stedgeai_sim.onnx_import import import_onnx
    from tflite_writer import tflite_bytes
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "model.onnx")
        onnx.save(model, src)
        net = import_onnx(src)
    add_io_conversions(net, input_type, output_type)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(os.path.splitext(path)[0] + ".tflite", "wb") as f:
        f.write(tflite_bytes(net))


def ds_cnn(path):
    """Bundled as .tflite, int8 in and out."""
    _save_tflite(architectures.ds_cnn(), path)


def mobilenet_v2_u8(path):
    """The MobileNetV2 as a model-zoo .tflite: uint8 pixels in (QUANTIZE), float32 scores out (DEQUANTIZE)."""
    _save_tflite(architectures.mobilenet_v2(images=True), path, "uint8", "float32")


def digits_mlp(path):
    try:
        model, x_test, y_test = architectures.digits_mlp()
    except ImportError:
        print("digits_mlp: scikit-learn is not installed, keeping the bundled model", file=sys.stderr)
        return
    _save_onnx(model, path)
    np.savez_compressed(os.path.join(os.path.dirname(path), "test_data.npz"), x=x_test, y=y_test)


MODELS = {"kws_mlp": kws_mlp, "cifar_cnn": cifar_cnn, "big_mlp": big_mlp, "mobilenet_v2": mobilenet_v2,
          "ds_cnn": ds_cnn, "mobilenet_v2_u8": mobilenet_v2_u8, "tiny_yolo": tiny_yolo, "digits_mlp": digits_mlp,
          "fusion_mlp": fusion_mlp}
PREBUILT_FILES = ("network.c", "network.h", "network_c_info.json", "network_atonbuf.xSPI2.raw",
                  "network_generate_report.txt")


def prebuilt(dest):
    """A stedgeai output folder as users bring it, made by the simulated tool from tiny_dense."""
    import json
    import shutil
    import subprocess
    import tempfile
    root = os.path.dirname(HERE)
    with tempfile.TemporaryDirectory() as tmp:
        tiny_dense(os.path.join(tmp, "model.onnx"))
        shutil.copyfile(os.path.join(HERE, "cifar_cnn", "cifar_cnn.mpool"), os.path.join(tmp, "tiny.mpool"))
        with open(os.path.join(tmp, "neural_art.json"), "w") as f:
            json.dump({"Globals": {}, "Profiles": {"default": {"memory_pool": "./tiny.mpool", "options":
                       "--native-float --mvei --cache-maintenance --Ocache-opt --Os --optimization 3 "
                       "--all-buffers-info"}}}, f)
        env = dict(os.environ, SOURCE_DATE_EPOCH="1767225600",
                   PYTHONPATH=os.pathsep.join([os.path.join(root, "sim", "stedgeai"),
                                               os.path.join(root, "site_scons")]))
        env.pop("STEDGEAI_SIM_ROOT", None)
        subprocess.run([sys.executable, "-m", "stedgeai_sim", "generate", "-m", "model.onnx", "--target", "stm32n6",
                        "--st-neural-art", "default@neural_art.json", "-o", "out", "-w", "ws"],
                       cwd=tmp, env=env, check=True)
        os.makedirs(dest, exist_ok=True)
        for name in PREBUILT_FILES:
            shutil.copyfile(os.path.join(tmp, "out", name), os.path.join(dest, name))


def main(argv):
    out = argv[1] if len(argv) > 1 else HERE
    only = set(argv[2:])                     # optional: remake only these models
    for name, make in MODELS.items():
        if not only or name in only:
            make(os.path.join(out, name, "model.onnx"))
    if not only or "tiny_prebuilt" in only:
        prebuilt(os.path.join(out, "tiny_prebuilt"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
