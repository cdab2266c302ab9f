"""The NPU model's control in process (sim/npu: npu.py, program.py, chain.py): the interrupt
register at reset, a unit disabled while it waits, a footprint outside every known pool, the
order in which the switch's two contexts are read. Written against the survivors of
tools/mutate.py (target `npu-control`)."""
import numpy as np
import pytest

from npu_model.chain import wire
from npu_model.program import Route
from npu_model.fixedpoint import NotModelled
from npu_model.npu import Npu

from test_npu_model import CTRL, EN, INTREG, RUNNING, STRENG, Memory, Ram, copy_program


def test_no_interrupt_is_pending_at_reset():
    assert Npu().read(INTREG) == 0


def test_a_unit_disabled_while_it_waits_stops_and_its_chain_never_starts():
    ram = Ram()
    npu = ram.attach(Npu())
    ram.write(0x3410_0000, bytes(range(1, 17)))
    copy_program(npu)
    npu.write(STRENG(1) + CTRL, npu.read(STRENG(1) + CTRL) | EN)
    assert npu.read(STRENG(1) + CTRL) & RUNNING
    npu.write(STRENG(1) + CTRL, npu.read(STRENG(1) + CTRL) & ~EN)        # EN cleared, no CLR
    assert not npu.read(STRENG(1) + CTRL) & RUNNING
    npu.write(STRENG(0) + CTRL, npu.read(STRENG(0) + CTRL) | EN)
    assert npu.programs == [] and ram.read(0x3410_0100, 16) == bytes(16)


def test_a_footprint_in_no_known_pool_has_an_empty_location():
    npu = Npu(Memory(), mode="control")
    npu.locate = lambda address: None
    copy_program(npu)
    for i in (1, 0):
        npu.write(STRENG(i) + CTRL, npu.read(STRENG(i) + CTRL) | EN)
    program, = npu.programs
    assert [f.location for f in program.footprints] == ["", ""]
    assert [s["location"] for s in program.as_dict()["streams"]] == ["", ""]


def test_two_sources_on_one_port_are_named_in_the_order_the_routes_list_them():
    """A port the two contexts feed from different sources stops, naming both; one source per
    port wires each port to its own."""
    one, two = Route("ARITH0", 0, 0, "STRENG1"), Route("ARITH0", 0, 1, "STRENG2")
    for routes, named in (([two, one], "STRENG2 and STRENG1"), ([one, two], "STRENG1 and STRENG2")):
        with pytest.raises(NotModelled, match=rf"^ARITH0 port 0: fed by {named} in the switch's two contexts"):
            wire({"ARITH0": None}, routes)
    units = wire({"ARITH0": None}, [Route("ARITH0", 1, 1, "STRENG2"), Route("ARITH0", 0, 0, "STRENG1")])
    assert {n: (p.source, p.contexts) for n, p in units["ARITH0"].inputs.items()} == \
        {0: ("STRENG1", {0}), 1: ("STRENG2", {1})}


def test_intctrl_clr_clears_every_pending_interrupt():
    from test_npu_model import INTCTRL, INTSET
    npu = Npu()
    npu.write(INTCTRL + CTRL, EN)
    npu.write(INTSET, 1 << 5 | 1 << 28)
    assert npu.read(INTREG) == 1 << 5 | 1 << 28
    npu.write(INTCTRL + CTRL, EN | 1 << 1)                                # CLR
    assert npu.read(INTREG) == 0


def test_a_pooling_unit_in_a_chain_pools_each_frame():
    from npu_model.chain import run
    from npu_model.poolacc import MAX, PoolConfig, pool
    from test_npu_units import RNG, pool_registers
    cfg = PoolConfig.from_registers(pool_registers(MAX))
    frames = [RNG.integers(-128, 128, 5 * 6 * 3) for _ in range(2)]
    units = wire({"STRENG0": None, "POOL0": cfg, "STRENG1": None},
                 [Route("POOL0", 0, 0, "STRENG0"), Route("STRENG1", 0, 0, "POOL0")])
    written = {}
    run(units, {"STRENG0": frames}.__getitem__, written.__setitem__)
    assert [f.tolist() for f in written["STRENG1"]] == [pool(f.reshape(5, 6, 3), cfg).tolist() for f in frames]


