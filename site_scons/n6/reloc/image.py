"""The `network_rel.bin` format: header, flags word, runtime context, pool descriptors, and the
file-level view (RO part, data image, REL table, params). Parsing and writing live together."""
from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass, field, fields
from typing import Self

from ..atomic import write_bytes
from ..errors import N6Error
from .names import params_path
from .pools import describe_flags

Data = bytes | bytearray | mmap.mmap   # an image's bytes: read, built, or mapped from its file

MAGIC = 0x4E49424E
CODE_MAGIC = b"N6CODE1\0"   # a code image file (CodeImage): this, then the code's size, code and EC blobs
CODE_START = len(CODE_MAGIC) + 4
FAKE_SIZE = 32            # each relocatable pool's placeholder array at the end of .params_<id>
MAX_DESCRIPTORS = 10      # the loader gives up on a table not terminated within 10 entries
SEG_NULL, SEG_FLASH, SEG_RAM, SEG_PARAM0, SEG_PARAM1 = 0x0, 0x2, 0x4, 0x8, 0x9
FLASH_BASE, RAM_BASE = 0x2000_0000, 0x4000_0000
OFFSET_MASK = 0x0FFF_FFFF

COMMON_WORDS = ("magic", "flags", "data_start", "data_end", "data_data", "bss_start", "bss_end", "got_start",
                "got_end", "rel_start", "rel_end", "params_start", "params_offset")
ENTRIES_2 = ("ec_network_init", "ec_inference_init", "input_setter", "input_getter", "output_setter",
             "output_getter", "get_epoch_items", "get_output_buffers_info", "get_input_buffers_info",
             "get_internal_buffers_info", "rt_ctx")
ENTRIES_3 = ENTRIES_2[:-1] + ("weight_encryption_info", "blob_encryption_info", "rt_ctx")
LAYOUTS = {24: COMMON_WORDS + ENTRIES_2, 26: COMMON_WORDS + ENTRIES_3}


def seg(addr: int) -> int:
    return addr >> 28


def off(addr: int) -> int:
    return addr & OFFSET_MASK


def align8(n: int) -> int:
    return (n + 7) & ~7


def align(n: int, a: int) -> int:
    """`n` rounded up to a multiple of `a` (a flash sector, a region)."""
    return (n + a - 1) // a * a


@dataclass
class Header:
    words: dict[str, int]   # field name → u32, in layout order

    @property
    def n_words(self) -> int:
        return len(self.words)

    @property
    def size(self) -> int:
        return 4 * self.n_words

    def __getattr__(self, name: str) -> int:
        try:
            return self.__dict__["words"][name]
        except KeyError:
            raise AttributeError(name) from None

    @classmethod
    def parse(cls, buf: Data, n_words: int | None = None) -> Self:
        n_words = n_words or detect_header_words(buf)
        values = struct.unpack_from(f"<{n_words}I", buf, 0)
        return cls(dict(zip(LAYOUTS[n_words], values)))

    @staticmethod
    def offset_of(name: str) -> int:
        """File offset of a word common to every layout (magic ... params_offset)."""
        return 4 * COMMON_WORDS.index(name)

    def pack(self) -> bytes:
        return struct.pack(f"<{self.n_words}I", *self.words.values())


def detect_header_words(buf: Data) -> int:
    """24 words (2.x) or 26 (3.x): the header ends with rt_ctx, a RAM address."""
    if len(buf) < 104:
        return 24
    w23, w25 = struct.unpack_from("<I", buf, 92)[0], struct.unpack_from("<I", buf, 100)[0]
    return 24 if seg(w23) == SEG_RAM else (26 if seg(w25) == SEG_RAM else 24)


@dataclass(frozen=True)
class Flags:
    vers_major: int
    vers_minor: int
    async_mode: bool
    dbg_info: bool
    secure: bool
    toolchain: int
    float_abi: int
    fpu: bool
    cpuid: int

    TOOLCHAINS = {8: "GCC", 9: "LLVM", 10: "ST_CLANG"}
    FLOAT_ABIS = {0: "soft", 1: "softfp", 2: "hard"}

    @classmethod
    def decode(cls, word: int) -> Self:
        return cls(word >> 28, (word >> 24) & 0xF, bool(word >> 22 & 1), bool(word >> 21 & 1), bool(word >> 20 & 1),
                   (word >> 16) & 0xF, (word >> 13) & 0x3, bool(word >> 12 & 1), word & 0xFFF)

    def encode(self) -> int:
        return (self.vers_major << 28 | self.vers_minor << 24 | self.async_mode << 22 | self.dbg_info << 21 |
                self.secure << 20 | self.toolchain << 16 | self.float_abi << 13 | self.fpu << 12 | self.cpuid)

    def as_dict(self) -> dict[str, object]:
        return {"vers_major": self.vers_major, "vers_minor": self.vers_minor, "secure": self.secure,
                "dbg_info": self.dbg_info, "async_mode": self.async_mode,
                "toolchain": self.TOOLCHAINS.get(self.toolchain, hex(self.toolchain)),
                "float-abi": self.FLOAT_ABIS.get(self.float_abi, str(self.float_abi)), "fpu": self.fpu,
                "cpuid": f"0x{self.cpuid:03X}"}


