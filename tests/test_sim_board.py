"""The simulated board: low-overhead loops, every bundled model's image executed in the emulated
Cortex-M and compared byte for byte with the host build of the same generated C, broken images
never passing, and each fault a one-line BoardError within the timeout."""
import os
import struct
import subprocess
import time

import numpy as np
import pytest
from unicorn import UC_HOOK_CODE

from conftest import ROOT, copy_repo, host_outputs, scons
from n6.aivalidation import IO_ONLY, PER_LAYER, BoardError, Client, Timeouts
from n6.reloc.image import Image, off
from n6.run.session import simulated_board
from n6board.emulator import Cpu, Fault, NotEmulated, NpuAccess, Region
from n6board.firmware import InstalledModel

BOARD = os.path.join(ROOT, "firmware", "boards", "stm32n6570-dk.toml")
MODELS = ("kws_mlp", "cifar_cnn", "big_mlp", "tiny_prebuilt")

LOOPS = """
.syntax unified
.thumb
.global f
f:  push {r4, lr}
    movs r0, #0
    dls lr, r1          @ r1 iterations
1:  adds r0, r0, #3
    le lr, 1b
    wls lr, r2, 3f      @ r2 iterations (0: skipped)
2:  adds r0, r0, #100
    le lr, 2b
3:  pop {r4, pc}
"""


def test_low_overhead_loops_execute_with_their_architectural_meaning(tmp_path):
    (tmp_path / "l.s").write_text(LOOPS)
    subprocess.run(["arm-none-eabi-as", "-march=armv8.1-m.main", "-mthumb", "l.s", "-o", "l.o"], cwd=tmp_path,
                   check=True)
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "l.o", "l.bin"], cwd=tmp_path, check=True)
    code = (tmp_path / "l.bin").read_bytes()
    cpu = Cpu([Region("code", 0x1000_0000, 0x1000), Region("firmware", 0x3400_0000, 0x6_0000)], 0x3400_0000, [],
              count=True)
    cpu.write(0x1000_0000, code)
    for n, m in ((1, 0), (5, 0), (7, 3), (300, 1)):
        cpu.counters.instructions = 0
        assert cpu.call(0x1000_0000, 0, n, m) == 3 * n + 100 * m
        # push, movs, dls, n x (adds, le), wls, m x (adds, le), pop
        assert cpu.counters.instructions == 5 + 2 * n + 2 * m


IT_AND_LOOPS = """
.syntax unified
.thumb
.global f
f:  push {r4, lr}
    movs r0, #0
    dls lr, r1
1:  cmp r0, r2
    ite lt              @ one of the two is condition-failed: still executed (a cycle each)
    addlt r0, r0, #2
    addge r0, r0, #1
    le lr, 1b
    pop {r4, pc}
"""


def reference_count(uc):
    """A per-instruction hook's count: the independent reference for the block counter. The hook
    does not fire for condition-failed instructions of an IT block, so an IT counts its block."""
    state = {"n": 0, "shadow": ()}

    def step(uc, addr, size, _):
        if addr in state["shadow"]:
            return
        code = bytes(uc.mem_read(addr, 18))    # an IT and up to four 32-bit instructions
        hw = code[0] | code[1] << 8
        state["n"] += 1
        state["shadow"] = ()
        if hw & 0xFF00 == 0xBF00 and hw & 0xF:       # IT with k = 1..4 instructions
            k, at, shadow = 5 - (hw & -hw & 0xF).bit_length(), 2, set()
            for _ in range(k):
                shadow.add(addr + at)
                at += 4 if code[at + 1] >> 3 in (0x1D, 0x1E, 0x1F) else 2
            state["n"] += k
            state["shadow"] = shadow

    uc.hook_add(UC_HOOK_CODE, step)
    uc.ctl_flush_tb()
    return state