def test_a_single_input_arith_unit_does_not_follow_its_port_1():
    """Without DUALIN the unit reads port 0 only: what port 1 is routed from is never asked for."""
    from npu_model.arithacc import ArithConfig, compute
    from npu_model.chain import run
    from test_npu_units import arith_registers
    cfg = ArithConfig.from_registers(arith_registers("scalar", a=2, obytes=2), name="ARITH0")
    units = wire({"STRENG0": None, "ARITH0": cfg, "STRENG1": None},
                 [Route("ARITH0", 0, 0, "STRENG0"), Route("ARITH0", 1, 0, "RECBUF"), Route("STRENG1", 0, 0, "ARITH0")])
    written = {}
    run(units, {"STRENG0": [[1, 2, 3], [4]]}.__getitem__, written.__setitem__)
    assert [f.tolist() for f in written["STRENG1"]] == [compute([1, 2, 3], cfg).tolist(), compute([4], cfg).tolist()]


def test_the_runtime_waits_npu_cycles_at_1_ghz_in_800_mhz_mcu_cycles():
    """The simulated board's clocks: the NPU at 1 GHz, the MCU at 800 MHz (1000 NPU cycles = 1 µs)."""
    from n6board.firmware import EpochRun
    assert [EpochRun(None, None, None, n).wait_cycles for n in (1000, 1, 1_000_000_000)] == [800, 0, 800_000_000]


def test_the_status_bits_a_write_of_1_clears():
    """Stream engines' IRQ: the seven RAW_ event flags; the epoch controller's: IRQ and the ERR_ flags
    (bits 0-7), not its step-mode bit SM; no other register."""
    from npu_model.npu import write_one_to_clear
    from npu_model.registers import aton_map
    units = aton_map().units
    assert write_one_to_clear(units["STRENG"], units["STRENG"].registers["IRQ"]) == 0x7F
    assert write_one_to_clear(units["EPOCHCTRL"], units["EPOCHCTRL"].registers["IRQ"]) == 0xFF
    assert write_one_to_clear(units["STRENG"], units["STRENG"].registers["CTRL"]) == 0


def test_a_chain_stopped_at_an_unmodelled_unit_took_no_simulated_cycles():
    from npu_model.npu import NpuStop
    from test_npu_model import ACTIV, DSTACTIV, DSTSTRENG, LINK_ACTIV, LINK_STRENG, raw_engine, route
    npu = Ram().attach(Npu())
    raw_engine(npu, 0, 0x3410_0000, 64, write=False)
    raw_engine(npu, 2, 0x3410_0100, 64, write=True)
    npu.write(DSTACTIV(0), route(LINK_STRENG(0)))
    npu.write(DSTSTRENG(2), route(LINK_ACTIV(0)))
    for unit in (STRENG(0), STRENG(2)):
        npu.write(unit + CTRL, npu.read(unit + CTRL) | EN)
    with pytest.raises(NpuStop):
        npu.write(ACTIV(0) + CTRL, EN)
    program, = npu.programs
    assert (program.cycles, npu.cycles, program.as_dict()["simulated_npu_cycles"]) == (0, 0, 0)


def test_a_register_off_the_map_is_named_by_its_address():
    from npu_model.program import register_name
    from npu_model.registers import ATON_BASE, aton_map
    assert register_name(aton_map(), STRENG(1) + CTRL) == "STRENG1.CTRL"
    assert register_name(aton_map(), 0x1FFFC) == f"0x{ATON_BASE + 0x1FFFC:08X}"


