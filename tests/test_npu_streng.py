"""Stream-engine addressing (sim/npu/npu_model/streng.py) on small synthetic configurations, by
ATON.h field name; the expected bytes come from numpy slicing of the same random tensors."""
import numpy as np
import pytest

from npu_model.fixedpoint import NotModelled
from npu_model.npu import Npu
from npu_model.streng import StreamEngine, read_items, write_items
from npu_model.units import unit_fields

BASE = 0x3410_0000
rng = np.random.default_rng(30)


class Ram:
    def __init__(self, size=1 << 16):
        self.data = bytearray(size)

    def read(self, address, n):
        return bytes(self.data[address - BASE:address - BASE + n])

    def write(self, address, data):
        self.data[address - BASE:address - BASE + len(data)] = data

    def put(self, offset, array):
        self.write(BASE + offset, np.ascontiguousarray(array).tobytes())

    def get(self, offset, n):
        return self.read(BASE + offset, n)


def engine(name="STRENG0", write=False, raw=True, size=(8, 0, 0), address=0, **registers):
    """An engine from ATON.h fields: CTRL's SIZE0..2 from `size`, other registers as given."""
    ctrl = {"DIR": int(write), "RAW": int(raw), "SIZE0": size[0], "SIZE1": size[1], "SIZE2": size[2],
            **registers.pop("CTRL", {})}
    if "LIMIT" not in registers:
        ctrl.setdefault("SINGLE", 1)
    return StreamEngine.from_fields(name, unit_fields("STRENG", {"CTRL": ctrl, "ADDR": {"REG": BASE + address},
                                                                 **registers}))


def raw_reader(nitems, size=(8, 0, 0), address=0, **ctrl):
    return engine(size=size, address=address, FSIZE={"WIDTH": nitems & 0xFFFF, "HEIGHT": nitems >> 16},
                  CTRL=ctrl)


def copy(ram, reader, writer):
    write_items(writer, read_items(reader, ram.read), ram.read, ram.write)


def transpose_writer(shape, out_strides, item, depth=1, address=0x8000):
    """ST's DMA transpose form: the output engine walks the input's order (raster: width = the
    last input axis, lines = the one before, frames = the first two in a frame loop), each step at
    the output's stride of that axis."""
    n, c, h, w = shape
    return engine("STRENG1", write=True, raw=False, size=item, address=address,
                  FSIZE={"WIDTH": w, "HEIGHT": h}, DEPTH={"SIZE": depth, "OFFSET": out_strides[3]},
                  STRD={"LOFF": out_strides[2]}, FOFFSET={"REG": out_strides[1]},
                  FRAME_RPT={"REG": c}, FRPTOFF={"REG": out_strides[0]}, LIMIT={"CNT": n * c})


@pytest.mark.parametrize("perm", [(0, 3, 2, 1), (0, 2, 3, 1), (1, 0, 3, 2)])
def test_a_transpose_of_8_bit_items_lands_as_numpy_transposes(perm):
    x = rng.integers(0, 256, (2, 3, 4, 5), dtype=np.uint8)
    out = np.ascontiguousarray(np.transpose(x, perm))
    strides = np.array(out.strides)[np.argsort(perm)]          # output byte stride of each input axis
    ram = Ram()
    ram.put(0, x)
    copy(ram, raw_reader(x.size), transpose_writer(x.shape, strides, (8, 0, 0)))
    assert ram.get(0x8000, out.size) == out.tobytes()


def test_32_bit_items_move_as_pairs_of_16_bit_ones():
    """ST's transpose of 32-bit tensors: 16-bit items, two per pixel (DEPTH.SIZE 2)."""
    x = rng.integers(-2**31, 2**31, (1, 3, 4, 6), dtype=np.int32)
    out = np.ascontiguousarray(np.transpose(x, (0, 3, 2, 1)))
    strides = np.array(out.strides)[np.argsort((0, 3, 2, 1))]
    ram = Ram()
    ram.put(0, x)
    copy(ram, raw_reader(x.size * 2, size=(8, 8, 0)), transpose_writer(x.shape, strides, (8, 8, 0), depth=2))
    assert ram.get(0x8000, out.nbytes) == out.tobytes()


