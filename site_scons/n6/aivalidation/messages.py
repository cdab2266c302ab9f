"""aiValidation message layer: the protobuf classes, the enums, and data classes for what the
host interprets (tensor descriptions, model info, operators), deploy-protocol.md §4.5–4.6."""
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np

from . import n6_aivalidation_pb2 as pb

PROTOCOL_VERSION = (pb.P_VERSION_MAJOR, pb.P_VERSION_MINOR)

# The schema's enums under the names the host code uses (one definition: the .proto).
IO_ONLY, PER_LAYER, PER_LAYER_WITH_DATA, PERF = (pb.P_RUN_MODE_IO_ONLY, pb.P_RUN_MODE_PER_LAYER,
                                                 pb.P_RUN_MODE_PER_LAYER_WITH_DATA, pb.P_RUN_MODE_PERF)
CONF_DEBUG, CONF_CONST_VALUE, CONF_DIRECT_WRITE, CONF_DIRECT_READ = (pb.P_RUN_CONF_DEBUG, pb.P_RUN_CONF_CONST_VALUE,
                                                                     pb.P_RUN_CONF_DIRECT_WRITE,
                                                                     pb.P_RUN_CONF_DIRECT_READ)
# ST's host "perf only" run: timing only, the inputs filled from one value, no output data back
PERF_ONLY = IO_ONLY | PERF | CONF_CONST_VALUE
CAP_OBSERVER, CAP_RELOC, CAP_READ_WRITE, CAP_RANDOM, CAP_FILTERING, CAP_SELF_TEST = (
    pb.CAP_OBSERVER, pb.CAP_RELOC, pb.CAP_READ_WRITE, pb.CAP_RANDOM, pb.CAP_FILTERING, pb.CAP_SELF_TEST)
TENSOR_INPUT, TENSOR_OUTPUT, TENSOR_INTERNAL, TENSOR_MEMPOOL = (pb.TENSOR_FLAG_INPUT, pb.TENSOR_FLAG_OUTPUT,
                                                                pb.TENSOR_FLAG_INTERNAL, pb.TENSOR_FLAG_MEMPOOL)
TENSOR_LAST, TENSOR_NO_DATA, TENSOR_IN_MEMPOOL = pb.TENSOR_FLAG_LAST, pb.TENSOR_FLAG_NO_DATA, pb.TENSOR_FLAG_IN_MEMPOOL
# operator flags, from bit OPERATOR_FLAG_POS of aiOperatorMsg.type
OP_INTERNAL, OP_LAST, OP_WITHOUT_TENSOR = (pb.OPERATOR_FLAG_INTERNAL, pb.OPERATOR_FLAG_LAST,
                                           pb.OPERATOR_FLAG_WITHOUT_TENSOR)
# epoch kinds in the low bits of an epoch operator's type
EPOCH_KINDS = {0: "HW", 1: "EXTRA", 2: "SW", 3: "HYBRID", 4: "EC"}
RT_ATONN, API_RELOC, TOOLS_GCC = pb.AI_RT_ATONN, pb.AI_RT_API_RELOC, pb.AI_GCC
DEVID_N6 = 0x486
COUNTER_32B, COUNTER_64B = pb.COUNTER_FMT_32B, pb.COUNTER_FMT_64B

STATE_NAMES = {v: k for k, v in pb.EnumState.items()}
ERROR_NAMES = {v: k for k, v in pb.EnumError.items()}

# tensor `format`: float<<24 | sign<<23 | type<<17 | bits<<7 | ((fbits + 64) & 0x7F)
_FMT_TYPE_FLOAT, _FMT_TYPE_INT, _FMT_TYPE_BOOL = pb.DATA_FMT_TYPE_FLOAT, pb.DATA_FMT_TYPE_INTEGER, pb.DATA_FMT_TYPE_BOOL
DTYPES = {"int8": (True, _FMT_TYPE_INT, 8), "uint8": (False, _FMT_TYPE_INT, 8), "int16": (True, _FMT_TYPE_INT, 16),
          "uint16": (False, _FMT_TYPE_INT, 16), "int32": (True, _FMT_TYPE_INT, 32),
          "uint32": (False, _FMT_TYPE_INT, 32), "float32": (True, _FMT_TYPE_FLOAT, 32),
          "bool": (False, _FMT_TYPE_BOOL, 8)}


def tensor_format(dtype: str, fbits: int = 0) -> int:
    sign, kind, bits = DTYPES[dtype]
    return sign << 23 | kind << 17 | bits << 7 | ((fbits + 64) & 0x7F)


