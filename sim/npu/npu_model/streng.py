"""A stream engine's addressing: which bytes it reads or writes, in which order, and how its
memory items become the words it sends on the stream switch (and back). Facts from ATON.h's
STRENG fields and from what LL_ATON's `LL_Streng_TensorInit` writes into them; the stated model:

- ADDR: the first byte of frame 0.
- RAW, FSIZE: raw mode, FSIZE items back to back in a frame.
- RAW_OUT (a reader's output marked raw on the switch) changes neither its items nor their order:
  ST sets it on 13 of the samples' feature readers, raw ones and nucleo_mnv1 epoch 29's raster
  one, whose DEEPMODE convolution is 99.40% exact against LiteRT so.
- raster mode: FSIZE.HEIGHT lines STRD.LOFF bytes apart, each FSIZE.WIDTH pixels DEPTH.OFFSET
  bytes apart, each DEPTH.SIZE consecutive items (LOFF and OFFSET widened by CID_CACHE.LOFF_MSB
  and LIMITEN.DOFF_MSB).
- SINGLE, LIMIT: one frame, else LIMIT frames.
- FOFFSET, FRAME_RPT, FRPTOFF: frame k starts at ADDR + (k // FRAME_RPT) * FRPTOFF
  + (k % FRAME_RPT) * FOFFSET (k * FOFFSET when FRAME_RPT is 0).
- CONT: continuous, frame k + 1 starts one item past the last item of frame k.
- NOINC: the frame start does not move, every frame read from ADDR again (its items in order):
  ST's Pad memset reads its constant so.
- LIMITEN.ADDRLIMIT, LIMITADDR: the last byte the engine may touch; an item beyond it stops the run.
- SIZE0..2: the data bits of an item on the switch word's three 8-bit channels, channel k its
  bits 8k..8k+7 (channel 0 least significant); the item's data bits, least significant first,
  fill channel 0's SIZE0 bits, then channel 1's, then channel 2's.
- LSBMODE: a channel's bits sit at its low end; else at its high end (ll_aton.c: "the DMA
  stuffs the bits to the left of the channel").
- SIGNEXT: on read, a low-aligned value is sign-extended to the whole word.
- STRD.FGAP, BGAP: bits of the memory item around the data, FGAP above it (most significant),
  BGAP below; a memory item is FGAP + data + BGAP bits, little-endian.

So an item of whole bytes is the low bytes of the word in both alignments, and ll_aton.c's
left-aligned forms (SIZE0 the remainder, or the data in channel 1 only: 8 bits into 16) put the
data at the top of the channels it reaches: the word a unit reads at its own width, from the low
end (compute.py). Judged by ST's ll_aton.c built for the host (tests/test_npu_streng_st.py): for
every form LL_Streng_TensorInit writes (1..24 bits in and out, both directions and alignments,
gaps on either side) the data lands contiguous, at bit 0 (align_right) or at the top of the
nbits_out container, where its comments place it (the model before, data at the top of a 24-bit
word with channel 0 most significant, splits every non-byte item and fails them). The real
samples' items (8, 16 and 24 bits left aligned; 8 into 8 or 16 bits right aligned, sign
extended) are whole bytes: on them this is compute.py's former lane model, with which both
samples compute end to end.

An item of a writing engine takes its data bits from the word the same way and writes its gaps as
zero. Not modelled (a `NotModelled` naming the field): memory items that are not whole bytes,
more than 24 data bits, sub-sampling, descriptors, position swaps.

Judged against ST's software (tests/test_npu_streng_st.py): raw reads and writes of 8, 16 and
24-bit items within their address limits; raster writes of 1 and 2 items per pixel, a frame per
channel, in FRAME_RPT loops (one in the samples, several with our shapes of 2 and 3 batches);
NOINC in Pad's memset (with a constant of 1.5 besides the samples' 0: the items of a frame move
on, the frames do not). Gaps, alignment between widths, sign extension and CONT follow the
fields' descriptions only: no public sample uses them in a DMA-only chain."""
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .fixedpoint import NotModelled, signed

