"""The LL_ATON runtime library operations the simulated board's firmware carries out for the image
(its callbacks), as ll_aton_lib.c does them: the stream engines it programs, moved by the NPU
model's streng.py in the emulated memory. Facts from ll_aton_lib.h's signatures and
LL_LIB_TensorShape_TypeDef (LL_Buffer_InfoTypeDef, n6.nn_interface.BUFFER_INFO); the NPU model
counts no cycles for them.

Transpose (`ll_aton_lib_dma_transpose(input, input_axes_offsets, output, output_axes_offsets,
target_pos, perm_to_use, dma_in, dma_out)`, ll_aton_lib.c's LL_ATON_LIB_DMA_Transpose of a 3 or
4-D tensor of 8 to 32-bit elements): a raw reader over the input's bytes in order, and a raster
writer walking the input's axes, each step at the output's offset of the axis the element goes
to (target_pos): the last axis the pixels, the one before the lines, the first one or two the
frames in a frame loop; 32-bit elements move as pairs of 16-bit items. The same engines ST's
software judges in tests/test_npu_streng_st.py. The other library operations stop the run in one
line (firmware.py)."""
import struct

from n6.nn_interface import BUFFER_INFO
from npu_model.streng import StreamEngine, read_items, write_items
from unicorn.arm_const import UC_ARM_REG_SP

LL_ATON_INVALID_PARAM = -1          # ll_aton.h's return code for a form the library refuses


def _tensor(cpu, address):
    """The fields of an LL_LIB_TensorShape_TypeDef and its shape."""
    v = BUFFER_INFO.unpack(cpu.read(address, BUFFER_INFO.size))
    return v, struct.unpack(f"<{v['ndims']}I", cpu.read(v["shape"], 4 * v["ndims"]))


def transpose(cpu, input_info, _input_offsets, output_info, output_offsets):
    target_pos = struct.unpack("<I", cpu.read(cpu.uc.reg_read(UC_ARM_REG_SP), 4))[0]
    src, shape = _tensor(cpu, input_info)
    dst, _ = _tensor(cpu, output_info)
    rank = len(shape)
    if rank not in (3, 4) or src["nbits"] != dst["nbits"] or not 8 <= src["nbits"] <= 32:
        return LL_ATON_INVALID_PARAM
    nbytes = (src["nbits"] + 7) // 8
    item = 2 if nbytes == 4 else nbytes
    out_off = struct.unpack(f"<{rank}I", cpu.read(output_offsets, 4 * rank))
    step = [out_off[t] for t in cpu.read(target_pos, rank)]         # the output offset of each input axis
    first = src["addr_base"] + src["offset_start"]
    reader = StreamEngine.tensor("dma_in", False, first, 8 * item,
                                 items=(src["offset_end"] - src["offset_start"]) // item,
                                 limit=src["addr_base"] + src["offset_limit"] - 1 if src["offset_limit"] else None)
    loops = (shape[0], shape[1], step[0], step[1]) if rank == 4 else (1, shape[0], 0, step[0])
    writer = StreamEngine.tensor("dma_out", True, dst["addr_base"] + dst["offset_start"], 8 * item, raw=False,
                                 width=shape[-1], height=shape[-2], depth=nbytes // item, depth_offset=step[-1],
                                 line_offset=step[-2], frames=loops[0] * loops[1], frame_repeat=loops[1],
                                 frame_offset=loops[3], repeat_offset=loops[2])
    write_items(writer, read_items(reader, cpu.read), cpu.read, cpu.write)
    return 0


OPS = {"ll_aton_lib_dma_transpose": transpose}
