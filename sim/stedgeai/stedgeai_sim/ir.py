"""The lowered network: int8 tensors and the layers (one kernel call each) between them."""
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Tensor:
    name: str
    shape: tuple                 # logical ONNX shape
    dtype: str = "int8"          # int8 | int32 | uint8 | float32
    scale: object = 1.0          # float, or per-channel np.ndarray for weights
    zero_point: int = 0
    data: np.ndarray | None = None   # constants only (already in memory order)
    # filled by the allocator
    pool: object = None
    offset: int = 0
    id: int = 0

    @property
    def is_param(self):
        return self.data is not None

    @property
    def itemsize(self):
        return {"int8": 1, "uint8": 1, "int32": 4, "float32": 4}[self.dtype]

    @property
    def count(self):
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def nbytes(self):
        return self.count * self.itemsize

    @property
    def mem_shape(self):
        """Memory layout: channel-last for 4-D activations (batch 1); constants as stored."""
        if self.is_param:
            return tuple(self.data.shape)
        if len(self.shape) == 4:
            _, c, h, w = self.shape
            return (h, w, c)
        return tuple(self.shape[1:]) if len(self.shape) > 1 else tuple(self.shape)

    @property
    def mem_axes(self):
        """Logical axes in memory order (outermost first)."""
        n = len(self.shape)
        return (0, 2, 3, 1) if n == 4 and not self.is_param else tuple(range(n))

    def strides(self, axes=None):
        """{logical axis: element stride}, in memory (default) or for the given axis order."""
        out, step = {}, 1
        for a in reversed(axes if axes is not None else self.mem_axes):
            out[a] = step
            step *= self.shape[a]
        return out

    @property
    def flat_strides(self):
        """Strides of the logical row-major order (what Reshape/Flatten preserve)."""
        return self.strides(tuple(range(len(self.shape))))


LABELS = {"conv2d": "Conv2D", "dense": "Dense", "maxpool": "MaxPool", "avgpool": "AvgPool", "gather": "Gather",
          "eltwise": "Eltwise", "lut": "Lut", "resize": "Resize", "softmax": "Softmax", "convert": "Convert"}


@dataclass
class Layer:
    kind: str                    # one of LABELS
    name: str                    # ONNX node name (first node of the fused group)
    inputs: list                 # activation Tensors
    output: Tensor
    params: list = field(default_factory=list)   # constant Tensors (weights, bias)
    attrs: dict = field(default_factory=dict)
    epoch: int = 0

    @property
    def label(self):
        return self.attrs.get("label") or LABELS[self.kind]


@dataclass
class Network:
    model_name: str
    inputs: list
    outputs: list
    layers: list
    n_params: int = 0

    @property
    def params(self):
        return [p for layer in self.layers for p in layer.params]

    @property
    def activations(self):
        seen, out = set(), []
        for t in self.inputs + [layer.output for layer in self.layers]:
            if t.name not in seen:
                seen.add(t.name)
                out.append(t)
        return out

    @property
    def macc(self):
        return sum(layer.attrs.get("macc", 0) for layer in self.layers)


def bad_scale(scale):
    """The first value of a quantisation scale that no code can be made of (not a finite number 0
    or more), else None: both importers refuse such a scale."""
    bad = scale[~(np.isfinite(scale) & (scale >= 0))]
    return float(bad.flat[0]) if bad.size else None
