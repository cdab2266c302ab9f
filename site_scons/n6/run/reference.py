"""The reference `scons validate` judges the board by: the source model run by its own framework
(LiteRT for a .tflite, onnxruntime for an .onnx) on the inputs the board took, as ST's `stedgeai
validate` runs the original model; or, for a prebuilt folder of the simulated tool whose epochs
all run on the CPU, the host build of its generated C (host_reference). Inputs go from the
board's type and grid to the source model's, outputs from the source model's to the board's, and
between the board's channel-last buffers and a channel-first source."""
import contextlib
import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

import numpy as np
import numpy.typing as npt

from ..aivalidation.messages import ModelInfo, TensorDesc
from ..errors import N6Error
from .arrays import named_arrays
from ..models import ModelSpec

Grid = tuple[float, int]           # (scale, zero point) of a quantised tensor
Inputs = Sequence[Sequence[bytes]]   # per run, each board input's bytes

# Epochs of a generated network that only the NPU runs: hardware, hybrid, epoch-controller blobs
NPU_EPOCH = re.compile(r"EpochBlock_Flags_(?:pure_hw|hybrid|blob)\b")
SOURCE_FIX = 'name the source model in model.json: "source": "model.tflite" (or .onnx), or reference data: ' \
             '"reference_data": "data.npz"'


@dataclass
class Reference:
    """The reference outputs of some runs, one array (runs, n) per board output on its grid."""
    outputs: list[np.ndarray]
    lsb: list[float]         # per output, the size of one LSB in the board's values (output_lsb)
    name: str                # what computed them, for the report ("LiteRT 2.3.0 on ...")


def npu_epochs(network_c: str) -> int:
    """How many epochs of a generated network.c only the NPU can run."""
    with open(network_c, encoding="utf-8", errors="replace") as f:
        return len(NPU_EPOCH.findall(f.read()))


def st_npu_epochs(c_dir: str) -> int:
    """NPU epochs of the network a real ST Edge AI Core generated in `c_dir` (its `.c` files;
    the simulated tool's count 0): on a simulated board the NPU model computes them with ST's
    fixed-point arithmetic as modelled, which is not the source framework's."""
    from ..stedgeai_install import by_simulated_tool
    count = 0
    for name in sorted(os.listdir(c_dir)):
        if name.endswith(".c"):
            with open(os.path.join(c_dir, name), encoding="utf-8", errors="replace") as f:
                text = f.read()
            count += 0 if by_simulated_tool(text) else len(NPU_EPOCH.findall(text))
    return count


def source_of(spec: ModelSpec) -> str:
    """The source model validate runs for `spec` (n6.models.ModelSpec), or "" for the host build
    of its generated C, which is faithful only when every epoch runs on the CPU (the simulated
    tool's outputs): a prebuilt network with NPU epochs and neither `source` nor `reference_data`
    has no reference."""
    if spec.kind == "source":
        return spec.model_file   # type: ignore[return-value]  # a source folder has its model file
    if spec.source or spec.reference_data:
        return spec.source or ""
    n = npu_epochs(spec.network_c)
    if n:
        raise N6Error(os.path.join(spec.path, "model.json"),
                      f"no reference to validate {os.path.basename(spec.network_c)} against: "  # type: ignore[type-var]  # prebuilt
                      f"{n} of its epochs run "
                      "on the NPU, which no host build reproduces", SOURCE_FIX)
    return ""


DATA_FIX = "save m_inputs_1.. (as the board takes them) and m_outputs_1.. (expected) with numpy.savez"


def read_data(path: str, model: ModelInfo) -> tuple[Inputs, list[np.ndarray] | None]:
    """(inputs, expected) of a reference-data .npz (model.json "reference_data", like ST's
    validation inputs and outputs): `m_inputs_<k>` per board input, samples first, in its type;
    `m_outputs_<k>` per output, in its type or as float values put on its grid; `expected` None
    when the file gives no outputs (the source model then computes them)."""
    arrays = named_arrays(path, "reference data", DATA_FIX)
    ins = [arrays.get(f"m_inputs_{k}") for k in range(1, len(model.inputs) + 1)]
    outs = [arrays.get(f"m_outputs_{k}") for k in range(1, len(model.outputs) + 1)]
    if any(a is None for a in ins) or (any(a is None for a in outs) and any(a is not None for a in outs)):
        raise N6Error(path, f"holds {', '.join(sorted(arrays)) or 'no array'}: not one m_inputs_<k> per input "
                      f"({len(model.inputs)}) and none or one m_outputs_<k> per output ({len(model.outputs)})",
                      DATA_FIX)
    runs = len(ins[0])
    for k, (a, d) in enumerate(zip(ins + outs, model.inputs + model.outputs)):
        dtype_ok = a is None or a.dtype == np.dtype(d.dtype) or (k >= len(ins) and a.dtype.kind == "f")
        if a is not None and (a.size != runs * d.size or not dtype_ok):
            raise N6Error(path, f"'{d.name}' takes {runs} x {d.size} {d.dtype} values, the data holds {a.dtype} "
                          f"{list(a.shape)}", DATA_FIX)
    inputs = [[a[r].tobytes() for a in ins] for r in range(runs)]
    if outs[0] is None:
        return inputs, None
    return inputs, [convert(a.reshape(runs, -1), a.dtype, board_grid(d) if a.dtype == np.dtype(d.dtype) else None,
                            d.dtype, board_grid(d)) for a, d in zip(outs, model.outputs)]