@pytest.mark.parametrize("size", [(8, 0, 0), (8, 8, 0), (8, 8, 8)])
def test_8_16_24_bit_items_copy_raster_windows(size):
    """A window of a 2-D tensor (lines LOFF apart, pixels DEPTH.OFFSET apart) into a packed one."""
    nbytes = sum(size) // 8
    x = rng.integers(0, 256, (10, 12 * nbytes), dtype=np.uint8)
    pitch = 12 * nbytes
    ram = Ram()
    ram.put(0, x)
    reader = engine(raw=False, size=size, address=2 * pitch + 3 * nbytes, FSIZE={"WIDTH": 4, "HEIGHT": 5},
                    DEPTH={"SIZE": 1, "OFFSET": 2 * nbytes}, STRD={"LOFF": pitch})
    writer = engine("STRENG1", write=True, size=size, address=0x8000, FSIZE={"WIDTH": 20})
    copy(ram, reader, writer)
    want = np.stack([x[2:7, (3 + 2 * k) * nbytes:(4 + 2 * k) * nbytes] for k in range(4)], axis=1)
    assert ram.get(0x8000, 20 * nbytes) == want.tobytes()


def test_frames_in_continuous_mode_follow_each_other():
    """Three raw frames of 5 items: CONT ignores FOFFSET, frame k + 1 starts after frame k."""
    x = rng.integers(0, 256, 15, dtype=np.uint8)
    ram = Ram()
    ram.put(0, x)
    writer = engine("STRENG1", write=True, address=0x100, FSIZE={"WIDTH": 5}, LIMIT={"CNT": 3},
                    FOFFSET={"REG": 64}, CTRL={"CONT": 1})
    copy(ram, raw_reader(15), writer)
    assert ram.get(0x100, 15) == x.tobytes()
    apart = engine("STRENG1", write=True, address=0x200, FSIZE={"WIDTH": 5}, LIMIT={"CNT": 3}, FOFFSET={"REG": 64})
    copy(ram, raw_reader(15), apart)
    assert [ram.get(0x200 + 64 * k, 5) for k in range(3)] == [x[5 * k:5 * k + 5].tobytes() for k in range(3)]


def test_offsets_past_16_bits_take_their_high_halves():
    """LOFF's high half in CID_CACHE.LOFF_MSB, DEPTH.OFFSET's in LIMITEN.DOFF_MSB."""
    e = engine(raw=False, FSIZE={"WIDTH": 2, "HEIGHT": 2}, DEPTH={"SIZE": 1, "OFFSET": 0x10},
               STRD={"LOFF": 0x20}, CID_CACHE={"LOFF_MSB": 1}, LIMITEN={"DOFF_MSB": 2})
    assert (e.item_addresses - BASE).tolist() == [0, 0x20010, 0x10020, 0x30030]


def test_gaps_and_sign_extension_move_the_data_bits():
    """16-bit memory items whose data is the high byte (BGAP 8), read low-aligned with sign
    extension, written as 16-bit items: the int8 high bytes widened to int16."""
    x = rng.integers(-2**15, 2**15, 64, dtype=np.int16)
    ram = Ram()
    ram.put(0, x)
    reader = engine(FSIZE={"WIDTH": 64}, STRD={"BGAP": 8}, CTRL={"LSBMODE": 1, "SIGNEXT": 1})
    writer = engine("STRENG1", write=True, size=(8, 8, 0), address=0x400, FSIZE={"WIDTH": 64}, CTRL={"LSBMODE": 1})
    copy(ram, reader, writer)
    assert ram.get(0x400, 128) == (x >> 8).astype(np.int16).tobytes()
    unsigned = engine(FSIZE={"WIDTH": 64}, STRD={"BGAP": 8}, CTRL={"LSBMODE": 1})
    copy(ram, unsigned, writer)
    assert ram.get(0x400, 128) == (x.view(np.uint16) >> 8).astype(np.int16).tobytes()
    gapped = engine("STRENG1", write=True, address=0x600, FSIZE={"WIDTH": 64}, STRD={"FGAP": 8})
    ram.put(0x800, (x >> 8).astype(np.int8))
    copy(ram, raw_reader(64, address=0x800), gapped)               # 8-bit data in 16-bit items, high byte zero
    assert ram.get(0x600, 128) == (x >> 8 & 0xFF).astype(np.uint16).tobytes()


