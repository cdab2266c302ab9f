"""The NPU model mapped into the simulated board's CPU: the emulated code's loads and stores reach
its registers at both aliases (byte stores merged into the register), a copy chain it closes moves
the board's bytes, and an unmodelled one stops the call with the model's one line (NpuStopped),
not a fault, or in control mode writes zeros; a compute chain (convolution, arithmetic) computes
the bytes an independent numpy computation gives."""
import subprocess

import numpy as np
import pytest

from n6board.emulator import Cpu, NpuStopped, Region
from npu_model.npu import Npu

from aton_fields import encode

ACCESS = """
.syntax unified
.thumb
.global store, load, store_byte
store:      str r1, [r0]
            bx lr
load:       ldr r0, [r0]
            bx lr
store_byte: strb r1, [r0]
            bx lr
"""
CODE = 0x1000_0000
STORE, LOAD, STORE_BYTE = CODE, CODE + 4, CODE + 8
SECURE, NONSECURE = 0x580E_0000, 0x480E_0000
STRENG = lambda i: 0x5000 + 0x1000 * i


@pytest.fixture(scope="module")
def code(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("npu")
    (tmp / "a.s").write_text(ACCESS)
    subprocess.run(["arm-none-eabi-as", "-march=armv8.1-m.main", "-mthumb", "a.s", "-o", "a.o"], cwd=tmp, check=True)
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "a.o", "a.bin"], cwd=tmp, check=True)
    return (tmp / "a.bin").read_bytes()


def board(code, mode):
    npu = Npu(mode=mode)
    cpu = Cpu([Region("code", CODE, 0x1000), Region("firmware", 0x3400_0000, 0x6_0000),
               Region("AXISRAM2", 0x3410_0000, 0x1000)], 0x3400_0000, [], npu=npu)
    npu.write_memory, npu.read_memory = cpu.write, cpu.read
    cpu.write(CODE, code)
    npu.epoch_label = lambda: "epoch 5"
    return cpu, npu


