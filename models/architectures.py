"""Reference architectures as float ONNX graphs with seeded weights, quantised to int8 QDQ with
models/qdq_quantize.py: a MobileNetV2-style classifier, a DS-CNN keyword spotter, a small
YOLO-style detector, and a digits classifier trained with scikit-learn (optional dependency:
`pip install scikit-learn`, needed only to remake that model)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from qdq_quantize import TFLITE_FIXED, quantize_qdq

F32 = np.float32


class FloatGraph:
    """A float graph under construction; tracks shapes and the values to fuse at quantisation."""

    def __init__(self, name, in_shape, seed):
        self.name, self.rng, self.in_shape = name, np.random.default_rng(seed), list(in_shape)
        self.nodes, self.inits, self.fuse, self.shapes, self.n = [], [], [], {"x": tuple(in_shape)}, 0

    def _id(self, prefix):
        self.n += 1
        return f"{prefix}_{self.n}"

    def const(self, prefix, value):
        name = self._id(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type, inputs, shape, **attrs):
        out = self._id(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        self.shapes[out] = tuple(shape)
        return out

    def conv(self, x, c_out, k=3, stride=1, group=1, dilation=1, pads=None, bn=True, act="relu6"):
        n, c_in, h, w = self.shapes[x]
        kh, kw = (k, k) if isinstance(k, int) else k
        if pads is None:
            pads = [dilation * (kh - 1) // 2, dilation * (kw - 1) // 2] * 2
        oh = (h + pads[0] + pads[2] - dilation * (kh - 1) - 1) // stride + 1
        ow = (w + pads[1] + pads[3] - dilation * (kw - 1) - 1) // stride + 1
        fan_in = c_in // group * kh * kw
        wt = (self.rng.standard_normal((c_out, c_in // group, kh, kw)) * np.sqrt(2.0 / fan_in)).astype(F32)
        b = (self.rng.standard_normal(c_out) * 0.05).astype(F32)
        if bn:      # folded into the float weights before quantisation, as quantisers do
            gamma, beta, mean, var = (self.rng.uniform(0.6, 1.4, c_out), self.rng.normal(0, 0.1, c_out),
                                      self.rng.normal(0, 0.1, c_out), self.rng.uniform(0.6, 1.4, c_out))
            k = gamma / np.sqrt(var + 1e-5)
            wt, b = (wt * k[:, None, None, None]).astype(F32), ((b - mean) * k + beta).astype(F32)
        y = self.op("Conv", [x, self.const("w", wt), self.const("b", b)], (n, c_out, oh, ow), kernel_shape=[kh, kw],
                    strides=[stride, stride], pads=list(pads), group=group, dilations=[dilation, dilation])
        return self.activation(y, act)

    def activation(self, y, act):
        if act in ("relu", "relu6"):
            self.fuse.append(y)
            if act == "relu":
                return self.op("Relu", [y], self.shapes[y])
            return self.op("Clip", [y, self.const("lo", F32(0)), self.const("hi", F32(6))], self.shapes[y])
        if act == "leaky":
            return self.op("LeakyRelu", [y], self.shapes[y], alpha=0.1)
        return y

    def add(self, a, b):
        return self.op("Add", [a, b], self.shapes[a])

    def maxpool(self, x):
        n, c, h, w = self.shapes[x]
        return self.op("MaxPool", [x], (n, c, h // 2, w // 2), kernel_shape=[2, 2], strides=[2, 2])

    def upsample(self, x):
        n, c, h, w = self.shapes[x]
        return self.op("Resize", [x, "", self.const("scales", np.array([1, 1, 2, 2], F32))], (n, c, 2 * h, 2 * w),
                       mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")

    def concat(self, a, b):
        n, c1, h, w = self.shapes[a]
        return self.op("Concat", [a, b], (n, c1 + self.shapes[b][1], h, w), axis=1)

    def classifier(self, x, classes):
        n, c = self.shapes[x][:2]
        g = self.op("GlobalAveragePool", [x], (n, c, 1, 1))
        f = self.op("Flatten", [g], (n, c), axis=1)
        return self.gemm(f, classes, act=None, softmax=True)

    def gemm(self, x, n_out, act=None, softmax=False, weights=None):
        n, k = self.shapes[x]
        wt, b = weights if weights is not None else (
            (self.rng.standard_normal((n_out, k)) * np.sqrt(2.0 / k)).astype(F32), np.zeros(n_out, F32))
        y = self.op("Gemm", [x, self.const("w", wt.astype(F32)), self.const("b", b.astype(F32))], (n, n_out), transB=1)
        y = self.activation(y, act)
        return self.op("Softmax", [y], (n, n_out), axis=-1) if softmax else y

    def model(self, out):
        assert self.nodes[-1].output[0] == out, "the output must be the last value"
        self.nodes[-1].output[0] = "output"
        graph = helper.make_graph(self.nodes, self.name,
                                  [helper.make_tensor_value_info("input", TensorProto.FLOAT, self.in_shape)],
                                  [helper.make_tensor_value_info("output", TensorProto.FLOAT, self.shapes[out])],
                                  self.inits)
        for n in graph.node:
            for i, name in enumerate(n.input):
                if name == "x":
                    n.input[i] = "input"
        model = helper.make_model(graph, producer_name="n6-models", opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 9
        onnx.checker.check_model(model)
        return model

    def quantised(self, out, samples, per_channel=True, fixed=None):
        return quantize_qdq(self.model(out), samples, per_channel, self.fuse, fixed)


def _samples(seed, shape, n=16):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(F32) for _ in range(n)]


def mobilenet_v2(images=False):
    """32x32 RGB → 10 classes: stem, inverted residual blocks (1x1 expand, 3x3 depthwise,
    1x1 linear projection, residual Add), ReLU6, BatchNormalization folded into the convs.
    images: calibrated on images in [0, 1] (an input grid of 1/255 from 0, as uint8 pixels have)
    and quantised with TFLite's fixed output ranges, for a .tflite export."""
    g = FloatGraph("mobilenet_v2", [1, 3, 32, 32], seed=21)
    x = g.conv("x", 16, stride=2)
    for c_out, stride, expand in ((16, 1, 1), (24, 2, 4), (24, 1, 4), (32, 2, 4), (32, 1, 4)):
        c_in = g.shapes[x][1]
        h = g.conv(x, c_in * expand, k=1) if expand > 1 else x
        h = g.conv(h, c_in * expand, stride=stride, group=c_in * expand)
        h = g.conv(h, c_out, k=1, act=None)
        x = g.add(x, h) if stride == 1 and c_in == c_out else h
    x = g.conv(x, 64, k=1)
    if images:
        rng = np.random.default_rng(121)
        return g.quantised(g.classifier(x, 10), [rng.uniform(0, 1, g.in_shape).astype(F32) for _ in range(16)],
                           fixed=TFLITE_FIXED)
    return g.quantised(g.classifier(x, 10), _samples(121, g.in_shape))