def test_left_aligned_data_sits_at_the_top_of_the_channels_it_reaches():
    """Without LSBMODE each channel's bits sit at its high end: whole-byte items are the word's
    low bytes (8-bit read, 16-bit written: v), ll_aton.c's 8 bits into 16 (SIZE1 alone) give v << 8,
    and 12 bits from 16-bit items (BGAP 4, SIZE0 the 4-bit remainder) keep their place."""
    x = rng.integers(0, 1 << 16, 32, dtype=np.uint16)
    ram = Ram()
    ram.put(0, x)
    writer = engine("STRENG1", write=True, size=(8, 8, 0), address=0x100, FSIZE={"WIDTH": 32})
    copy(ram, raw_reader(32), writer)
    assert ram.get(0x100, 64) == (x.view(np.uint8)[:32].astype(np.uint16)).tobytes()
    copy(ram, raw_reader(32, size=(0, 8, 0)), writer)
    assert ram.get(0x100, 64) == (x.view(np.uint8)[:32].astype(np.uint16) << 8).tobytes()
    copy(ram, engine(size=(4, 8, 0), FSIZE={"WIDTH": 32}, STRD={"BGAP": 4}), writer)
    assert ram.get(0x100, 64) == (x & 0xFFF0).tobytes()


def test_units_take_words_at_their_width_and_24_bits_as_three_bytes():
    """compute.py's side of a word: an 8-bit item as its byte, with SIGNEXT (and LSBMODE) a word
    a unit reads as the signed value; 8 into 16 bits left aligned as byte << 8; 24-bit data as its
    three bytes, and three values back into one 24-bit item."""
    from npu_model.compute import stream_words, unit_values
    from npu_model.fixedpoint import signed
    ram = Ram()
    ram.put(0, np.array([0x80, 0x01, 0xFF, 0x7F, 0x12, 0x34], dtype=np.uint8))
    values = lambda e: unit_values(e, read_items(e, ram.read)).tolist()
    assert values(raw_reader(4)) == [0x80, 0x01, 0xFF, 0x7F]
    assert signed(np.array(values(raw_reader(4, LSBMODE=1, SIGNEXT=1))), 16).tolist() == [-128, 1, -1, 127]
    assert values(raw_reader(4, size=(0, 8, 0))) == [0x8000, 0x0100, 0xFF00, 0x7F00]
    assert values(raw_reader(2, size=(8, 8, 0))) == [0x0180, 0x7FFF]
    assert values(raw_reader(2, size=(8, 8, 8))) == [0x80, 0x01, 0xFF, 0x7F, 0x12, 0x34]
    writer = engine("STRENG1", write=True, size=(8, 8, 8), address=0x100, FSIZE={"WIDTH": 2})
    words = stream_words(writer, np.array([0x80, 0x01, -1, 0x7F, 0x12, 0x34]))
    write_items(writer, words, ram.read, ram.write)
    assert ram.get(0x100, 6) == bytes([0x80, 0x01, 0xFF, 0x7F, 0x12, 0x34])


def test_no_increment_reads_every_frame_from_the_start_again():
    """NOINC, Pad's memset form: four 16-bit items (a pair of 32-bit constants) a frame, each of
    the 5 frames read from ADDR again whatever FOFFSET says; without NOINC the frames move on."""
    x = rng.integers(0, 256, 40, dtype=np.uint8)
    ram = Ram()
    ram.put(0, x)
    frames = dict(size=(8, 8, 0), FSIZE={"WIDTH": 4}, LIMIT={"CNT": 5}, FOFFSET={"REG": 8})
    writer = engine("STRENG1", write=True, size=(8, 8, 0), address=0x100, FSIZE={"WIDTH": 20})
    copy(ram, engine(CTRL={"NOINC": 1}, **frames), writer)
    assert ram.get(0x100, 40) == np.tile(x[:8], 5).tobytes()
    copy(ram, engine(**frames), writer)
    assert ram.get(0x100, 40) == x.tobytes()


def test_an_item_past_the_address_limit_is_named():
    e = engine(FSIZE={"WIDTH": 16}, LIMITEN={"ADDRLIMIT": 1}, LIMITADDR={"REG": BASE + 14})
    with pytest.raises(NotModelled, match=r"^STRENG0: an item at 0x3410000F lies beyond its address limit "
                                          r"0x3410000E$"):
        e.check()
    engine(FSIZE={"WIDTH": 16}, LIMITEN={"ADDRLIMIT": 1}, LIMITADDR={"REG": BASE + 15}).check()