def program_copy(cpu, read_bits=8):
    """STRENG0 reads 8 bytes of AXISRAM2 as `read_bits`-bit items, STRENG1 writes them 0x100
    further as 8-bit items (raw, one frame; its EVENT enables its frame-end interrupt, as ST's
    runtime does for writers): a copy, or (16-bit reads) half the items the writer waits for, a
    chain the model does not end."""
    sizes = {8: 8 << 16, 16: 8 << 16 | 8 << 20}
    for i, (address, direction, bits) in enumerate(((0x3410_0000, 0, read_bits), (0x3410_0100, 1 << 3, 8))):
        cpu.call(STORE, SECURE + STRENG(i) + 0x8, address)
        cpu.call(STORE, SECURE + STRENG(i) + 0xC, 8 * 8 // bits)
        cpu.call(STORE, SECURE + STRENG(i), 1 << 8 | 1 << 2 | sizes[bits] | direction)
    cpu.call(STORE, SECURE + STRENG(1) + 0x28, 1 << 19)      # EVENT.EN_OFLOW_FRM
    cpu.call(STORE, SECURE + 0x4008 + 4, 1 | 0 << 1)        # STRSWITCH DSTSTRENG1: EN0, LINK0 = STRENG0


def test_the_code_reads_and_writes_the_npu_registers_at_both_aliases(code):
    cpu, npu = board(code, "stop")
    assert cpu.call(LOAD, SECURE + STRENG(0) + 4) == 0x003E5001
    cpu.call(STORE, NONSECURE + STRENG(2) + 0x8, 0x3410_0040)
    cpu.call(STORE_BYTE, SECURE + STRENG(2) + 0x9, 0xAB)
    assert cpu.call(LOAD, SECURE + STRENG(2) + 0x8) == 0x3410_AB40 == npu.stored(STRENG(2) + 0x8)


def test_a_chain_the_code_closes_moves_its_bytes_and_an_unmodelled_one_stops_the_call(code):
    cpu, npu = board(code, "stop")
    cpu.write(0x3410_0000, b"abcdefgh")
    program_copy(cpu)
    for i in (1, 0):
        cpu.call(STORE, SECURE + STRENG(i), cpu.call(LOAD, SECURE + STRENG(i)) | 1)
    assert cpu.call(LOAD, SECURE + 0x1008) == 0b10                     # INTREG: the writer ended
    assert cpu.read(0x3410_0100, 8) == b"abcdefgh"
    cpu, npu = board(code, "control")
    cpu.write(0x3410_0100, b"\xff" * 8)
    program_copy(cpu, read_bits=16)
    for i in (1, 0):
        cpu.call(STORE, SECURE + STRENG(i), cpu.call(LOAD, SECURE + STRENG(i)) | 1)
    assert cpu.read(0x3410_0100, 8) == bytes(8)                        # not computed: zeroed
    cpu, npu = board(code, "stop")
    program_copy(cpu, read_bits=16)
    cpu.call(STORE, SECURE + STRENG(1), cpu.call(LOAD, SECURE + STRENG(1)) | 1)
    with pytest.raises(NpuStopped) as e:
        cpu.call(STORE, SECURE + STRENG(0), cpu.call(LOAD, SECURE + STRENG(0)) | 1)
    assert str(e.value) == ("epoch 5: STRENG1 (data movement: 8 items written, 4 read) is not modelled "
                            "(NPU_MODEL=control runs on with its outputs zeroed)")


def test_a_convolution_requantised_by_an_arithmetic_unit_computes_on_the_board(code):
    """STRENG0 features (uint8, zero point 7) and STRENG1 kernels feed CONVACC0 (3x3, padding 1,
    24-bit sums), ARITH0 scales each channel (A) and adds its 32-bit bias (COMBINEBC B:C), shifts
    by 16 rounding half to even and saturates to int8, STRENG2 writes it: the bytes equal a
    numpy convolution and Python integer requantisation written here, from the register program
    the emulated code stores."""
    rng = np.random.default_rng(31)
    h, w, c, nr, zero = 5, 6, 3, 4, 7
    x = rng.integers(0, 256, (h, w, c))
    k = rng.integers(-128, 128, (nr, 3, 3, c))
    scale, bias = rng.integers(60, 250, nr), rng.integers(-(1 << 20), 1 << 20, nr)
    cpu, npu = board(code, "stop")
    features, kernels, out = 0x3410_0000, 0x3410_0200, 0x3410_0400
    cpu.write(features, (x & 0xFF).astype(np.uint8).tobytes())
    cpu.write(kernels, (k & 0xFF).astype(np.uint8).tobytes())             # kernel i: (row, column, depth)
    raw = lambda address, items, write: {"ADDR": {"REG": address}, "FSIZE": {"WIDTH": items},
                                         "CTRL": {"RAW": 1, "SINGLE": 1, "SIZE0": 8, "DIR": write}}
    m9 = lambda v: v & 0x1FF
    writes = encode("STRENG", 0, raw(features, x.size, 0)) + encode("STRENG", 1, raw(kernels, k.size, 0)) + \
        encode("STRENG", 2, dict(raw(out, h * w * nr, 1), EVENT={"EN_OFLOW_FRM": 1})) + encode("CONVACC", 0, {
            "KFORMAT": {"WIDTH": 3, "HEIGHT": 3, "BTCDEPTH": c, "NR": nr},
            "SAMPLE": {"TPAD": 1, "BPAD": 1, "LPAD": 1, "RPAD": 1, "HSTRD": 1, "VSTRD": 1},
            "FFORMAT": {"WIDTH": w * c, "HEIGHT": h}, "FSUB": {"FSUB": zero},
            "DFORMAT": {"OUTSHIFT": 0, "INSHIFT": 0, "ROUND": 0, "SAT": 1, "OBYTES": 3, "FBYTES": 1},
            "KFILT": {"TOT": 1, "FIRST": 0, "LAST": 0}}) + encode("ARITH", 0, {
            "SHIFT": {"AX": 0, "BY": 0, "C": 0, "RES": 16}, "INCCNT": {"INCVAL": 0},
            "INSHIFTER": {"FBYTESX": 3, "FSHIFTX": 16},
            "RSTCNT1": {"RSTCNT": nr - 1}, "INCOFFSET": {"VAL": 1}, "ADDROFFSET": {"OFFSET1": m9(-(nr - 1))}})
    for j in range(nr):                                                     # coefficient memory: A, B:C
        b_c = int(bias[j]) & 0xFFFF_FFFF
        writes += [(0x17400 + 8 * j, int(scale[j]) | (b_c >> 16) << 16), (0x17404 + 8 * j, b_c & 0xFFFF)]
    links = {"STRENG0": 0, "STRENG1": 1, "CONVACC0": 10, "ARITH0": 18}
    for dest, source in (("CONVACC00", "STRENG0"), ("CONVACC01", "STRENG1"), ("ARITH00", "CONVACC0"),
                         ("STRENG2", "ARITH0")):
        writes += encode("STRSWITCH", 0, {f"DST{dest}": {"EN0": 1, "LINK0": links[source]}})
    for offset, value in writes:
        cpu.call(STORE, SECURE + offset, value)
    enable = encode("CONVACC", 0, {"CTRL": {"EN": 1, "NOSUM": 1, "SIMD": 1, "FUNSIGNED": 1}}) + encode(
        "ARITH", 0, {"CTRL": {"EN": 1, "CNT1": 1, "ROUND": 1, "ORNDMODE": 1, "SAT": 1, "COEFFA": 1, "COEFFB": 1,
                              "COEFFC": 1, "COMBINEBC": 1, "OBYTES": 1}})
    for offset, value in enable:
        cpu.call(STORE, SECURE + offset, value)
    for i in (2, 1, 0):
        cpu.call(STORE, SECURE + STRENG(i), cpu.call(LOAD, SECURE + STRENG(i)) | 1)
    assert cpu.call(LOAD, SECURE + 0x1008) == 0b100                    # INTREG: the writer ended
    padded = np.pad(x - zero, ((1, 1), (1, 1), (0, 0)))
    sums = np.zeros((h, w, nr), dtype=np.int64)
    for dy in range(3):
        for dx in range(3):
            sums += np.einsum("hwc,oc->hwo", padded[dy:dy + h, dx:dx + w], k[:, dy, dx, :])
    want = []
    for s, j in zip(sums.ravel().tolist(), [j for _ in range(h * w) for j in range(nr)]):
        v = int(scale[j]) * s + int(bias[j])
        q, rest = divmod(v, 1 << 16)                                      # floor, and what it dropped
        q += rest > 1 << 15 or rest == 1 << 15 and q % 2                 # half to even
        want.append(max(-128, min(127, q)))
    assert list(np.frombuffer(cpu.read(out, h * w * nr), dtype=np.int8)) == want
    assert npu.not_computed == []


def test_a_service_stopping_for_the_npu_stays_one_line():
    """A firmware service (a runtime library operation) that stops the run for the NPU model
    keeps its one line (NpuStopped), not a fault at the call site's pc."""
    def library_op(cpu, *args):
        raise NpuStopped("epoch 8: ll_aton_lib_dma_transpose (a runtime library operation) is not modelled", 0)
    cpu = Cpu([Region("firmware", 0x3400_0000, 0x6_0000)], 0x3400_0000, [("ll_aton_lib_dma_transpose", library_op)])
    with pytest.raises(NpuStopped) as e:
        cpu.call(cpu.stubs)
    assert str(e.value) == "epoch 8: ll_aton_lib_dma_transpose (a runtime library operation) is not modelled"


@pytest.mark.parametrize("dtype,target_pos", [(np.int8, (0, 3, 1, 2)), (np.int16, (0, 2, 1, 3)),
                                              (np.int32, (0, 3, 1, 2)), (np.int8, (2, 0, 1))])
def test_the_runtime_transpose_puts_each_element_where_numpy_transpose_does(dtype, target_pos):
    """ll_aton_lib_dma_transpose carried out by the simulated board's firmware (library_ops.py):
    input axis k becomes output axis target_pos[k]; the output bytes equal numpy.transpose."""
    import struct
    from n6.nn_interface import BUFFER_INFO
    from n6board.library_ops import transpose
    ram, firmware = 0x3410_0000, 0x3400_0000
    cpu = Cpu([Region("firmware", firmware, 0x6_0000), Region("AXISRAM2", ram, 0x1_0000)], firmware,
              [("ll_aton_lib_dma_transpose", transpose)])
    shape = (1, 3, 4, 5)[-len(target_pos):]
    x = np.random.default_rng(5).integers(-100, 100, shape).astype(dtype)
    perm = [target_pos.index(j) for j in range(len(shape))]               # output axis j is input axis perm[j]
    want = np.transpose(x, perm)
    strides = lambda s: [int(np.prod(s[k + 1:])) * x.itemsize for k in range(len(s))]

    def tensor(at, data_at, dims):
        fields = {"name": 0, "addr_base": data_at, "offset_start": 0, "offset_end": x.nbytes, "ndims": len(dims),
                  "nbits": 8 * x.itemsize, "shape": at + 0x100}
        raw = bytearray(BUFFER_INFO.size)
        for name, value in fields.items():
            struct.pack_into("<I" if name not in ("ndims", "nbits") else "<B", raw, BUFFER_INFO.offsets[name], value)
        cpu.write(at, bytes(raw))
        cpu.write(at + 0x100, struct.pack(f"<{len(dims)}I", *dims))
    tensor(ram, ram + 0x1000, shape)
    tensor(ram + 0x200, ram + 0x2000, want.shape)
    cpu.write(ram + 0x400, struct.pack(f"<{len(shape)}I", *strides(shape)))
    cpu.write(ram + 0x500, struct.pack(f"<{len(shape)}I", *strides(want.shape)))
    cpu.write(ram + 0x600, bytes(target_pos))
    cpu.write(cpu.stack_top, struct.pack("<I", ram + 0x600))                 # the 5th argument, on the stack
    cpu.write(ram + 0x1000, x.tobytes())
    assert cpu.call(cpu.stubs, ram, ram + 0x400, ram + 0x200, ram + 0x500) == 0
    assert np.frombuffer(cpu.read(ram + 0x2000, x.nbytes), dtype=dtype).tolist() == want.ravel().tolist()