def format_dtype(fmt: int) -> str | None:
    """numpy dtype name of a tensor format word (None for formats the host cannot map, e.g. FXP)."""
    key = (bool(fmt >> 23 & 1), fmt >> 17 & 0x3F, fmt >> 7 & 0x3FF)
    for name, value in DTYPES.items():
        if value == key:
            return name
    return None


@dataclass
class TensorDesc:
    name: str
    dtype: str
    shape: tuple[int, ...]
    scale: float = 0.0
    zero_point: int = 0
    addr: int = 0
    flags: int = 0
    format: int = 0

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @classmethod
    def from_pb(cls, m: pb.aiTensorDescMsg) -> Self:
        return cls(m.name, format_dtype(m.format) or f"format 0x{m.format:08X}", tuple(m.dims), m.scale,
                   m.zeropoint, m.addr, m.flags, m.format)

    def to_pb(self, m: pb.aiTensorDescMsg) -> pb.aiTensorDescMsg:
        m.name = self.name
        m.format = self.format or tensor_format(self.dtype)
        m.size = self.size
        m.n_dims = len(self.shape)      # shape format UND (0) in bits 31-24
        m.dims.extend(self.shape)
        m.scale = self.scale
        m.zeropoint = self.zero_point
        m.addr = self.addr
        m.flags = self.flags
        return m

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape), "scale": self.scale,
                "zero_point": self.zero_point, "addr": f"0x{self.addr:08X}"}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Self:
        return cls(d["name"], d["dtype"], tuple(d["shape"]), d["scale"], d["zero_point"], int(d.get("addr", "0"), 16))


@dataclass
class ModelInfo:
    name: str
    inputs: list[TensorDesc]
    outputs: list[TensorDesc]
    activations_size: int = 0
    params_size: int = 0
    runtime_version: tuple[int, ...] = ()
    runtime_desc: str = ""
    tool_version: tuple[int, ...] = ()
    rtid: int = 0
    n_nodes: int = 0
    compile_datetime: str = ""

    @classmethod
    def from_pb(cls, m: pb.aiModelInfoMsg) -> Self:
        def version(word: int) -> tuple[int, int, int]:
            return (word >> 24 & 0xFF, word >> 16 & 0xFF, word >> 8 & 0xFF)
        return cls(m.name, [TensorDesc.from_pb(t) for t in m.inputs], [TensorDesc.from_pb(t) for t in m.outputs],
                   sum(t.size for t in m.activations), sum(t.size for t in m.params), version(m.runtime_version),
                   m.runtime_desc, version(m.tool_version), m.rtid, m.n_nodes, m.compile_datetime)


@dataclass
class Operator:
    """One `aiOperatorMsg` of a run: an epoch block (PER_LAYER) or the final model operator,
    with the `s:` log strings the board sent before it."""
    name: str
    type: int
    id: int
    duration_ms: float
    counter_type: int
    counters: list[int]
    logs: list[str] = field(default_factory=list)
    # an epoch's buffers: (TensorDesc, bytes or None: no data)
    tensors: list[tuple[TensorDesc, bytes | None]] = field(default_factory=list)

    @classmethod
    def from_pb(cls, m: pb.aiOperatorMsg, logs: Iterable[str] = ()) -> Self:
        """An epoch operator comes without a name (ST's firmware sends ""): it is named as ST's host
        names it from its id, EpochBlock_<epoch>[ -> <last epoch>]."""
        name = m.name
        if not name and m.type >> 24 & OP_INTERNAL:
            first, last = m.id & 0xFFFF, m.id >> 16
            name = f"EpochBlock_{first}" + (f" -> {last}" if last not in (first, 0) and not last & 0x8000 else "")
        return cls(name, m.type, m.id, m.duration, m.counter_type, list(m.counters), list(logs))

    @property
    def is_epoch(self) -> bool:
        return bool(self.type >> 24 & OP_INTERNAL)

    @property
    def kind(self) -> str:
        return EPOCH_KINDS.get(self.type & 0xF, str(self.type & 0xF))

    @property
    def epoch_range(self) -> tuple[int, int]:
        """(first, last) epoch number of an epoch operator (id = last << 16 | first)."""
        return self.id & 0xFFFF, self.id >> 16

    @property
    def counter_values(self) -> list[int]:
        """Counters as integers: pairs (lo, hi) joined for the 64-bit format."""
        if self.counter_type >> 16 == COUNTER_64B:
            c = self.counters
            return [c[i] | c[i + 1] << 32 for i in range(0, len(c) - 1, 2)]
        return list(self.counters)