@pytest.mark.parametrize("registers,why", [({"CTRL": {"SUBSAMPLE": 1}}, "SUBSAMPLE"),
                                           ({"POS": {"BSWAP": 1}}, "BSWAP"),
                                           ({"STRD": {"FGAP": 3}}, "items of 11 bits in memory")])
def test_what_is_not_modelled_is_named(registers, why):
    with pytest.raises(NotModelled, match=f"^STRENG0: {why}$"):
        engine(FSIZE={"WIDTH": 4}, **registers).check()


def test_raw_output_changes_no_item():
    """RAW_OUT (ST's feature readers in both samples, raw and raster) reads as without it."""
    ram = Ram()
    ram.put(0, np.arange(64, dtype=np.uint8))
    assert read_items(raw_reader(8, RAW_OUT=1), ram.read).tolist() == list(range(8))
    raster = dict(raw=False, FSIZE={"WIDTH": 2, "HEIGHT": 2}, DEPTH={"SIZE": 3, "OFFSET": 4}, STRD={"LOFF": 16})
    assert read_items(engine(CTRL={"RAW_OUT": 1}, **raster), ram.read).tolist() == \
        read_items(engine(**raster), ram.read).tolist() == [0, 1, 2, 4, 5, 6, 16, 17, 18, 20, 21, 22]


def test_the_npu_moves_a_transpose_programmed_through_its_registers():
    """The same transpose as register writes (ATON.h offsets): the chain runs it when closed."""
    x = rng.integers(0, 256, (1, 3, 4, 5), dtype=np.uint8)
    out = np.ascontiguousarray(np.transpose(x, (0, 3, 2, 1)))
    strides = np.array(out.strides)[np.argsort((0, 3, 2, 1))]
    ram = Ram()
    ram.put(0, x)
    npu = Npu()
    npu.read_memory, npu.write_memory = ram.read, ram.write
    streng = lambda i, offset, value: npu.write(0x5000 + 0x1000 * i + offset, value)
    streng(0, 0x08, BASE)
    streng(0, 0x0C, x.size)
    streng(1, 0x08, BASE + 0x8000)
    streng(1, 0x0C, 4 << 16 | 5)                                  # FSIZE: HEIGHT 4, WIDTH 5
    streng(1, 0x10, int(strides[3]) << 16 | 1)                     # DEPTH: OFFSET, SIZE 1
    streng(1, 0x14, int(strides[2]))                               # STRD.LOFF
    streng(1, 0x18, int(strides[1]))                               # FOFFSET
    streng(1, 0x1C, 3)                                             # FRAME_RPT
    streng(1, 0x34, 3)                                             # LIMIT
    npu.write(0x4008 + 4, 1 | 0 << 1)                              # DSTSTRENG1 from STRENG0, context 0
    streng(1, 0, 1 | 1 << 3 | 8 << 16)                             # EN, DIR, SIZE0 8
    streng(0, 0, 1 | 1 << 2 | 1 << 8 | 8 << 16)                    # EN, SINGLE, RAW, SIZE0 8
    assert npu.not_computed == [] and len(npu.programs) == 1
    assert ram.get(0x8000, out.size) == out.tobytes()


def test_items_off_their_size_alignment_move_byte_by_byte():
    """16-bit items 3 bytes apart (the model's whole-item gather does not apply)."""
    x = rng.integers(0, 256, 30, dtype=np.uint8)
    ram = Ram()
    ram.put(0, x)
    reader = engine(raw=False, size=(8, 8, 0), FSIZE={"WIDTH": 10, "HEIGHT": 1}, DEPTH={"SIZE": 1, "OFFSET": 3})
    writer = engine("STRENG1", write=True, raw=False, size=(8, 8, 0), address=0x101, FSIZE={"WIDTH": 10, "HEIGHT": 1},
                    DEPTH={"SIZE": 1, "OFFSET": 3})
    copy(ram, reader, writer)
    want = bytearray(30)
    for k in range(10):
        want[3 * k:3 * k + 2] = x[3 * k:3 * k + 2].tobytes()
    assert ram.get(0x101, 30) == bytes(want)