def test_raw_and_raster_engines_say_so():
    from test_npu_model import raster_copy
    program = raster_copy(Npu(Memory(), mode="control"))
    assert [s["mode"] for s in program.as_dict()["streams"]] == ["raster", "raw"]


def _zero_byte_writer_program(locate):
    """STRENG0 reads a 4x3 raster (24 bytes); STRENG1 writes raw with FSIZE 0: a stream of no bytes."""
    from test_npu_model import raster_copy
    npu = Npu(Memory(), mode="control")
    npu.locate = locate
    return raster_copy(npu, written=0)


def test_a_zero_byte_stream_spans_nothing_and_lies_in_no_pool():
    """A stream of no bytes: span (0, 0), no location even where every address has one."""
    program = _zero_byte_writer_program(lambda address: "AXISRAM2")
    read, write = program.footprints
    assert (read.nbytes, read.span, read.location) == (24, (0x3410_0000, 0x3410_006A), "AXISRAM2")
    assert (write.nbytes, write.span, write.location) == (0, (0, 0), "")
    assert program.as_dict()["streams"][1] == {"engine": "STRENG1", "direction": "write", "mode": "raw",
                                               "item_bits": 8, "frames": 1, "bytes": 0, "first": 0, "end": 0,
                                               "location": "", "segments": 0}


def test_the_program_text_shows_reg_fields_in_hex_and_others_in_decimal():
    program = _zero_byte_writer_program(lambda address: "AXISRAM2")
    assert program.text().splitlines() == [
        "hardware chain 1: 2 units, 11 register writes, 67 NPU cycles (simulated)",
        "  STRENG0    CTRL[EN=1 SINGLE=1 SIZE0=8] ADDR[REG=0x34100000] FSIZE[WIDTH=4 HEIGHT=3] "
        "DEPTH[SIZE=2 OFFSET=8] STRD[LOFF=40]",
        "  STRENG1    CTRL[EN=1 SINGLE=1 DIR=1 RAW=1 SIZE0=8] ADDR[REG=0x34101000]",
        "  route      STRENG0 -> STRENG1.in0 ctx0",
        "  stream     STRENG0 read raster 8-bit x1 frames: 24 bytes in 0x34100000..0x3410006A in AXISRAM2",
        "  stream     STRENG1 write raw 8-bit x1 frames: 0 bytes in 0x00000000..0x00000000"]


def test_a_unit_decoded_at_reset_keeps_its_ctrl_and_drops_the_rest():
    """Registers at their reset value are left out of a program, CTRL never (POOL's resets to
    FBYTES=2 FSHIFT=16)."""
    from npu_model.program import decode
    from npu_model.registers import aton_map
    program = decode(aton_map(), {}, [("POOL", 0)], "at reset")
    assert program.unit("POOL0").registers == {"CTRL": {
        "EN": 0, "CLR": 0, "TYPE": 0, "ROUND": 0, "SAT": 0, "OUTSHIFT": 0, "DUALLINE": 0, "CROPEN": 0,
        "FBYTES": 2, "FSHIFT": 16, "FROUND": 0, "FSAT": 0, "CONFCLR": 0}}
    assert program.text().splitlines()[1] == "  POOL0      CTRL[FBYTES=2 FSHIFT=16]"


