"""The NPU model mapped into the simulated board's CPU: the emulated code's loads and stores reach
its registers at both aliases (byte stores merged into the register), a copy chain it closes moves
the board's bytes, and an unmodelled one stops the call with the model's one line (NpuStopped),
not a fault, or in control mode writes zeros."""
import subprocess

import pytest

from n6board.emulator import Cpu, NpuStopped, Region
from npu_model.npu import Npu

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
    further as 8-bit items (raw, one frame): a copy, or (16-bit reads) half the items the writer
    waits for, a chain the model does not end."""
    sizes = {8: 8 << 16, 16: 8 << 16 | 8 << 20}
    for i, (address, direction, bits) in enumerate(((0x3410_0000, 0, read_bits), (0x3410_0100, 1 << 3, 8))):
        cpu.call(STORE, SECURE + STRENG(i) + 0x8, address)
        cpu.call(STORE, SECURE + STRENG(i) + 0xC, 8 * 8 // bits)
        cpu.call(STORE, SECURE + STRENG(i), 1 << 8 | 1 << 2 | sizes[bits] | direction)
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
    assert cpu.call(LOAD, SECURE + 0x1008) == 0b11                     # INTREG: both engines ended
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
