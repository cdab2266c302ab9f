"""The simulated board: low-overhead loops, every bundled model's image executed in the emulated
Cortex-M and compared byte for byte with the host build of the same generated C, broken images
never passing, and each fault a one-line BoardError within the timeout."""
import os
import struct
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ROOT, copy_repo, scons
from n6.aivalidation import IO_ONLY, PER_LAYER, BoardError, Client, Timeouts
from n6.reloc.image import Image, off
from n6.run.session import simulated_board

sys.path.insert(0, os.path.join(ROOT, "sim", "board"))
from n6board.emulator import Cpu, Fault, NpuAccess, Region  # noqa: E402

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


NPU_WRITE = """
.syntax unified
.thumb
.global f
f:  ldr r1, =0x580C0010     @ an NPU register (secure alias): what a hardware epoch does
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
    assert e.value.addr == 0x580C0010
    with pytest.raises(Fault, match=r"fetch from unmapped memory\) at pc 0x20000040 accessing 0x20000040"):
        cpu.call(0x2000_0040)          # a link-time address nobody relocated


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A clone of the repository with every bundled model built."""
    root = copy_repo(tmp_path_factory.mktemp("repo"))
    scons(root, "build")
    return root


def host_outputs(root, model, tmp_path, inputs):
    """The host build of the same generated C (n6.run.host_reference) on the same inputs."""
    from n6.run import host_reference
    folder = os.path.join(root, "build", model, "st_ai_output") if model != "tiny_prebuilt" else \
        os.path.join(root, "models", model)
    out = host_reference.run(folder, os.path.join(root, "build", "stedgeai-sim", "2.2"), [[x] for x in inputs], 1)
    return [o[0] for o in out]


@pytest.mark.parametrize("model", MODELS)
def test_board_outputs_equal_the_host_build_of_the_generated_code(built, tmp_path, model):
    image = os.path.join(built, "build", model, "network_rel.bin")
    with simulated_board(BOARD, image=image) as port, Client.open(port) as c:
        c.connect()
        info = c.model("network")
        rng = np.random.default_rng(11)
        inputs = [rng.integers(-128, 128, info.inputs[0].nbytes, dtype=np.int8).tobytes() for _ in range(3)]
        got = [c.run("network", [x], IO_ONLY).outputs[0][1] for x in inputs]
        per_layer = c.run("network", [inputs[0]], PER_LAYER)
    assert got == host_outputs(built, model, tmp_path, inputs)
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
        assert "HardFault" in str(e) or "INVALID_BIN" in str(e) or "refused" in str(e), str(e)
        return
    assert got != want


FAST = Timeouts(sync=0.5, sys_info=0.5, network_info=2.0, run_ack=1.0, operator=5.0, tensor=0.5, packet_ack=2.0)


@pytest.mark.parametrize("fault,expect", [
    ("silence", "no answer to SYNC"), ("garbage", "SYNC"), ("header", "SYNC"), ("slow:1.5", "no answer to SYNC"),
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