STREAM_BITS = 24                                # the switch's word: three 8-bit channels
SPAN_LIMIT = 64 << 20                           # bytes one engine's accesses may spread over
UNMODELLED_CTRL = ("SUBSAMPLE", "DESCR", "ISTART")
POS_RESET = {"POS0": 0, "POS1": 1, "POS2": 2, "WSWAP": 0, "HSWAP": 0, "BSWAP": 0}


@dataclass(frozen=True)
class StreamEngine:
    name: str                   # STRENG3
    writes: bool                # DIR: switch → memory
    address: int
    raw: bool
    items: int                  # raw: FSIZE items per frame
    width: int
    height: int
    depth: int                  # items per pixel
    depth_offset: int           # bytes between pixels
    line_offset: int
    frames: int
    frame_offset: int
    frame_repeat: int
    repeat_offset: int
    continuous: bool
    no_increment: bool
    limit: int | None           # last byte it may touch
    sizes: tuple                # SIZE0, SIZE1, SIZE2
    front_gap: int
    back_gap: int
    low_aligned: bool           # LSBMODE
    sign_extend: bool
    unmodelled: str = ""        # the first field set that this model does not follow

    @classmethod
    def from_fields(cls, name, f):
        """From {register: {field: value}} of every STRENG register (units.unit_fields)."""
        ctrl, strd, limiten = f["CTRL"], f["STRD"], f["LIMITEN"]
        unmodelled = next((k for k in UNMODELLED_CTRL if ctrl[k]), "")
        unmodelled = unmodelled or next((k for k, v in POS_RESET.items() if f["POS"][k] != v), "")
        return cls(
            name=name, writes=bool(ctrl["DIR"]), address=f["ADDR"]["REG"], raw=bool(ctrl["RAW"]),
            items=f["FSIZE"]["WIDTH"] | f["FSIZE"]["HEIGHT"] << 16,
            width=f["FSIZE"]["WIDTH"], height=f["FSIZE"]["HEIGHT"], depth=f["DEPTH"]["SIZE"],
            depth_offset=f["DEPTH"]["OFFSET"] | limiten["DOFF_MSB"] << 16,
            line_offset=strd["LOFF"] | f["CID_CACHE"]["LOFF_MSB"] << 16,
            frames=1 if ctrl["SINGLE"] else max(1, f["LIMIT"]["CNT"]),
            frame_offset=f["FOFFSET"]["REG"], frame_repeat=f["FRAME_RPT"]["REG"],
            repeat_offset=f["FRPTOFF"]["REG"], continuous=bool(ctrl["CONT"]), no_increment=bool(ctrl["NOINC"]),
            limit=f["LIMITADDR"]["REG"] if limiten["ADDRLIMIT"] else None,
            sizes=(ctrl["SIZE0"], ctrl["SIZE1"], ctrl["SIZE2"]), front_gap=strd["FGAP"], back_gap=strd["BGAP"],
            low_aligned=bool(ctrl["LSBMODE"]), sign_extend=bool(ctrl["SIGNEXT"]), unmodelled=unmodelled)

    @classmethod
    def tensor(cls, name, writes, address, bits, *, raw=True, items=0, width=0, height=0, depth=1,
               depth_offset=0, line_offset=0, frames=1, frame_offset=0, frame_repeat=0, repeat_offset=0,
               limit=None):
        """The engine LL_Streng_TensorInit configures for items of `bits` (8, 16 or 24) on both
        sides, left aligned, from its init struct's fields (ll_aton.h's names: fwidth, fheight,
        batch_depth, batch_offset, line_offset (0: fwidth * batch_offset), frame_offset,
        loop_offset, frame_loop_cnt, frame_tot_cnt; `limit`, the last byte offset_limit allows)."""
        return cls(name=name, writes=writes, address=address, raw=raw, items=items, width=width, height=height,
                   depth=depth, depth_offset=depth_offset, line_offset=line_offset or width * depth_offset,
                   frames=frames, frame_offset=frame_offset, frame_repeat=frame_repeat, repeat_offset=repeat_offset,
                   continuous=False, no_increment=False, limit=limit,
                   sizes=tuple(8 if bits > 8 * k else 0 for k in range(3)), front_gap=0, back_gap=0,
                   low_aligned=False, sign_extend=False)

    @property
    def data_bits(self):
        return sum(self.sizes)

    @property
    def item_bits(self):
        return self.front_gap + self.data_bits + self.back_gap

    @property
    def item_bytes(self):
        return max(1, -(-self.item_bits // 8))

    @cached_property
    def channels(self):
        """[(first data bit, first word bit, bits)] of each channel an item's data fills."""
        out, at = [], 0
        for k, bits in enumerate(self.sizes):
            if bits:
                out.append((at, 8 * k + (0 if self.low_aligned else 8 - bits), bits))
                at += bits
        return out

    @cached_property
    def word_bits(self):
        """The word bits up to the top of the data (sign extension starts above them)."""
        return max((pos + bits for _, pos, bits in self.channels), default=0)

    def to_words(self, data):
        """Items' data bits (int64 array) → their stream words."""
        if all(at == pos for at, pos, _ in self.channels):
            return data                                 # the data bits at bit 0 on: the common case
        return sum((data >> at & ((1 << bits) - 1)) << pos for at, pos, bits in self.channels)

    def from_words(self, words):
        """Stream words (int64 array) → the data bits an item of this engine takes from them."""
        if all(at == pos for at, pos, _ in self.channels):
            return words & ((1 << self.data_bits) - 1)
        return sum((words >> pos & ((1 << bits) - 1)) << at for at, pos, bits in self.channels)

    @property
    def count(self):
        """Items per frame."""
        return self.items if self.raw else self.width * self.height * self.depth

    def frame_offsets(self):
        """Byte offsets of one frame's items from the frame's start, in access order."""
        item = self.item_bytes
        if self.raw:
            return np.arange(self.count, dtype=np.int64) * item
        y = np.arange(self.height, dtype=np.int64)[:, None, None] * self.line_offset
        x = np.arange(self.width, dtype=np.int64)[None, :, None] * self.depth_offset
        d = np.arange(self.depth, dtype=np.int64)[None, None, :] * item
        return (y + x + d).ravel()

    def frame_starts(self, offsets):
        """The address each frame starts at, given one frame's item offsets."""
        k = np.arange(self.frames, dtype=np.int64)
        if self.no_increment:
            return self.address + 0 * k
        if self.continuous:
            return self.address + k * (int(offsets[-1]) + self.item_bytes if offsets.size else 0)
        if self.frame_repeat:
            loop, frame = k // self.frame_repeat, k % self.frame_repeat
            return self.address + loop * self.repeat_offset + frame * self.frame_offset
        return self.address + k * self.frame_offset

    @cached_property
    def item_addresses(self):
        """The first byte of every item the engine touches, in access order (int64 array)."""
        offsets = self.frame_offsets()
        return (self.frame_starts(offsets)[:, None] + offsets[None, :]).ravel()

    @cached_property
    def span(self):
        """(first, end) of the bytes the items touch."""
        a = self.item_addresses
        return (int(a.min()), int(a.max()) + self.item_bytes) if a.size else (self.address, self.address)

    @cached_property
    def memory_index(self):
        """(dtype, index) gathering the items from the bytes of the span: whole items when every
        item starts a multiple of its size past span[0] (the common case), else single bytes, low
        byte first."""
        n = self.item_bytes
        if self.raw and (self.frames == 1 or self.continuous and not self.no_increment) and n in (1, 2, 4):
            return f"<u{n}", slice(0, self.item_addresses.size)        # back to back: one stretch
        offsets = self.item_addresses - self.span[0]
        if n == 1:
            return "u1", offsets
        if n in (2, 4) and not (offsets % n).any():
            return f"<u{n}", offsets // n
        return "u1", (offsets[:, None] + np.arange(n)).ravel()

    def segments(self):
        """[(address, bytes)] of the item accesses in order, contiguous runs merged."""
        a = self.item_addresses
        if not a.size:
            return []
        n = self.item_bytes
        breaks = np.flatnonzero(a[1:] != a[:-1] + n) + 1
        starts = np.concatenate(([0], breaks)).tolist()
        ends = np.concatenate((breaks, [a.size])).tolist()
        first = a[starts].tolist()
        return [(f, (e - s) * n) for f, s, e in zip(first, starts, ends)]

    def check(self):
        """NotModelled when this model does not follow the configuration or an item crosses the
        address limit."""
        if self.unmodelled:
            raise NotModelled(f"{self.name}: {self.unmodelled}")
        if self.item_bits % 8 or self.item_bits > 32:
            raise NotModelled(f"{self.name}: items of {self.item_bits} bits in memory")
        if self.data_bits > STREAM_BITS or not self.data_bits:
            raise NotModelled(f"{self.name}: {self.data_bits} data bits per item")
        lo, hi = self.span
        if self.limit is not None and hi - 1 > self.limit:
            raise NotModelled(f"{self.name}: an item at 0x{hi - self.item_bytes:08X} lies beyond its address "
                              f"limit 0x{self.limit:08X}")
        if hi - lo > SPAN_LIMIT:
            raise NotModelled(f"{self.name}: accesses spread over {hi - lo} bytes")


def configured_engine(aton, regs, i):
    """Stream engine i as the register file `regs` ({offset from ATON_BASE: value}) configures it."""
    unit = aton.units["STRENG"]
    base = unit.instance_base(i)
    fields = {r.name: r.split(regs.get(base + r.offset, r.reset)) for r in unit.registers.values()}
    return StreamEngine.from_fields(unit.instance_name(i), fields)


def read_items(engine, read_memory):
    """The stream words (int64 array) a reading engine sends, from `read_memory(address, n)`."""
    engine.check()
    if not engine.item_addresses.size:
        return np.zeros(0, dtype=np.int64)
    lo, hi = engine.span
    dtype, index = engine.memory_index
    items = np.frombuffer(read_memory(lo, hi - lo), dtype=dtype)[index]
    if dtype == "u1" and engine.item_bytes > 1:
        items = _from_bytes(items, engine.item_bytes)
    items = items.astype(np.int64)
    bits = engine.data_bits
    data = items >> engine.back_gap & ((1 << bits) - 1) if engine.item_bits != bits else items
    words = engine.to_words(data)
    if engine.low_aligned and engine.sign_extend:
        words = signed(words, engine.word_bits) & ((1 << STREAM_BITS) - 1)
    return words


def write_items(engine, words, read_memory, write_memory):
    """Write the first items of `words` (stream words) as a writing engine lays them out; the bytes
    between its items keep what `read_memory` gives."""
    engine.check()
    count = engine.item_addresses.size
    if len(words) < count:
        raise NotModelled(f"{engine.name} writes {count} items, its source sends {len(words)}")
    if not count:
        return
    words = np.asarray(words[:count], dtype=np.int64)
    items = engine.from_words(words) << engine.back_gap
    lo, hi = engine.span
    dtype, index = engine.memory_index
    memory = bytearray(read_memory(lo, hi - lo))
    n = engine.item_bytes
    np.frombuffer(memory, dtype=dtype)[index] = items.astype(dtype) if dtype != "u1" or n == 1 else _to_bytes(items, n)
    write_memory(lo, memory)


def _from_bytes(raw, n):
    """Little-endian items of n bytes (uint8 array, n bytes each) → uint32."""
    return (raw.reshape(-1, n).astype(np.uint32) << (8 * np.arange(n, dtype=np.uint32))).sum(axis=1)


def _to_bytes(items, n):
    """int64 items → their n low bytes each, little-endian (uint8 array)."""
    return items.astype("<u4").view(np.uint8).reshape(-1, 4)[:, :n].ravel()
