"""The LL_ATON runtime library operations the simulated board's firmware carries out for the image
(its callbacks): their results, computed here from the operation's arguments in the emulated
memory. Facts from ll_aton_lib.h's signatures and LL_LIB_TensorShape_TypeDef (LL_Buffer_InfoTypeDef,
n6.nn_interface.BUFFER_INFO); the hardware's own way (stream engines the library programs) is not
timed: the NPU model counts no cycles for them.

Transpose (`ll_aton_lib_dma_transpose(input, input_axes_offsets, output, output_axes_offsets,
target_pos, perm_to_use, dma_in, dma_out)`): the element at index (i0, .., i{r-1}) of the input's
shape, at byte sum(i_k * input_axes_offsets[k]) from the input's start, goes to byte
sum(i_k * output_axes_offsets[target_pos[k]]) from the output's start (the offsets ll_aton_lib.c
gives the output stream engine's frame loops, lines and pixels). Judged by numpy.transpose on
synthetic tensors (tests/test_npu_board.py) and by what follows it in blazeface: its epochs after
the transposes against LiteRT (bench/npu_image.py). The other library operations stop the run in
one line (firmware.py)."""
import struct

import numpy as np
from n6.nn_interface import BUFFER_INFO
from unicorn.arm_const import UC_ARM_REG_SP


def _tensor(cpu, address):
    """(first byte, shape, bytes per element) of an LL_LIB_TensorShape_TypeDef."""
    v = BUFFER_INFO.unpack(cpu.read(address, BUFFER_INFO.size))
    shape = struct.unpack(f"<{v['ndims']}I", cpu.read(v["shape"], 4 * v["ndims"]))
    return v["addr_base"] + v["offset_start"], shape, (v["nbits"] + 7) // 8


def transpose(cpu, input_info, input_offsets, output_info, output_offsets):
    target_pos = struct.unpack("<I", cpu.read(cpu.uc.reg_read(UC_ARM_REG_SP), 4))[0]
    src, shape, nbytes = _tensor(cpu, input_info)
    dst, _, _ = _tensor(cpu, output_info)
    rank = len(shape)
    in_off = struct.unpack(f"<{rank}I", cpu.read(input_offsets, 4 * rank))
    out_off = struct.unpack(f"<{rank}I", cpu.read(output_offsets, 4 * rank))
    targets = cpu.read(target_pos, rank)
    index = np.indices(shape).reshape(rank, -1).astype(np.int64)
    src_at = sum(index[k] * in_off[k] for k in range(rank))
    dst_at = sum(index[k] * out_off[targets[k]] for k in range(rank))
    lo, hi = int(src_at.min()), int(src_at.max()) + nbytes
    data = np.frombuffer(cpu.read(src + lo, hi - lo), dtype=np.uint8)
    out_lo, out_hi = int(dst_at.min()), int(dst_at.max()) + nbytes
    out = np.frombuffer(cpu.read(dst + out_lo, out_hi - out_lo), dtype=np.uint8).copy()
    for b in range(nbytes):
        out[dst_at - out_lo + b] = data[src_at - lo + b]
    cpu.write(dst + out_lo, out.tobytes())
    return 0


OPS = {"ll_aton_lib_dma_transpose": transpose}
