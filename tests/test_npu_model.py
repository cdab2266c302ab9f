"""The NPU model (sim/npu): register file, unit control, interrupt controller, chains started when
closed, the one-line stop at an unmodelled unit and the control mode's zeroed outputs, decoded
epoch programs. The register programs below are written from ATON.h's facts as literal numbers
(not from the model's table): the table itself is judged against ATON.h in test_npu_registers.py."""
import json

import pytest

from npu_model.npu import BUS_BYTES, START_CYCLES, Npu, NpuStop
from npu_model.registers import AtonMap, aton_map, TABLE

# ATON.h facts: offsets from ATON_BASE, field positions
STRENG = lambda i: 0x5000 + 0x1000 * i
ACTIV = lambda i: 0x15000 + 0x1000 * i
DECUN = lambda i: 0x13000 + 0x1000 * i
CTRL, VERSION, ADDR, FSIZE, DEPTH, STRD, LIMIT = 0x0, 0x4, 0x8, 0xC, 0x10, 0x14, 0x34
EN, CLR, SINGLE, DIR, RAW, CONFCLR, RUNNING = 1, 1 << 1, 1 << 2, 1 << 3, 1 << 8, 1 << 30, 1 << 31
SIZE0_8 = 8 << 16
INTCTRL, INTREG, INTSET, INTCLR, INTORMSK0, INTANDMSK0 = 0x1000, 0x1008, 0x100C, 0x1010, 0x1014, 0x1024
EVENT, IRQ, EN_OFLOW_FRM, EN_ILLCFG, RAW_OFLOW_FRM = 0x28, 0x3C, 1 << 19, 1 << 20, 1 << 3    # STRENG
DSTSTRENG = lambda i: 0x4008 + 4 * i               # STRSWITCH DSTSTRENGi: EN0 bit 0, LINK0 bits 5:1
DSTACTIV = lambda i: 0x4070 + 4 * i
DSTDECUN = lambda i, port: 0x4060 + 8 * i + 4 * port
LINK_STRENG = lambda i: i
LINK_ACTIV = lambda i: 16 + i
LINK_DECUN = lambda i: 14 + i
route = lambda link: 1 | link << 1


class Memory:
    def __init__(self):
        self.writes = []

    def __call__(self, address, data):
        self.writes.append((address, bytes(data)))


class Ram:
    """64 KB at 0x3410_0000 for the model's reads and writes."""
    BASE = 0x3410_0000

    def __init__(self):
        self.data = bytearray(64 << 10)

    def read(self, address, n):
        return bytes(self.data[address - self.BASE:address - self.BASE + n])

    def write(self, address, data):
        self.data[address - self.BASE:address - self.BASE + len(data)] = data

    def attach(self, npu):
        npu.read_memory, npu.write_memory = self.read, self.write
        return npu


def raw_engine(npu, i, address, nbytes, write, sizes=SIZE0_8):
    npu.write(STRENG(i) + ADDR, address)
    npu.write(STRENG(i) + FSIZE, nbytes)
    npu.write(STRENG(i) + CTRL, RAW | SINGLE | sizes | (DIR if write else 0))