def run_source(model_file: str, model: ModelInfo, inputs: Inputs) -> Reference:
    """Reference of the source model on `inputs` (per run, the raw buffer of each board input);
    `model`: the board's description of the image's inputs and outputs."""
    if model_file.endswith(".tflite"):
        return tflite_reference(model_file, model, inputs)
    grids = io_quantization(model_file)
    return Reference(onnx_reference(model_file, model, inputs, grids), output_lsb(grids[1], model),
                     f"onnxruntime {version('onnxruntime')} on {model_file}")


def source_lsb(model_file: str, model: ModelInfo) -> list[float]:
    """Per board output, the size of one LSB as the source model's grids give it (output_lsb),
    without running the model."""
    grids = tflite_grids(model_file) if model_file.endswith(".tflite") else io_quantization(model_file)
    return output_lsb(grids[1], model)


def board_grid(desc: TensorDesc) -> Grid | None:
    """(scale, zero point) of a board tensor, None for a float or unscaled one."""
    return (float(desc.scale), int(desc.zero_point)) if desc.scale and np.dtype(desc.dtype).kind != "f" else None


def same_grid(a: Grid | None, b: Grid | None) -> bool:
    """Two (scale, zero point) agree as the single-precision numbers the generated code holds
    (c_info.json and network.c print 9 digits of the scale a .tflite stores in full)."""
    return a == b or (a is not None and b is not None and np.float32(a[0]) == np.float32(b[0]) and a[1] == b[1])


def convert(x: npt.ArrayLike, dtype: npt.DTypeLike, grid: Grid | None, to_dtype: npt.DTypeLike,
            to_grid: Grid | None) -> np.ndarray:
    """Values of one type and grid in another: unchanged where the two agree, else through their
    real values, quantised as the deployed model's conversions do."""
    to = np.dtype(to_dtype)
    if np.dtype(dtype) == to and (to.kind == "f" or same_grid(grid, to_grid)):
        return np.asarray(x).astype(to)
    real = dequantize_as_deployed(x, *grid) if grid else np.asarray(x, np.float32)
    return real.astype(to) if to.kind == "f" else quantize_as_deployed(real, *(to_grid or (1.0, 0)), to)