def ds_cnn():
    """Keyword spotting on 49x10 MFCC → 12 classes: 10x4 conv (asymmetric SAME padding), four
    depthwise-separable blocks, average pool, dense, softmax. Bundled as .tflite, so quantised with
    the output ranges TFLite's int8 kernels require."""
    g = FloatGraph("ds_cnn", [1, 1, 49, 10], seed=22)
    x = g.conv("x", 32, k=(10, 4), stride=2, pads=[4, 1, 5, 1], act="relu")
    for _ in range(4):
        x = g.conv(x, 32, group=32, act="relu")
        x = g.conv(x, 32, k=1, act="relu")
    return g.quantised(g.classifier(x, 12), _samples(122, g.in_shape), fixed=TFLITE_FIXED)


def tiny_yolo():
    """64x64 RGB → an 8x8 grid of 3 anchors x (4 box + 1 objectness + 2 classes): LeakyRelu
    backbone, upsampling (Resize) and Concat of a skip route, Sigmoid head."""
    g = FloatGraph("tiny_yolo", [1, 3, 64, 64], seed=23)
    x = g.conv("x", 8, stride=2, act="leaky")
    x = g.maxpool(g.conv(x, 16, act="leaky"))
    route = g.conv(x, 32, act="leaky")                    # 16x16 → pooled below
    x = g.maxpool(route)
    x = g.conv(g.maxpool(g.conv(x, 48, act="leaky")), 64, act="leaky")   # 4x4
    x = g.upsample(g.conv(x, 32, k=1, act="leaky"))       # 8x8
    skip = g.maxpool(route)                               # 8x8
    x = g.conv(g.concat(x, skip), 32, act="leaky")
    head = g.conv(x, 21, k=1, bn=False, act=None)
    y = g.op("Sigmoid", [head], g.shapes[head])
    return g.quantised(y, _samples(123, g.in_shape))


def digits_mlp():
    """scikit-learn's 8x8 digits: an MLP trained here, quantised int8; returns (model, test inputs,
    test labels)."""
    import warnings

    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(F32)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=300, random_state=0, stratify=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)    # a fixed budget of epochs is enough here
        clf = MLPClassifier(hidden_layer_sizes=(48,), max_iter=400, random_state=0).fit(x_train, y_train)
    g = FloatGraph("digits_mlp", [1, 64], seed=24)
    h = g.gemm("x", 48, act="relu", weights=(clf.coefs_[0].T, clf.intercepts_[0]))
    out = g.gemm(h, 10, softmax=True, weights=(clf.coefs_[1].T, clf.intercepts_[1]))
    model = g.quantised(out, [s.reshape(1, 64) for s in x_train[:200]])
    return model, x_test, y_test.astype(np.int64)