def copy_program(npu, src=0x3410_0000, dst=0x3410_0100, n=16, read_sizes=SIZE0_8):
    """STRENG0 reads n bytes, the switch feeds STRENG1, which writes them (a DMA-only epoch);
    16-bit `read_sizes` make STRENG0 send half the items STRENG1 writes: a chain that would not end."""
    raw_engine(npu, 0, src, n // (2 if read_sizes != SIZE0_8 else 1), write=False, sizes=read_sizes)
    raw_engine(npu, 1, dst, n, write=True)
    npu.write(DSTSTRENG(1), route(LINK_STRENG(0)))


SIZE_16 = 8 << 16 | 8 << 20                         # SIZE0 = SIZE1 = 8: 16-bit items


def test_registers_start_at_reset_values_and_read_only_fields_keep_them():
    npu = Npu()
    assert npu.read(STRENG(0) + VERSION) == 0x003E5001
    assert npu.read(INTORMSK0) == 0xFFFFFFFF and npu.read(INTANDMSK0) == 0xFFFFFFFF
    npu.write(STRENG(3) + VERSION, 0)
    assert npu.read(STRENG(3) + VERSION) == 0x003E5001
    assert npu.read(0x1E000 + VERSION) == 0x0F041121      # EPOCHCTRL


def test_clear_bits_self_clear_and_confclr_restores_the_configuration():
    npu = Npu()
    npu.write(STRENG(2) + ADDR, 0x1234)
    npu.write(STRENG(2) + CTRL, RAW | CLR)
    assert npu.read(STRENG(2) + CTRL) == RAW
    npu.write(STRENG(2) + CTRL, CONFCLR)
    assert npu.read(STRENG(2) + CTRL) == 0 and npu.read(STRENG(2) + ADDR) == 0


def test_a_chain_starts_when_closed_and_a_copy_moves_the_bytes():
    ram = Ram()
    npu = ram.attach(Npu())
    ram.write(0x3410_0000, bytes(range(1, 17)))
    copy_program(npu)
    npu.write(STRENG(1) + CTRL, npu.read(STRENG(1) + CTRL) | EN)
    assert npu.read(STRENG(1) + CTRL) & RUNNING            # enabled, waiting for its source
    assert npu.programs == [] and ram.read(0x3410_0100, 16) == bytes(16)
    npu.write(STRENG(0) + CTRL, npu.read(STRENG(0) + CTRL) | EN)
    assert ram.read(0x3410_0100, 16) == bytes(range(1, 17)) and npu.not_computed == []


def test_bus_burst_counters_count_the_bursts_a_chain_moves():
    """Trace-unit counters on ll_aton_dbgtrc.h's burst signals (276 + 8 * write + 2 * log2(beats)
    + interface): a 100-byte copy from STRENG0 (interface 0) to STRENG6 (interface 1) is 13 beats
    each way, one burst each of 8, 4 and 1 beats; ST's byte total (beats x 8) is 104 each way. A
    counter on another signal (a stall) keeps its value."""
    ram = Ram()
    npu = ram.attach(Npu())
    event = lambda n, signal: npu.write(0x1F040 + 4 * n, 1 | signal << 1 | 1 << 14)
    counters = {0: 276 + 6, 1: 276 + 4, 2: 276 + 2, 3: 276, 4: 276 + 8 + 6 + 1, 5: 276 + 8 + 4 + 1,
                6: 276 + 8 + 1, 7: 276 + 8 + 6, 8: 2}
    for n, signal in counters.items():
        event(n, signal)
    npu.write(0x1F084 + 4 * 8, 7)
    raw_engine(npu, 0, 0x3410_0000, 100, write=False)
    raw_engine(npu, 6, 0x3410_0100, 100, write=True)
    npu.write(DSTSTRENG(6), route(LINK_STRENG(0)))
    npu.write(STRENG(6) + CTRL, npu.read(STRENG(6) + CTRL) | EN)
    npu.write(STRENG(0) + CTRL, npu.read(STRENG(0) + CTRL) | EN)
    counts = [npu.read(0x1F084 + 4 * n) for n in counters]
    assert counts == [1, 1, 0, 1, 1, 1, 1, 0, 7]
    assert 8 * sum(c << k for c, k in zip(counts[:4], (3, 2, 1, 0))) == 104


def test_activity_counters_count_each_engines_active_cycles_in_the_time_model():
    """Trace-unit counters on ll_aton_dbgtrc.h's stream-engine activity signals (simulated): a
    reading engine's source-link stall counted while low (SWITCH_OSTRX_STALL 2 + link) or its
    handshake while high (HENV 56 + link), a writing engine's destination-port stall while low
    (SWITCH_ISTRX_STALL 83 + port). A 100-byte copy STRENG0 → STRENG6 is active 13 cycles each side
    (the chain's 13 beyond its start), then a 40-byte copy STRENG1 → STRENG2 5; a stall counted
    while high (idle) keeps its value."""
    ram = Ram()
    npu = ram.attach(Npu())
    low, high = 0, 1
    counters = {0: (2, low), 1: (56, high), 2: (83 + 6, low), 3: (83, low), 4: (2 + 1, low), 5: (83 + 2, low),
                6: (56 + 1, high), 7: (2, high)}
    for n, (signal, event_type) in counters.items():
        npu.write(0x1F040 + 4 * n, 1 | signal << 1 | event_type << 14)
    npu.write(0x1F084 + 4 * 7, 7)
    for reader, writer, n in ((0, 6, 100), (1, 2, 40)):
        raw_engine(npu, reader, 0x3410_0000, n, write=False)
        raw_engine(npu, writer, 0x3410_0100, n, write=True)
        npu.write(DSTSTRENG(writer), route(LINK_STRENG(reader)))
        npu.write(STRENG(writer) + CTRL, npu.read(STRENG(writer) + CTRL) | EN)
        npu.write(STRENG(reader) + CTRL, npu.read(STRENG(reader) + CTRL) | EN)
    assert [npu.read(0x1F084 + 4 * n) for n in counters] == [13, 13, 13, 0, 5, 5, 5, 7]
    assert [p.cycles - START_CYCLES for p in npu.programs] == [13, 5]


def test_a_copy_takes_the_frames_of_the_contexts_its_port_is_enabled_in():
    """A 4-frame reader into a 2-frame writer through the switch in context 1 alone, FNR0 = FNR1 =
    1: frames 1 and 3 pass; ticking on pixels (TICKTYPE) stops naming the port."""
    ram = Ram()
    npu = ram.attach(Npu())
    ram.write(0x3410_0000, bytes(range(1, 17)))
    npu.write(STRENG(0) + ADDR, 0x3410_0000)
    npu.write(STRENG(0) + FSIZE, 4)
    npu.write(STRENG(0) + LIMIT, 4)
    npu.write(STRENG(0) + 0x18, 4)                                       # FOFFSET: frames 4 bytes apart
    npu.write(STRENG(0) + CTRL, RAW | SIZE0_8)
    raw_engine(npu, 1, 0x3410_0100, 8, write=True)
    npu.write(DSTSTRENG(1), 1 << 8 | 1 << 16 | LINK_STRENG(0) << 17 | 1 << 24)
    npu.write(STRENG(1) + CTRL, npu.read(STRENG(1) + CTRL) | EN)
    npu.write(STRENG(0) + CTRL, npu.read(STRENG(0) + CTRL) | EN)
    assert ram.read(0x3410_0100, 8) == bytes([5, 6, 7, 8, 13, 14, 15, 16])
    npu = ram.attach(Npu())
    npu.write(DSTSTRENG(1), 1 << 8 | 1 << 16 | LINK_STRENG(0) << 17 | 1 << 23 | 1 << 24)
    raw_engine(npu, 0, 0x3410_0000, 4, write=False)
    raw_engine(npu, 1, 0x3410_0100, 8, write=True)
    npu.write(STRENG(1) + CTRL, npu.read(STRENG(1) + CTRL) | EN)
    with pytest.raises(NpuStop, match=r"STRENG1 port 0: the switch's contexts ticking on pixels"):
        npu.write(STRENG(0) + CTRL, npu.read(STRENG(0) + CTRL) | EN)


def test_a_route_gives_the_frames_of_its_own_context():
    """One port fed in both contexts, FNR0 3 and FNR1 1: the program's two routes say 3 and 1 frames
    (each its own context's FNR), in the dump and the JSON with the port's two counts."""
    ram = Ram()
    npu = ram.attach(Npu())
    raw_engine(npu, 0, 0x3410_0000, 16, write=False)
    raw_engine(npu, 1, 0x3410_0100, 16, write=True)
    npu.write(DSTSTRENG(1), 1 | LINK_STRENG(0) << 1 | 3 << 8 | 1 << 16 | LINK_STRENG(0) << 17 | 1 << 24)
    npu.write(STRENG(1) + CTRL, npu.read(STRENG(1) + CTRL) | EN)
    npu.write(STRENG(0) + CTRL, npu.read(STRENG(0) + CTRL) | EN)
    program, = npu.programs
    assert [(r.context, r.frames) for r in program.routes] == [(0, 3), (1, 1)]
    assert [(r["frames"], r["switch"]) for r in program.as_dict()["routes"]] == [(3, [3, 1]), (1, [3, 1])]
    assert "STRENG0 -> STRENG1.in0 ctx0 frames=3" in program.text()
    assert "STRENG0 -> STRENG1.in0 ctx1 frames=1" in program.text()


def test_a_writer_fed_fewer_items_than_it_writes_stops_in_one_line():
    npu = Ram().attach(Npu())
    copy_program(npu, read_sizes=SIZE_16)
    npu.write(STRENG(1) + CTRL, npu.read(STRENG(1) + CTRL) | EN)
    with pytest.raises(NpuStop) as e:
        npu.write(STRENG(0) + CTRL, npu.read(STRENG(0) + CTRL) | EN)
    assert str(e.value) == ("hardware chain 1: STRENG1 (data movement: 16 items written, 8 read) is not modelled "
                            "(NPU_MODEL=control runs on with its outputs zeroed)")


def test_an_unmodelled_unit_is_named_in_the_stop_line():
    npu = Ram().attach(Npu())
    npu.epoch_label = lambda: "epoch 3"
    raw_engine(npu, 0, 0x3410_0000, 64, write=False)
    raw_engine(npu, 2, 0x3410_0100, 64, write=True)
    npu.write(DSTACTIV(0), route(LINK_STRENG(0)))
    npu.write(DSTSTRENG(2), route(LINK_ACTIV(0)))
    for unit in (STRENG(0), STRENG(2)):
        npu.write(unit + CTRL, npu.read(unit + CTRL) | EN)
    with pytest.raises(NpuStop) as e:
        npu.write(ACTIV(0) + CTRL, EN)
    assert str(e.value) == "epoch 3: ACTIV0: CTRL.TYPE=RELU is not modelled (NPU_MODEL=control runs on with its " \
                           "outputs zeroed)"


def decompression_epoch(npu):
    """STRENG0 feeds DECUN1's data port, STRENG1 its second port, DECUN1 feeds STRENG2, which
    writes 64 bytes at 0x3410_0100 (ll_aton.h's DECUN_DST/DECUN_SRC ports)."""
    npu.epoch_label = lambda: "epoch 5"
    raw_engine(npu, 0, 0x3410_0000, 64, write=False)
    raw_engine(npu, 1, 0x3410_0040, 16, write=False)
    raw_engine(npu, 2, 0x3410_0100, 64, write=True)
    npu.write(DSTDECUN(1, 0), route(LINK_STRENG(0)))
    npu.write(DSTDECUN(1, 1), route(LINK_STRENG(1)))
    npu.write(DSTSTRENG(2), route(LINK_DECUN(1)))
    npu.write(DECUN(1) + CTRL, EN | 1 << 2)              # EN, DUALIN
    for unit in (STRENG(2), STRENG(1)):
        npu.write(unit + CTRL, npu.read(unit + CTRL) | EN)


def test_an_epoch_enabling_the_decompression_unit_stops_in_one_line_naming_it_and_what_is_missing():
    ram = Ram()
    ram.data[0x100:0x140] = b"\x5a" * 64
    npu = ram.attach(Npu())
    decompression_epoch(npu)
    with pytest.raises(NpuStop) as e:
        npu.write(STRENG(0) + CTRL, npu.read(STRENG(0) + CTRL) | EN)
    assert str(e.value) == ("epoch 5: DECUN1 is not modelled: decompression, its codebook and codeword formats "
                            "(BFORMAT, DFORMAT, FFORMAT) are not public (NPU_MODEL=control runs on with its outputs "
                            "zeroed)")
    assert ram.data[0x100:0x140] == b"\x5a" * 64        # no byte written


def test_a_decompression_epoch_in_control_mode_zeroes_its_output_and_lists_it_not_computed():
    ram = Ram()
    ram.data[0x100:0x140] = b"\x5a" * 64
    npu = ram.attach(Npu(mode="control"))
    decompression_epoch(npu)
    npu.write(STRENG(0) + CTRL, npu.read(STRENG(0) + CTRL) | EN)
    assert ram.data[0x100:0x140] == bytes(64)
    assert npu.not_computed == [{"epoch": "epoch 5", "units": ["DECUN1"], "engine": "STRENG2", "first": 0x3410_0100,
                                 "end": 0x3410_0140, "bytes": 64, "location": ""}]


def test_control_mode_runs_to_the_end_with_the_outputs_zeroed_and_says_so():
    memory = Memory()
    npu = Npu(memory, mode="control")
    npu.read_memory = Ram().read
    copy_program(npu, n=20, read_sizes=SIZE_16)
    npu.write(STRENG(1) + EVENT, EN_OFLOW_FRM)           # the writer's end interrupt, as ST's runtime enables it
    npu.write(INTCTRL + CTRL, EN)
    npu.write(INTORMSK0, 0x3FF)                          # stream-engine events only through the AND mask
    npu.write(INTANDMSK0, ~(1 << 1) & 0xFFFFFFFF)        # wait for STRENG1
    lines = []
    npu.lines[0] = lines.append
    for i in (1, 0):
        npu.write(STRENG(i) + CTRL, npu.read(STRENG(i) + CTRL) | EN)
    assert memory.writes == [(0x3410_0100, bytes(20))]
    assert npu.read(INTREG) == 0b10 and lines == [True]
    assert not npu.read(STRENG(1) + CTRL) & RUNNING
    assert npu.not_computed == [{"epoch": "hardware chain 1",
                                 "units": ["STRENG1 (data movement: 20 items written, 10 read)"],
                                 "engine": "STRENG1", "first": 0x3410_0100, "end": 0x3410_0114, "bytes": 20,
                                 "location": ""}]
    npu.write(INTCLR, 0b10)
    assert npu.read(INTREG) == 0 and lines == [True, False]
    assert npu.cycles == START_CYCLES + 20 // BUS_BYTES + 1          # the busiest engine: 20 bytes


def test_the_or_mask_raises_a_line_on_any_unmasked_bit_and_intset_sets_bits():
    npu = Npu()
    lines = []
    npu.lines[2] = lines.append
    npu.write(INTCTRL + CTRL, EN)
    npu.write(0x1014 + 8, ~(1 << 28) & 0xFFFFFFFF)       # INTORMSK2: EPOCHCTRL0 only
    npu.write(INTSET, 1 << 5)
    assert lines == []
    npu.write(INTSET, 1 << 28)
    assert lines == [True] and npu.read(INTREG) == 1 << 28 | 1 << 5


def test_a_scheduled_chain_runs_until_its_time_has_passed():
    pending = []
    npu = Npu(Memory(), mode="control")
    npu.schedule = lambda cycles, done: pending.append((cycles, done))
    copy_program(npu, n=800)
    npu.write(STRENG(1) + EVENT, EN_OFLOW_FRM)
    for i in (0, 1):
        npu.write(STRENG(i) + CTRL, npu.read(STRENG(i) + CTRL) | EN)
    assert [c for c, _ in pending] == [START_CYCLES + 800 // BUS_BYTES]
    assert npu.read(STRENG(1) + CTRL) & RUNNING and npu.read(INTREG) == 0
    pending[0][1]()
    assert not npu.read(STRENG(1) + CTRL) & RUNNING and npu.read(INTREG) == 0b10


@pytest.mark.parametrize("reader, writer, intreg", [
    (0, 0, 0),                                      # EVENT at reset
    (EN_ILLCFG, EN_ILLCFG, 0),                      # ST's blobs: the illegal-configuration interrupt alone
    (EN_ILLCFG, EN_OFLOW_FRM | EN_ILLCFG, 0b10),    # ST's runtime (ll_aton.c): the writer's frame end
    (EN_OFLOW_FRM, EN_OFLOW_FRM, 0b11)])
def test_an_engine_raises_its_end_interrupt_only_where_its_event_register_enables_it(reader, writer, intreg):
    """Both engines' IRQ.RAW_OFLOW_FRM flag their frame end; INTREG has the bit of those whose
    EVENT.EN_OFLOW_FRM is set. Writing the flag back clears it (the runtime's acknowledgement); a
    flag left set is status, not in the next chain's program."""
    npu = Ram().attach(Npu())
    copy_program(npu)
    npu.write(STRENG(0) + EVENT, reader)
    npu.write(STRENG(1) + EVENT, writer)
    for i in (1, 0):
        npu.write(STRENG(i) + CTRL, npu.read(STRENG(i) + CTRL) | EN)
    assert npu.read(INTREG) == intreg
    assert [npu.read(STRENG(i) + IRQ) for i in (0, 1)] == [RAW_OFLOW_FRM] * 2
    npu.write(STRENG(1) + IRQ, RAW_OFLOW_FRM)
    assert npu.read(STRENG(1) + IRQ) == 0 and npu.read(STRENG(0) + IRQ) == RAW_OFLOW_FRM
    for enable in (0, EN):
        for i in (1, 0):
            npu.write(STRENG(i) + CTRL, npu.read(STRENG(i) + CTRL) & ~EN | enable)
    first, again = npu.programs
    assert again.units == first.units and "IRQ" not in again.units[0].registers


def raster_copy(npu, written=24):
    """The one program of a copy: STRENG0 reads a 4x3 raster of 2-byte pixels, 8 bytes apart, lines
    40 bytes apart (24 bytes at 0x34100000); STRENG1 writes `written` bytes raw at 0x34101000."""
    npu.write(STRENG(0) + ADDR, 0x3410_0000)
    npu.write(STRENG(0) + FSIZE, 4 | 3 << 16)
    npu.write(STRENG(0) + DEPTH, 2 | 8 << 16)
    npu.write(STRENG(0) + STRD, 40)
    npu.write(STRENG(0) + CTRL, SINGLE | SIZE0_8)
    raw_engine(npu, 1, 0x3410_1000, written, write=True)
    npu.write(DSTSTRENG(1), route(LINK_STRENG(0)))
    for i in (0, 1):
        npu.write(STRENG(i) + CTRL, npu.read(STRENG(i) + CTRL) | EN)
    program, = npu.programs
    return program


def test_the_program_names_units_fields_routes_and_footprints():
    npu = Npu(Memory(), mode="control")
    npu.locate = lambda address: "AXISRAM2" if address >> 20 == 0x341 else None
    program = raster_copy(npu)
    assert [u.name for u in program.units] == ["STRENG0", "STRENG1"]
    assert program.unit("STRENG1").registers["CTRL"]["DIR"] == 1
    assert program.unit("STRENG0").registers["FSIZE"] == {"WIDTH": 4, "HEIGHT": 3}
    assert [(r.source, r.dest, r.port, r.context) for r in program.routes] == [("STRENG0", "STRENG1", 0, 0)]
    read, write = program.footprints
    assert read.segments == [(0x3410_0000 + 40 * y + 8 * x, 2) for y in range(3) for x in range(4)]
    assert (write.segments, write.location) == ([(0x3410_1000, 24)], "AXISRAM2")
    assert "route      STRENG0 -> STRENG1.in0 ctx0" in program.text()
    assert json.loads(json.dumps(program.as_dict()))["streams"][0]["bytes"] == 24


def test_the_table_reads_back_as_written_and_a_bad_line_names_its_place():
    with open(TABLE) as f:
        body = [line for line in f.read().splitlines() if line and not line.startswith("#")]
    assert aton_map().lines() == body
    with pytest.raises(ValueError, match=r"^t.txt:2: cannot read 'CTRL zero"):
        AtonMap.parse("unit STRENG 10 0x5000 0x1000\n  CTRL zero 0 EN:0:1\n", "t.txt")


# -- epoch-controller blobs through the same register model --------------------------------------

EPOCHCTRL = 0x1E000
EC_ADDR, EC_IRQ, EC_LABEL = 0x8, 0xC, 0x1C
BLOB_AT = 0x3410_2000


def copy_blob():
    """The copy program as blob commands (block index = offset >> 12), then a poll of STRENG1's
    RUNNING bit for 0, a label and the irq."""
    from npu_model.ecblob import BURSTWRITEINC, IRQ, LABEL, POLL, WRITE, WRITEFIELD, Command
    commands = []
    for i, (address, direction) in enumerate(((0x3410_0000, 0), (0x3410_0100, DIR))):
        block = STRENG(i) >> 12
        commands += [Command(BURSTWRITEINC, block, ADDR // 4, (address, 16)),
                     Command(WRITE, block, 0, (RAW | SINGLE | SIZE0_8 | direction,))]
    commands += [Command(WRITE, 4, DSTSTRENG(1) % 0x1000 // 4, (route(LINK_STRENG(0)),)),
                 Command(WRITEFIELD, STRENG(1) >> 12, 0, (1,), 0, 0),
                 Command(WRITEFIELD, STRENG(0) >> 12, 0, (1,), 0, 0),
                 Command(POLL, STRENG(1) >> 12, 0, (0, 100), 31, 31),
                 Command(LABEL, number=7), Command(IRQ)]
    return commands


def test_an_epoch_controller_blob_runs_through_the_register_model_to_its_interrupt():
    from npu_model.ecblob import blob_bytes
    ram = Ram()
    ram.write(BLOB_AT, blob_bytes(copy_blob()))
    ram.write(0x3410_0000, bytes(range(100, 116)))
    npu = ram.attach(Npu(mode="control"))
    writes = []
    write = npu.write
    npu.write = lambda offset, value: (writes.append((offset, value)), write(offset, value))[1]
    npu.write(EPOCHCTRL + EC_ADDR, BLOB_AT)
    npu.write(EPOCHCTRL + CTRL, EN)
    assert npu.read(INTREG) >> 28 & 1 and npu.read(EPOCHCTRL + EC_IRQ) & 1 and npu.read(EPOCHCTRL + EC_LABEL) == 7
    assert not npu.read(EPOCHCTRL + CTRL) & RUNNING
    assert len(npu.programs) == 1 and ram.read(0x3410_0100, 16) == bytes(range(100, 116))
    # the blob's register writes are the direct program's, in order
    direct = Ram().attach(Npu(mode="control"))
    expected = []
    dwrite = direct.write
    direct.write = lambda offset, value: (expected.append((offset, value)), dwrite(offset, value))[1]
    copy_program(direct)
    for i in (1, 0):
        direct.write(STRENG(i) + CTRL, direct.read(STRENG(i) + CTRL) | EN)
    assert writes[2:] == expected and len(expected) == 9


def test_a_blob_polling_for_what_never_happens_stops_in_one_line():
    from npu_model.ecblob import POLL, Command, blob_bytes
    data = blob_bytes([Command(POLL, STRENG(3) >> 12, 0, (1, 100), 31, 31)])
    npu = Npu(mode="control")
    npu.read_memory = lambda address, n: data[address - BLOB_AT:address - BLOB_AT + n]
    npu.epoch_label = lambda: "epoch 9"
    npu.write(EPOCHCTRL + EC_ADDR, BLOB_AT)
    with pytest.raises(NpuStop, match=r"^epoch 9: the blob polls STRENG3.CTRL \[31:31\] for 0x1, which nothing"):
        npu.write(EPOCHCTRL + CTRL, EN)


def test_an_inference_after_a_stopped_one_runs_its_blob():
    """A board serves many inferences: the stop line of one (a blob polling for what never
    happens, in control mode) is not the next one's, which runs its own blob to its interrupt."""
    from npu_model.ecblob import POLL, Command, blob_bytes
    ram = Ram()
    ram.write(BLOB_AT, blob_bytes([Command(POLL, STRENG(3) >> 12, 0, (1, 100), 31, 31)]))
    npu = ram.attach(Npu(mode="control"))
    npu.write(EPOCHCTRL + EC_ADDR, BLOB_AT)
    with pytest.raises(NpuStop):
        npu.write(EPOCHCTRL + CTRL, EN)
    npu.write(EPOCHCTRL + CTRL, 0)
    ram.write(BLOB_AT, blob_bytes(copy_blob()))
    ram.write(0x3410_0000, bytes(range(100, 116)))
    npu.begin_inference()
    npu.write(EPOCHCTRL + CTRL, EN)
    assert npu.stopped is None and npu.read(EPOCHCTRL + EC_IRQ) & 1 and len(npu.programs) == 1
    assert ram.read(0x3410_0100, 16) == bytes(range(100, 116))


def test_items_of_bits_that_are_not_whole_bytes_stop_naming_the_engine():
    strd = aton_map().units["STRENG"].registers["STRD"]
    npu = Ram().attach(Npu())
    copy_program(npu)
    for i in (0, 1):                                     # 8-bit items on both sides, with a 4-bit gap
        npu.write(STRENG(i) + strd.offset, strd.field("FGAP").put(0, 4))
    npu.write(STRENG(1) + CTRL, npu.read(STRENG(1) + CTRL) | EN)
    with pytest.raises(NpuStop, match=r"^hardware chain 1: STRENG1 \(data movement: STRENG0: items of 12 bits "
                                      r"in memory\) is not modelled"):
        npu.write(STRENG(0) + CTRL, npu.read(STRENG(0) + CTRL) | EN)