def fit(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """`x` in `shape`: the same order when the shapes agree but for 1s, else the 4-D transposition
    between channel-last and channel-first that makes them agree (ST's flow keeps the board's
    buffers channel-last by default, an ONNX model is channel-first)."""
    shape = tuple(int(d) for d in shape)
    if int(np.prod(shape)) != x.size:
        raise ValueError(f"{x.size} values for shape {list(shape)}")

    def sq(s: Sequence[int]) -> tuple[int, ...]:
        return tuple(d for d in s if d != 1)
    if sq(x.shape) == sq(shape) or len(shape) != 4:
        return x.reshape(shape)
    n, a, b, c = shape
    if sq(x.shape) == sq((n, b, c, a)):          # channel-last values, channel-first shape
        return x.reshape(n, b, c, a).transpose(0, 3, 1, 2)
    if sq(x.shape) == sq((n, c, a, b)):          # channel-first values, channel-last shape
        return x.reshape(n, c, a, b).transpose(0, 2, 3, 1)
    return x.reshape(shape)


def tflite_grids(model_file: str) -> tuple[list[Grid | None], list[Grid | None]]:
    """(inputs, outputs) of a .tflite: the (scale, zero point) of each tensor, or for a float one
    the grid of the QUANTIZE that takes it / the DEQUANTIZE that gives it (None without); read
    without the delegate, which hides the operators it takes."""
    interp = load_tflite(model_file, delegate=False)
    details = {d["index"]: d for d in interp.get_tensor_details()}
    ops = interp._get_ops_details()      # noqa: SLF001 (the only way LiteRT lists its operators)

    def grid(index: int, op_name: str, side: str) -> Grid | None:
        scale, zp = details[index]["quantization"]
        if scale:
            return float(scale), int(zp)
        for op in ops:
            if op["op_name"] == op_name and index in op[side]:
                scale, zp = details[(op["outputs"] if side == "inputs" else op["inputs"])[0]]["quantization"]
                return (float(scale), int(zp)) if scale else None
        return None
    return ([grid(d["index"], "QUANTIZE", "inputs") for d in interp.get_input_details()],
            [grid(d["index"], "DEQUANTIZE", "outputs") for d in interp.get_output_details()])


@contextlib.contextmanager
def _stderr_closed() -> Iterator[None]:
    """File descriptor 2 to /dev/null for the duration (C++ code writes there, not to sys.stderr)."""
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def load_tflite(model_file: str, delegate: bool = True) -> Any:
    """The LiteRT interpreter of a .tflite as ST's checker makes it by default (op resolver
    AUTO: the XNNPACK delegate where it applies); `delegate` False: builtin kernels only. The two
    round some int8 operators differently (measured on ds_cnn: up to 3 LSB at the output)."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        raise N6Error(model_file, "LiteRT (ai-edge-litert) is not installed", "install requirements.txt (./n6 setup)") \
            from None
    try:
        interp = Interpreter(model_path=model_file, experimental_op_resolver_type=OpResolverType.AUTO if delegate
                             else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        with _stderr_closed():     # LiteRT's C++ says "INFO: Created ... delegate" there; errors come as exceptions
            interp.allocate_tensors()
    except (ValueError, RuntimeError) as e:
        why = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise N6Error(model_file, f"LiteRT cannot load the model: {why}",
                      "validate needs a model LiteRT runs: correct the model as LiteRT says") from None
    return interp


def check_io(model_file: str, model: ModelInfo, in_shapes: Sequence[Sequence[int]],
             out_shapes: Sequence[Sequence[int]]) -> None:
    """The source model takes and gives as many tensors, of as many values, as the image."""
    for side, theirs, shapes in (("inputs", model.inputs, in_shapes), ("outputs", model.outputs, out_shapes)):
        sizes = [int(np.prod(shape)) for shape in shapes]
        if [d.size for d in theirs] != sizes:
            raise N6Error(model_file, f"its {side} ({', '.join(map(str, sizes))} values) are not the image's "
                          f"({', '.join(str(d.size) for d in theirs)})", "give the model the image was generated from")


def tflite_reference(model_file: str, model: ModelInfo, inputs: Inputs) -> Reference:
    """LiteRT on the board's inputs: each input converted from the board's type and grid to the
    source model's, each output from the source model's to the board's; a float output's LSB is
    the grid of the DEQUANTIZE that gives it."""
    interp = load_tflite(model_file)
    ins, outs = interp.get_input_details(), interp.get_output_details()
    check_io(model_file, model, [d["shape"] for d in ins], [d["shape"] for d in outs])
    grids_in, grids_out = tflite_grids(model_file)
    got: list[list[np.ndarray]] = [[] for _ in model.outputs]
    for bufs in inputs:
        for meta, desc, raw, grid in zip(ins, model.inputs, bufs, grids_in):
            x = np.frombuffer(raw, desc.dtype).reshape(desc.shape)
            own = grid if np.dtype(meta["dtype"]).kind != "f" else None
            interp.set_tensor(meta["index"], fit(convert(x, desc.dtype, board_grid(desc), meta["dtype"], own),
                                                 meta["shape"]))
        interp.invoke()
        for j, (meta, desc, grid) in enumerate(zip(outs, model.outputs, grids_out)):
            y = interp.get_tensor(meta["index"])
            own = grid if np.dtype(meta["dtype"]).kind != "f" else None
            got[j].append(fit(convert(y, meta["dtype"], own, desc.dtype, board_grid(desc)), desc.shape).reshape(-1))
    return Reference([np.stack(o) for o in got], output_lsb(grids_out, model),
                     f"LiteRT {version('ai-edge-litert')} on {model_file}")


def io_quantization(model_file: str) -> tuple[list[Grid | None], list[Grid | None]]:
    """(inputs, outputs) of a QDQ ONNX model: per graph input the (scale, zero point) of the
    QuantizeLinear that takes it, per graph output those of the DequantizeLinear that gives it;
    None where there is none or it is per-axis. A model built with float inputs/outputs
    (`input_data_type`/`output_data_type` float32) computes on these int8 grids: its generated
    code quantises the float inputs and dequantises the int8 outputs with them."""
    import onnx
    from onnx import numpy_helper
    graph = onnx.load(model_file).graph
    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute:
            consts[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)

    def grid(node: onnx.NodeProto) -> Grid | None:
        scale = consts.get(node.input[1])
        zp = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else np.int8(0)
        if scale is None or np.size(scale) != 1 or zp is None or np.size(zp) != 1:
            return None
        return float(np.float32(scale.reshape(-1)[0])), int(zp.reshape(-1)[0])

    first = {n.input[0]: n for n in graph.node if n.op_type == "QuantizeLinear"}
    last = {n.output[0]: n for n in graph.node if n.op_type == "DequantizeLinear"}
    return ([grid(first[i.name]) if i.name in first else None for i in graph.input if i.name not in consts],
            [grid(last[o.name]) if o.name in last else None for o in graph.output])


def quantize_as_deployed(x: npt.ArrayLike, scale: float, zero_point: int, dtype: npt.DTypeLike = np.int8) -> np.ndarray:
    """Float values to int8 (or `dtype`) the way the generated input conversion does (the
    runtime's nr_quantize_f32): x / scale in single precision, nearest integer with ties to even,
    plus the zero point, saturated to the type's range (a quotient beyond the int32 range
    saturates first)."""
    with np.errstate(over="ignore"):
        v = np.asarray(x, np.float32) / np.float32(scale)
    q = np.rint(np.clip(v, -2.0 ** 31, 2.0 ** 31 - 256)).astype(np.int64) + zero_point
    info = np.iinfo(dtype)
    return np.clip(q, info.min, info.max).astype(dtype)


def dequantize_as_deployed(q: npt.ArrayLike, scale: float, zero_point: int) -> np.ndarray:
    """int8 values to float the way the generated output conversion does (nr_dequantize_s8):
    (float)(q - zero_point) * scale in single precision."""
    return (np.asarray(q, np.int32) - zero_point).astype(np.float32) * np.float32(scale)


def float_grid(desc: TensorDesc, grids: Sequence[Grid | None], k: int) -> Grid | None:
    """The int8 grid behind tensor `k` when it is a float tensor of the board (None otherwise)."""
    return grids[k] if np.dtype(desc.dtype).kind == "f" and k < len(grids) else None


def output_lsb(grids: Sequence[Grid | None], model: ModelInfo) -> list[float]:
    """Per output, the size of one LSB in the board's output values: 1 for an integer output,
    the scale of the int8 grid behind a float output (`grids`: io_quantization's outputs; 1
    when the model gives none)."""
    return [(float_grid(d, grids, j) or (1.0,))[0] for j, d in enumerate(model.outputs)]


def _ort_reason(error: Exception) -> str:
    """onnxruntime's message without its status code, source line and C++ signature."""
    text = " ".join(str(error).split())
    m = re.match(r"\[ONNXRuntimeError\] : .*?\S+:\d+ .*?\) (?=[A-Z])", text)
    return text[m.end():] if m else text


def onnx_reference(model_file: str, model: ModelInfo, inputs: Inputs,
                   grids: tuple[list[Grid | None], list[Grid | None]]) -> list[np.ndarray]:
    """Evaluate the ONNX model with onnxruntime on the board's inputs; returns the outputs
    quantised like the board's outputs, one array (runs, n) per output. A float input or output
    goes through the model's int8 grid (`grids`: io_quantization's) as the deployed model's conversions do: the input is
    quantised (then given to onnxruntime dequantised), the output quantised then dequantised."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise N6Error(model_file, "onnxruntime is not installed", "install requirements.txt (./n6 setup)") from None
    try:
        sess = ort.InferenceSession(model_file, providers=["CPUExecutionProvider"])
    except Exception as e:      # onnxruntime's own exception types, one per failure kind
        raise N6Error(model_file, f"onnxruntime {version('onnxruntime')} cannot load the model: {_ort_reason(e)}",
                      "export the model with an opset and IR version onnxruntime supports") from None
    feeds = sess.get_inputs()

    def shape(meta: Any) -> list[int]:
        return [d if isinstance(d, int) else 1 for d in meta.shape]    # a named (batch) dimension: 1
    check_io(model_file, model, [shape(m) for m in feeds], [shape(m) for m in sess.get_outputs()])
    grids_in, grids_out = grids
    outs: list[list[np.ndarray]] = [[] for _ in model.outputs]
    for bufs in inputs:
        feed = {}
        for k, (meta, desc, raw) in enumerate(zip(feeds, model.inputs, bufs)):
            x = np.frombuffer(raw, desc.dtype).reshape(desc.shape)
            grid = float_grid(desc, grids_in, k)
            if grid:
                x = dequantize_as_deployed(quantize_as_deployed(x, *grid), *grid)
            x = convert(x, desc.dtype, board_grid(desc), np.float32, None)
            feed[meta.name] = np.ascontiguousarray(fit(x, shape(meta)), dtype=np.float32)
        for j, (y, desc) in enumerate(zip(sess.run(None, feed), model.outputs)):
            y = fit(np.asarray(y), desc.shape)
            grid = float_grid(desc, grids_out, j)
            if grid:
                y = dequantize_as_deployed(quantize_as_deployed(y, *grid), *grid)
            outs[j].append(convert(y.reshape(-1), np.float32, None, desc.dtype, board_grid(desc)))
    return [np.stack(o) for o in outs]