@dataclass
class RtCtx:
    state: int = 0
    file_addr: int = 0
    ram_addr: int = 0
    rom_addr: int = 0
    cbs: int = 0
    c_name: int = 0
    acts_sz: int = 0
    params_sz: int = 0
    ext_ram_sz: int = 0
    rt_version_desc: int = 0
    rt_version: int = 0
    rt_version_extra: int = 0
    params_bin_sz: int = 0
    params_bin_crc32: int = 0
    rt_c_struct_sizes: int = 0
    ll_instance: int = 0
    itf_network: int = 0

    SIZE = 68
    PARAMS_BIN_SZ_OFFSET = 48     # words 12 and 13

    @property
    def ll_aton_version(self) -> tuple[int, int, int, int]:
        """(major, minor, micro, dev) of the LL_ATON the image was built with."""
        v = self.rt_version
        return v >> 24, (v >> 16) & 0xFF, (v >> 8) & 0xFF, self.rt_version_extra

    @classmethod
    def parse(cls, buf: Data, at: int) -> Self:
        return cls(*struct.unpack_from("<17I", buf, at))

    def pack(self) -> bytes:
        return struct.pack("<17I", *(getattr(self, f.name) for f in fields(self)))


@dataclass
class PoolDescriptor:
    name_addr: int
    flags: int
    foff: int
    dst: int
    size: int
    name: str = ""

    SIZE = 20

    @classmethod
    def parse(cls, buf: Data, at: int) -> Self:
        return cls(*struct.unpack_from("<5I", buf, at))

    def pack(self) -> bytes:
        return struct.pack("<5I", self.name_addr, self.flags, self.foff, self.dst, self.size)

    @property
    def flags_desc(self) -> str:
        return describe_flags(self.flags)

    @property
    def type(self) -> int:
        return self.flags >> 24

    @property
    def pool_id(self) -> int:
        return self.flags & 0xFF


def read_descriptors(buf: Data, at: int) -> tuple[list[tuple[int, PoolDescriptor]], bool]:
    """The pool-descriptor table at `at`: (entries as (offset, descriptor), terminated)."""
    out: list[tuple[int, PoolDescriptor]] = []
    for i in range(MAX_DESCRIPTORS):
        where = at + i * PoolDescriptor.SIZE
        if where + PoolDescriptor.SIZE > len(buf):
            break
        d = PoolDescriptor.parse(buf, where)
        if d.name_addr == 0 or d.flags == 0:
            return out, True
        out.append((where, d))
    return out, False



@dataclass
class CodeImage:
    """What of `network_rel.bin` the linked ELF decides: RO part, data image and REL table
    (`code`; params offset, size and CRC-32 still 0) and the EC blobs that lead the params
    area. Pack adds the params. Stored in one file: CODE_MAGIC, the code's size (u32), the code,
    the EC blobs (one output of the image step, one input of pack: no description beside it)."""
    code: bytes
    ec_blobs: bytes = b""

    @property
    def header(self) -> Header:
        return Header.parse(self.code)

    @property
    def rel_entries(self) -> int:
        h = self.header
        return (off(h.rel_end) - off(h.rel_start)) // 4

    @property
    def got_entries(self) -> int:
        """GOT words, as ST's flow reports them (not the GOT-relative references to them)."""
        h = self.header
        return (off(h.got_end) - off(h.got_start)) // 4

    @property
    def params_words_at(self) -> int:
        """File offset of rt_ctx's params size and CRC-32 words."""
        h = self.header
        return off(h.data_data) + off(h.rt_ctx) + RtCtx.PARAMS_BIN_SZ_OFFSET

    def save(self, path: str) -> None:
        write_bytes(path, CODE_MAGIC + struct.pack("<I", len(self.code)) + self.code + self.ec_blobs)

    @classmethod
    def load(cls, path: str) -> Self:
        with open(path, "rb") as f:
            data = f.read()
        if data[:len(CODE_MAGIC)] != CODE_MAGIC or len(data) < CODE_START:
            raise N6Error(path, "is not a code image", "rebuild: the image step writes it")
        end = CODE_START + struct.unpack_from("<I", data, len(CODE_MAGIC))[0]
        if len(data) < end:
            raise N6Error(path, f"is {len(data)} bytes, its code alone should end at {end}",
                          "rebuild: the image step writes it")
        return cls(data[CODE_START:end], data[end:])