def test_a_blob_writefield_sets_or_clears_one_bit_at_its_lsb_and_keeps_the_others():
    from npu_model.ecblob import IRQ, WRITE, WRITEFIELD, Command, blob_bytes
    from test_npu_model import ADDR, BLOB_AT, EC_ADDR, EPOCHCTRL
    block = STRENG(2) >> 12
    ram = Ram()
    ram.write(BLOB_AT, blob_bytes([Command(WRITE, block, ADDR // 4, (0x3410_0021,)),
                                   Command(WRITEFIELD, block, ADDR // 4, (1,), 4, 4),     # set bit 4
                                   Command(WRITEFIELD, block, ADDR // 4, (0,), 5, 5),     # clear bit 5
                                   Command(WRITEFIELD, block, ADDR // 4, (0,), 0, 0),     # clear bit 0
                                   Command(IRQ)]))
    npu = ram.attach(Npu(mode="control"))
    npu.write(EPOCHCTRL + EC_ADDR, BLOB_AT)
    npu.write(EPOCHCTRL + CTRL, EN)
    assert npu.read(STRENG(2) + ADDR) == 0x3410_0010


def _convolution_chain(width, sums, x, w):
    """STRENG0 sends the frames `x` (each a 1 x `width` row of depth-2 pixels), STRENG1 a 1x1
    kernel per frame (`w`), to CONVACC3 (OUTSHIFT 3), which sums over frames through its own
    output on port 2 when `sums` (INSHIFT 3, no AFILT) → what STRENG2 receives, per frame."""
    from npu_model.chain import run
    from npu_model.convacc import ConvConfig, pack_kernel_frames
    from test_npu_units import conv_registers
    regs = conv_registers(kw=1, kh=1, nr=1, depth=2, width=width, height=1, outshift=3, inshift=3 * sums,
                          nosum=int(not sums), obytes=2)
    cfg = ConvConfig.from_registers(regs, "CONVACC3")
    routes = [Route("CONVACC3", 0, 0, "STRENG0"), Route("CONVACC3", 1, 0, "STRENG1"),
              Route("STRENG2", 0, 0, "CONVACC3")]
    units = wire({"STRENG0": None, "STRENG1": None, "STRENG2": None, "CONVACC3": cfg},
                 routes + [Route("CONVACC3", 2, 0, "CONVACC3")] * sums)
    streams = {"STRENG0": [f.ravel() for f in x],
               "STRENG1": [np.frombuffer(pack_kernel_frames(w.reshape(len(w), 1, 1, 1, 2), cfg), np.uint8)]}
    written = {}
    run(units, streams.__getitem__, written.__setitem__)
    return [[int(v) for v in f] for f in written["STRENG2"]]


def test_a_convolution_in_a_chain_takes_every_value_of_a_row_of_deep_pixels():
    """Without its own output on port 2 (NOSUM): each frame is a 1x2 row of pixels of depth 2
    (height 1, width 2: 4 values), each kernel frame its 1x1 kernel; the unit sends x @ w per pixel,
    shifted by OUTSHIFT: every value of the frame counts (height * width * depth of them)."""
    from test_npu_units import RNG, _half_even
    x, w = RNG.integers(1, 256, (3, 2, 2)), RNG.integers(1, 128, (3, 2))
    assert _convolution_chain(2, False, x, w) == \
        [[_half_even(int(x[k, p] @ w[k]), 3) for p in range(2)] for k in range(3)]


@pytest.mark.parametrize("width", [1, 2])
def test_a_unit_fed_its_own_output_without_afilt_sums_over_every_frame(width):
    """No AFILT: every frame adds the previous frame's output (through INSHIFT) and is sent on;
    on a row of deep pixels each pixel sums on its own."""
    from test_npu_units import RNG, _half_even
    x, w = RNG.integers(0, 256, (3, width, 2)), RNG.integers(-128, 128, (3, 2))
    want, previous = [], [0] * width
    for k in range(3):
        previous = [_half_even((previous[p] << 3) + int(x[k, p] @ w[k]), 3) for p in range(width)]
        want.append(previous)
    assert _convolution_chain(width, True, x, w) == want


@pytest.mark.parametrize("sums", [False, True])
def test_a_frame_shorter_than_the_units_stops_naming_the_unit(sums):
    from test_npu_units import RNG
    with pytest.raises(NotModelled, match=r"^CONVACC3: sent a frame of 2 items where its frame holds 4$"):
        _convolution_chain(2, sums, RNG.integers(0, 256, (3, 1, 2)), RNG.integers(-128, 128, (3, 2)))