def test_block_counts_equal_a_per_instruction_count_with_it_blocks_and_loops(tmp_path):
    (tmp_path / "i.s").write_text(IT_AND_LOOPS)
    subprocess.run(["arm-none-eabi-as", "-march=armv8.1-m.main", "-mthumb", "i.s", "-o", "i.o"], cwd=tmp_path,
                   check=True)
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "i.o", "i.bin"], cwd=tmp_path, check=True)
    cpu = Cpu([Region("code", 0x1000_0000, 0x1000), Region("firmware", 0x3400_0000, 0x6_0000)], 0x3400_0000, [])
    cpu.write(0x1000_0000, (tmp_path / "i.bin").read_bytes())
    ref = reference_count(cpu.uc)
    for n, m in ((1, 0), (6, 2), (40, 100)):
        cpu.counters.instructions = ref["n"] = 0
        cpu.call(0x1000_0000, 0, n, m)
        assert cpu.counters.instructions == ref["n"] == 4 + 5 * n


NPU_WRITE = """
.syntax unified
.thumb
.global f
f:  ldr r1, =0x580E0010     @ an NPU register (secure alias): what a hardware epoch does
    str r0, [r1]
    bx lr
"""


def test_npu_register_access_is_not_executable_and_other_faults_name_the_address(tmp_path):
    (tmp_path / "n.s").write_text(NPU_WRITE)
    subprocess.run(["arm-none-eabi-as", "-march=armv8.1-m.main", "-mthumb", "n.s", "-o", "n.o"], cwd=tmp_path,
                   check=True)
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "n.o", "n.bin"], cwd=tmp_path, check=True)
    cpu = Cpu([Region("code", 0x1000_0000, 0x1000), Region("firmware", 0x3400_0000, 0x6_0000)], 0x3400_0000, [])
    cpu.write(0x1000_0000, (tmp_path / "n.bin").read_bytes())
    with pytest.raises(NpuAccess) as e:
        cpu.call(0x1000_0000, 1)
    assert e.value.addr == 0x580E0010
    with pytest.raises(Fault, match=r"fetch from unmapped memory\) at pc 0x20000040 accessing 0x20000040"):
        cpu.call(0x2000_0040)          # a link-time address nobody relocated


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A clone of the repository with every bundled model built."""
    root = copy_repo(tmp_path_factory.mktemp("repo"))
    scons(root, "build")
    return root


@pytest.mark.parametrize("model", ["tiny_prebuilt", "kws_mlp"])
def test_every_inference_is_counted_exactly(built, model):
    """The counts of an IO-only-speed run (no Python hook) equal the per-instruction reference."""
    with open(os.path.join(built, "build", model, "network_rel.bin"), "rb") as f:
        m = InstalledModel(f.read())
    ref = reference_count(m.cpu.uc)
    x = [bytes(range(256)) * (b.nbytes // 256) + bytes(b.nbytes % 256) for b in m.inputs]
    m.cpu.call(m.entry("ec_inference_init"), r9=m.r9)      # outside the epochs: not in the reference
    ref["n"] = 0
    m.cpu.call = _skip_init(m.cpu.call, m.entry("ec_inference_init"))
    result = m.infer(x)
    assert result.cycles == sum(e.start.instructions + e.end.instructions for e in result.epochs) == ref["n"] > 1000


def _skip_init(call, init):
    return lambda fn, *args, **kw: 0 if fn == init else call(fn, *args, **kw)


@pytest.mark.parametrize("model", MODELS)
def test_board_outputs_equal_the_host_build_of_the_generated_code(built, model):
    image = os.path.join(built, "build", model, "network_rel.bin")
    with simulated_board(BOARD, image=image) as port, Client.open(port) as c:
        c.connect()
        info = c.model("network")
        rng = np.random.default_rng(11)
        inputs = [rng.integers(-128, 128, info.inputs[0].nbytes, dtype=np.int8).tobytes() for _ in range(3)]
        got = [c.run("network", [x], IO_ONLY).outputs[0][1] for x in inputs]
        per_layer = c.run("network", [inputs[0]], PER_LAYER)
    assert got == host_outputs(built, model, inputs)
    assert per_layer.outputs[0][1] == got[0]
    assert per_layer.epochs and all(e.counters[0] > 0 for e in per_layer.epochs)
    assert per_layer.model_op.counter_values[3] == sum(sum(e.counters) for e in per_layer.epochs)


def _broken(image_path, tmp_path, how):
    data = bytearray(open(image_path, "rb").read())
    img = Image.parse(bytes(data))
    h = img.header
    if how == "rel":           # drop the REL entry of epoch 1's start function: it stays a link-time address
        from elftools.elf.elffile import ELFFile
        with open(os.path.join(os.path.dirname(image_path), "reloc", "network.elf"), "rb") as f:
            symtab = ELFFile(f).get_section_by_name(".symtab")
            site = next(s["st_value"] for s in symtab.iter_symbols() if s.name.startswith("ll_atonn_rt_epoch_block"))
        i = img.rel_sites.index(site)
        a, b = off(h.rel_start), off(h.rel_end)
        data[a + 4 * i:b] = data[a + 4 * i + 4:b] + bytes(4)
        struct.pack_into("<I", data, 40, h.rel_end - 4)
    else:                      # one GOT word off by 4
        at = off(h.data_data) + off(h.got_start)
        word = struct.unpack_from("<I", data, at)[0]
        struct.pack_into("<I", data, at, word + 4)
    path = tmp_path / f"broken-{how}.bin"
    path.write_bytes(bytes(data))
    return str(path)


@pytest.mark.parametrize("model,how", [("kws_mlp", "rel"), ("kws_mlp", "got"), ("tiny_prebuilt", "rel"),
                                       ("tiny_prebuilt", "got")])
def test_a_broken_image_never_passes(built, tmp_path, model, how):
    good = os.path.join(built, "build", model, "network_rel.bin")
    x = bytes(range(256)) * 4
    with simulated_board(BOARD, image=good) as port, Client.open(port) as c:
        c.connect()
        n = c.model("network").inputs[0].nbytes
        want = c.run("network", [x[:n]]).outputs[0][1]
    try:
        with simulated_board(BOARD, image=_broken(good, tmp_path, how)) as port, Client.open(port) as c:
            c.connect()
            got = c.run("network", [x[:n]]).outputs[0][1]
    except BoardError as e:
        assert any(w in str(e) for w in ("HardFault", "INVALID_BIN", "refused", "no last epoch block")), str(e)
        return
    assert got != want


FAST = Timeouts(sync=0.5, sys_info=0.5, network_info=2.0, run_ack=1.0, operator=5.0, tensor=0.5, packet_ack=2.0)


@pytest.mark.parametrize("fault,expect", [
    ("silence", "no answer to SYNC"), ("garbage", "SYNC: not an aiValidation packet"), ("header", "SYNC"),
    ("slow:1.5", "no answer to SYNC"),
    ("disconnect:1", "connection lost"), ("crash:1", "no answer to NETWORK_RUN")])
def test_faults_are_one_line_errors_within_the_timeout(built, monkeypatch, fault, expect):
    monkeypatch.setenv("N6_SIM_BOARD_FAULT", fault)
    image = os.path.join(built, "build", "tiny_prebuilt", "network_rel.bin")
    with simulated_board(BOARD, image=image) as port:
        t0 = time.monotonic()
        with pytest.raises(BoardError) as e:
            with Client.open(port, timeouts=FAST) as c:
                c.connect()
                for _ in range(3):
                    c.run("network", [bytes(64)])
        assert time.monotonic() - t0 < 10
    assert expect in str(e.value) and "\n" not in str(e.value) and "(fix:" in str(e.value)


def test_no_port_model_missing_and_loader_rejection(built, tmp_path):
    with pytest.raises(BoardError, match="cannot open the serial port"):
        Client.open(str(tmp_path / "no-such-port"))
    image = os.path.join(built, "build", "tiny_prebuilt", "network_rel.bin")
    with simulated_board(BOARD, image=image) as port, Client.open(port, timeouts=FAST) as c:
        c.connect()
        with pytest.raises(BoardError, match="model 'other' is not on the board"):
            c.model("other")
    data = bytearray(open(image, "rb").read())
    struct.pack_into("<I", data, 4, (struct.unpack_from("<I", data, 4)[0] & ~0xFFF) | 0xD21)   # another CPU
    bad = tmp_path / "other-cpu.bin"
    bad.write_bytes(bytes(data))
    with simulated_board(BOARD, image=str(bad)) as port, Client.open(port, timeouts=FAST) as c:
        with pytest.raises(BoardError, match="INVALID_BIN"):
            c.connect()


def test_legacy_one_byte_header_board(built, tmp_path):
    board = tmp_path / "dk-1byte.toml"
    board.write_text(open(BOARD).read().replace('header = "2byte"', 'header = "1byte"'))
    image = os.path.join(built, "build", "tiny_prebuilt", "network_rel.bin")
    with simulated_board(str(board), image=image) as port:
        with Client.open(port, header="1byte") as c:
            c.connect()
            per_layer = c.run("network", [bytes(64)], PER_LAYER)
            assert per_layer.epochs and len(per_layer.outputs[0][1]) == 10
            assert c.device.extra == [0, 1_000_000_000, 900_000_000, 0]   # field 5 in the legacy sysinfo
        with pytest.raises(BoardError, match="SYNC"):
            with Client.open(port, header="2byte", timeouts=FAST) as c:
                c.connect()


def _vector_code(tmp_path, body):
    """A Cpu holding `f: <body>; bx lr` assembled for the Cortex-M55 with Helium."""
    (tmp_path / "v.s").write_text(f".syntax unified\n.thumb\n.global f\nf:\n{body}\n    bx lr\n")
    subprocess.run(["arm-none-eabi-as", "-march=armv8.1-m.main+mve.fp", "-mthumb", "v.s", "-o", "v.o"],
                   cwd=tmp_path, check=True)
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "v.o", "v.bin"], cwd=tmp_path, check=True)
    cpu = Cpu([Region("code", 0x1000_0000, 0x1000), Region("firmware", 0x3400_0000, 0x6_0000)], 0x3400_0000, [])
    cpu.write(0x1000_0000, (tmp_path / "v.bin").read_bytes())
    return cpu


def test_a_vector_access_to_the_npu_registers_is_a_hardware_epoch_on_the_board(tmp_path):
    """A Helium kernel that reads the NPU's registers is reported as the NPU access it is (the run's
    'hardware epochs are not executable' line), not as a bus fault."""
    cpu = _vector_code(tmp_path, "    ldr r1, =0x580E0010\n    vldrw.u32 q0, [r1]")
    with pytest.raises(NpuAccess) as e:
        cpu.call(0x1000_0000, 1)
    assert e.value.addr == 0x580E0010


def test_a_helium_form_the_board_does_not_carry_out_stops_with_its_encoding(tmp_path):
    cpu = _vector_code(tmp_path, "    vrmlalvh.s32 r0, r1, q0, q1")
    with pytest.raises(NotEmulated, match=r"^Helium \(MVE\) instruction ee80 0f02 at pc 0x10000000$"):
        cpu.call(0x1000_0000, 1)


def test_the_board_maps_the_whole_external_ram_as_absolute_pools_may_use_it():
    """The DK's PSRAM from 0x9000_0000 (external_ram_device), not from the loader's part at
    0x9010_0000: ST's ec-workspace pools put the params at 0x9000_0000 (YOLOX nano)."""
    from n6.board import load_board
    from n6board.firmware import layout_from_board
    assert ("xSPI1 PSRAM", 0x9000_0000, 0x0200_0000) in layout_from_board(load_board(BOARD))["regions"]