def c_string(buf: Data, at: int, limit: int = 256) -> str:
    end = buf.find(b"\0", at, at + limit)
    return buf[at:end if end >= 0 else at + limit].decode("latin-1")


@dataclass
class Image:
    """A parsed `network_rel.bin` (params may live in a separate split file)."""
    data: Data
    header: Header
    params: Data | memoryview = b""
    descriptors: list[PoolDescriptor] = field(default_factory=list)
    descriptors_terminated: bool = True
    rt_ctx: RtCtx | None = None
    params_file: str | None = None     # the split params file `load` mapped

    @classmethod
    def parse(cls, data: Data, path: str = "network_rel.bin", n_words: int | None = None,
              params: Data | memoryview | None = None) -> Self:
        if len(data) < 96:
            raise N6Error(path, f"truncated: {len(data)} bytes, shorter than a header", "rebuild the image")
        header = Header.parse(data, n_words)
        img = cls(data, header)
        if header.magic != MAGIC:
            return img
        ro = off(header.data_data)
        if ro + off(header.bss_start) > len(data) or off(header.rel_end) > len(data):
            raise N6Error(path, f"truncated: {len(data)} bytes, the header describes more", "rebuild the image")
        rt_at = ro + off(header.rt_ctx)
        if seg(header.rt_ctx) == SEG_RAM and rt_at + RtCtx.SIZE <= len(data):
            img.rt_ctx = RtCtx.parse(data, rt_at)
        entries, img.descriptors_terminated = read_descriptors(data, ro + off(header.params_start))
        for _, d in entries:
            d.name = img.string_at(d.name_addr)
            img.descriptors.append(d)
        if params is not None:
            img.params = params
        elif header.params_offset:
            img.params = memoryview(data)[header.params_offset:]
        return img

    @property
    def flags(self) -> Flags:
        return Flags.decode(self.header.flags)

    @property
    def ro_size(self) -> int:
        return off(self.header.data_data)

    @property
    def rw_size(self) -> int:
        return off(self.header.bss_end)

    @property
    def xip_size(self) -> int:
        return align8(self.rw_size)

    @property
    def copy_size(self) -> int:
        return align8(self.xip_size + self.ro_size)

    @property
    def rel_sites(self) -> list[int]:
        a, b = off(self.header.rel_start), off(self.header.rel_end)
        return list(struct.unpack_from(f"<{(b - a) // 4}I", self.data, a))

    def params_references(self) -> list[int]:
        """The offsets into param segment 0 that GOT words and REL targets hold: with epoch-controller
        blobs in the params area (--ecblob-in-params) the blobs and the params blob after them; an
        image without them holds none."""
        words = [self.ro_size + a for a in range(off(self.header.got_start), off(self.header.got_end), 4)]
        words += [off(s) if seg(s) == SEG_FLASH else self.ro_size + off(s) for s in self.rel_sites]
        values = (struct.unpack_from("<I", self.data, a)[0] for a in words if a + 4 <= len(self.data))
        return sorted({off(v) for v in values if seg(v) == SEG_PARAM0})

    def string_at(self, addr: int) -> str:
        return c_string(self.data, off(addr)) if seg(addr) == SEG_FLASH else ""

    @classmethod
    def load(cls, bin_path: str, params: str | None = None) -> Self:
        """Map an image file and, when given, its split params file (a split image's default: the one
        beside it, names.params_path): read-only, never copied, so tens of MB of params cost no
        memory and only the pages a check touches are read."""
        img = cls.parse(_map(bin_path), bin_path)
        split = img.header.magic == MAGIC and img.header.params_offset == 0
        params = params or (params_path(bin_path) if split else None)
        if params and os.path.exists(params):
            img.params, img.params_file = _map(params), params
        elif split and img.rt_ctx is not None and img.rt_ctx.params_bin_sz:
            raise N6Error(params, f"missing: this split image's params file ({img.rt_ctx.params_bin_sz} "
                          "bytes) is not there", "pass --params <file>, or rebuild the image")
        return img


def _map(path: str) -> bytes | mmap.mmap:
    with open(path, "rb") as f:
        if not os.fstat(f.fileno()).st_size:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
