"""Host-side image checker: a model of ST's loader (`ll_aton_reloc_install`, reloc-format.md §3.2)
that does what the loader does, in its order and with its 32-bit arithmetic, on a memory holding
only what the loader is given: the image and its params (read-only), the exec RAM it asks for, the
external RAM the image declares and the pools' destinations. An access anywhere else is a refusal
(INVALID_BIN): on the board it faults or overwrites the application's memory. Failures carry the
loader's error-code names. Then our own rules (layout.py) refuse damage the loader lets through,
and the params blob size and CRC-32 stored in rt_ctx must match the params installed with."""
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from ..mpool import EXTERNAL_BASE, EXTERNAL_FLASH
from .firmware import Firmware
from .image import (MAGIC, MAX_DESCRIPTORS, SEG_FLASH, SEG_PARAM0, SEG_PARAM1, SEG_RAM, Data, Header, Image,
                    PoolDescriptor, align8, c_string, detect_header_words, off, seg)
from .layout import Damaged, check_layout
from .pools import ATTR_CACHEABLE, ATTR_WRITE, DATA_ACTIV, DATA_MIXED, DATA_PARAM, TYPE_COPY, TYPE_RELOC, TYPE_RESET

Region = Data | memoryview   # a mapped region: a bytearray is writable, the others read-only
ERROR_CODES = {"NONE": 0, "INVALID_BIN": -1, "MEMORY": -2, "NOT_SUPPORTED": -3, "ARG": -4, "INVALID_HDL": -5,
               "INSTALL": -6, "PARAM_ADDR": -7, "PARAM_DESC": -8, "PARAMS_CRC": -100}
MODE_XIP, MODE_COPY, MODE_CLEAR = 1, 2, 4
FILE_ADDR, PARAMS_ADDR = 0x7100_0000, 0x7180_0000   # where the board keeps image and split params
U32 = 0xFFFF_FFFF   # the loader's address arithmetic wraps at 32 bits


class LoaderError(Exception):
    """`name`: the loader's error code; `rule`: set when the refusal is one of our own rules
    (layout.py, the params CRC-32), not something ST's loader checks or faults on."""

    def __init__(self, name: str, detail: str, rule: str | None = None, fact: str | None = None) -> None:
        self.name, self.code, self.detail, self.rule = name, ERROR_CODES[name], detail, rule
        self.fact = fact      # the firmware fact the image does not match (Firmware's field), if that is why
        super().__init__(f"{self.label}: {detail}")

    @property
    def label(self) -> str:
        """The loader's error name and code where ST's loader gives it, else our rule's name."""
        return f"{self.name} ({self.code})" if self.rule is None else f"n6 rule '{self.rule}' (ST's loader installs it)"


@dataclass
class Config:
    """`ll_aton_reloc_config`: where the application lets the loader put the model."""
    exec_ram_addr: int = 0x3406_0000
    exec_ram_size: int = 640 * 1024
    ext_ram_addr: int = 0x9010_0000
    ext_ram_size: int = 27 * 1024 * 1024
    ext_param_addr: int = 0
    mode: int = MODE_XIP | MODE_CLEAR
    exec_ram_assumed: bool = False     # exec_ram_size is not the firmware's own figure (an -ext firmware has more)


class InstallMemory:
    """Sparse byte-addressed memory: mapped regions, created on first write where asked. Every
    access is checked before any byte moves, so a wrapped or huge length costs nothing."""

    def __init__(self) -> None:
        self.regions: list[tuple[int, Region]] = []

    def map(self, base: int, data: Region) -> None:
        """Map `data` at `base`; bytes/memoryview regions are read-only and never copied."""
        self.regions.append((base, data))

    def find(self, addr: int, n: int) -> tuple[Region | None, int]:
        for base, buf in self.regions:
            if base <= addr and addr + n <= base + len(buf):
                return buf, addr - base
        return None, 0

    def read(self, addr: int, n: int, what: str = "memory") -> bytes:
        if not n:
            return b""
        buf, at = self.find(addr, n)
        if buf is None:
            if self._touches_a_file(addr, n):   # on the board: what lies next in flash, no fault
                raise LoaderError("INVALID_BIN", f"{what}: read of {n} bytes at 0x{addr:08X}, beyond the image or "
                                  "params file", rule="past_file")
            raise LoaderError("INVALID_BIN", f"{what}: read of {n} bytes at 0x{addr:08X}, outside the image and "
                              "the memory the loader is given")
        return bytes(buf[at:at + n])

    def _touches_a_file(self, addr: int, n: int) -> bool:
        """Whether [addr, addr + n) overlaps a read-only region or lies within 8 bytes of it."""
        return any(not isinstance(buf, bytearray) and addr < base + len(buf) + 8 and base - 8 < addr + n
                   for base, buf in self.regions)

    def _writable(self, addr: int, n: int, what: str, create: bool) -> tuple[bytearray, int]:
        buf, at = self.find(addr, n)
        if buf is None and create and addr + n <= 1 << 32:
            self.map(addr, bytearray(n))
            buf, at = self.find(addr, n)
        if buf is None:
            raise LoaderError("INVALID_BIN", f"{what}: write of {n} bytes at 0x{addr:08X}, outside the memory the "
                              "loader is given")
        if not isinstance(buf, bytearray):
            raise LoaderError("INVALID_BIN", f"{what}: write of {n} bytes into read-only 0x{addr:08X}")
        return buf, at

    def write(self, addr: int, data: bytes, create: bool = False, what: str = "memory") -> None:
        if len(data):
            buf, at = self._writable(addr, len(data), what, create)
            buf[at:at + len(data)] = data

    def fill(self, addr: int, n: int, create: bool = False, what: str = "memory") -> None:
        """memset(addr, 0, n)."""
        if n:
            buf, at = self._writable(addr, n, what, create)
            buf[at:at + n] = bytes(n)

    def copy(self, dst: int, src: int, n: int, create: bool = False, what: str = "memory") -> None:
        """memcpy(dst, src, n)."""
        self.write(dst, self.read(src, n, what), create, what)

    def u32(self, addr: int, what: str = "memory") -> int:
        return struct.unpack("<I", self.read(addr, 4, what))[0]

    def set_u32(self, addr: int, value: int, what: str = "memory") -> None:
        self.write(addr, struct.pack("<I", value), what=what)


@dataclass
class Installed:
    mode: str
    ro_base: int
    ram_base: int
    param0: int
    param1: int
    memory: InstallMemory
    warnings: list[str] = field(default_factory=list)
    got_words: int = 0
    rel_sites: int = 0


def check_flags(flags: int, fw: Firmware) -> list[str]:
    """§3.2 step 2, the flags word against the firmware and the CPU; returns the warnings."""
    major, minor = flags >> 28, (flags >> 24) & 0xF
    if major != 8 and minor != 0:   # the loader's test: either matching is enough
        raise LoaderError("INVALID_BIN", f"reloc runtime version {major}.{minor} is not 8.0")
    if flags & 0xFFF != fw.cpu_part:
        raise LoaderError("INVALID_BIN", f"built for CPU part 0x{flags & 0xFFF:03X}, the firmware runs on "
                          f"0x{fw.cpu_part:03X}", fact="cpu_part")
    if flags >> 12 & 1 and not fw.fpu:
        raise LoaderError("INVALID_BIN", "built for an FPU the firmware does not enable (CPACR)", fact="fpu")
    warnings = []
    secure = bool(flags >> 20 & 1)
    if secure and fw.secure is False:
        raise LoaderError("INVALID_BIN", "secure image (-mcmse) for a non-secure firmware", fact="secure")
    if fw.secure and not secure:
        warnings.append("non-secure image on a secure firmware")
    if fw.dbg_info is not None and bool(flags >> 21 & 1) != fw.dbg_info:
        raise LoaderError("INVALID_BIN", f"dbg-info {'on' if flags >> 21 & 1 else 'off'} but the firmware's is "
                          f"{'on' if fw.dbg_info else 'off'}", fact="dbg_info")
    if fw.async_mode is not None and bool(flags >> 22 & 1) != fw.async_mode:
        raise LoaderError("INVALID_BIN", "runtime mode (async) differs between image and firmware", fact="async_mode")
    return warnings


def check_runtime(rt_version: int, struct_sizes: int, fw: Firmware) -> None:
    """§3.2 step 2, rt_ctx's runtime version and C-struct sizes (one byte each) against the firmware's."""
    if fw.version is not None:
        major, minor, micro = fw.version
        if rt_version & 0xFFFFFF00 != (major << 24 | minor << 16 | micro << 8):
            raise LoaderError("INVALID_BIN", "runtime {}.{}.{} but the firmware's LL_ATON is {}.{}.{}".format(
                rt_version >> 24, (rt_version >> 16) & 0xFF, (rt_version >> 8) & 0xFF, major, minor, micro),
                fact="version")
    want = fw.expected_struct_sizes
    if want is not None and struct_sizes & 0xFFFF != want & 0xFFFF:
        raise LoaderError("INVALID_BIN", f"sizeof(LL_Buffer_InfoTypeDef) / sizeof(EpochBlock_ItemTypeDef) are "
                          f"{struct_sizes & 0xFF} / {struct_sizes >> 8 & 0xFF} in the image, {want & 0xFF} / "
                          f"{want >> 8 & 0xFF} in the firmware", fact="struct_sizes")


def check_params_size(img: Image, params: Data | memoryview) -> None:
    """Our rule: a split params file is the params blob rt_ctx declares, preceded by nothing but
    the epoch-controller blobs of an image built with --ecblob-in-params (the image declares no
    size for them, but points at where the params blob starts after them: a GOT or REL word into
    param segment 0, or the file offset of the first COPY pool's bytes): bytes before the params shift
    every pool the loader rebases or copies."""
    assert img.rt_ctx is not None   # check_layout refuses an image whose rt_ctx is not in its data
    before = len(params) - img.rt_ctx.params_bin_sz
    copied = min((d.foff for d in img.descriptors if d.type == TYPE_COPY), default=None)
    if before and before != copied and before not in img.params_references():
        raise LoaderError("INVALID_BIN", f"the params file is {len(params)} bytes: {before} bytes before the "
                          f"{img.rt_ctx.params_bin_sz}-byte params blob rt_ctx declares, not the image's "
                          "epoch-controller blobs (the image does not point there)", rule="params_size")


def check_params_words(img: Image, params: Data | memoryview, split: bool = False) -> None:
    """Our addition: rt_ctx's params size / CRC-32 describe the raw params blob (and a `split`
    params file holds nothing else but EC blobs: check_params_size)."""
    assert img.rt_ctx is not None   # as check_params_size
    size = img.rt_ctx.params_bin_sz
    if split:
        check_params_size(img, params)
    params = memoryview(params)
    raw = params[len(params) - size:] if size <= len(params) else params   # EC blobs come first
    if size != len(raw) or img.rt_ctx.params_bin_crc32 != zlib.crc32(raw):
        raise LoaderError("PARAMS_CRC", f"rt_ctx says {img.rt_ctx.params_bin_sz} bytes, CRC-32 "
                          f"0x{img.rt_ctx.params_bin_crc32:08X}; the params hold {len(raw)} bytes, CRC-32 "
                          f"0x{zlib.crc32(raw):08X}", rule="params_crc")


def _name(data: Data, addr: int) -> str:
    return repr(c_string(data, off(addr))) if seg(addr) == SEG_FLASH and off(addr) < len(data) else f"0x{addr:08X}"


def _prepare_pools(mem: InstallMemory, data: Data, file_addr: int, h: Header, cfg: Config,
                   warnings: list[str]) -> int:
    """`_ai_reloc_prepare_mpools`: the params base, then each descriptor's checks, copy or clear;
    returns the base of param segment 0."""
    addr0 = cfg.ext_param_addr
    if not addr0 and not h.params_offset:
        raise LoaderError("PARAM_ADDR", "no params: split image installed without ext_param_addr")
    addr0 = addr0 or (file_addr + off(h.params_offset)) & U32
    if addr0 % 4:
        raise LoaderError("PARAM_ADDR", "params address not 4-aligned")
    table = (file_addr + off(off(h.params_start) + off(h.data_data))) & U32
    param0 = 0
    for i in range(MAX_DESCRIPTORS):
        at = table + i * PoolDescriptor.SIZE
        name, flags = struct.unpack("<2I", mem.read(at, 8, "pool descriptors"))
        if not flags or not name:
            break
        foff, dst, size = struct.unpack("<3I", mem.read(at + 8, 12, "pool descriptors"))
        what = f"pool {_name(data, name)}"
        length, src = align8(size) & U32, (addr0 + foff) & U32
        kind, dtype, attr, pool_id = flags >> 24, (flags >> 16) & 0xFF, (flags >> 8) & 0xFF, flags & 0xFF
        if kind == TYPE_RELOC and pool_id == 0:
            if attr & ATTR_CACHEABLE and addr0 <= EXTERNAL_BASE:
                raise LoaderError("PARAM_ADDR", f"cacheable {what} needs params above 0x60000000")
            if dtype == DATA_MIXED or attr & ATTR_WRITE:
                raise LoaderError("PARAM_DESC", f"{what}: RELOC id 0 must be read-only params")
            if dtype == DATA_PARAM:
                param0 = src
        elif kind == TYPE_RELOC and pool_id == 1:
            ext = cfg.ext_ram_addr
            if (attr & ATTR_CACHEABLE and ext <= EXTERNAL_BASE) or not ext or cfg.ext_ram_size < length:
                raise LoaderError("PARAM_ADDR", f"{what} needs {length} bytes of external RAM above 0x60000000")
            if dtype == DATA_MIXED:
                mem.copy(ext, src, length, what=what)
            elif dtype == DATA_ACTIV and cfg.mode & MODE_CLEAR:
                mem.fill(ext, length, what=what)
        elif kind == TYPE_RELOC:
            raise LoaderError("PARAM_DESC", f"{what}: RELOC id {pool_id}")
        elif kind == TYPE_COPY and EXTERNAL_FLASH[0] <= dst < EXTERNAL_FLASH[1]:
            # memory-mapped NOR: the loader's copy has no effect there (built on request only)
            mem.read(src, length, what)
            clash = f", over the image at 0x{file_addr:08X}" if dst < file_addr + len(data) and \
                file_addr < dst + length else ""
            warnings.append(f"COPY {what} targets read-only flash 0x{dst:08X}..0x{dst + length:08X}{clash}: "
                            "the loader cannot write there")
        elif kind == TYPE_COPY:
            mem.copy(dst, src, length, create=True, what=what)
        elif kind == TYPE_RESET and cfg.mode & MODE_CLEAR:
            mem.fill(dst, length, create=True, what=what)
    else:
        raise LoaderError("INVALID_BIN", "descriptor table not terminated within 10 entries")
    return param0 or addr0


def _rebaser(bases: dict[int, int]) -> Callable[[int, str], int]:
    """The loader's rebase of one GOT or REL word: its segment's base plus its offset; 0 stays 0."""
    def rebase(word: int, where: str) -> int:
        base = bases.get(seg(word))
        if base is None:
            if word:
                raise LoaderError("INVALID_BIN", f"{where}: word 0x{word:08X} is in no segment the loader rebases")
            return 0
        return (base + off(word)) & U32
    return rebase


def _words(start: int, end: int) -> range:
    """The word addresses a `for (p = start; p < end; p++)` loop visits."""
    return range(start, start + 4 * max(0, (end - start + 3) // 4), 4)


def _check_image(mem: InstallMemory, data: Data, file_addr: int, fw: Firmware) -> tuple[Header, list[str]]:
    """`_ai_reloc_rt_checking`: header, flags, then rt_ctx as the file holds it; (header, warnings)."""
    if not file_addr:
        raise LoaderError("INVALID_BIN", "null image")
    magic = struct.unpack_from("<I", data, 0)[0] if len(data) >= 4 else None
    if magic != MAGIC:
        raise LoaderError("INVALID_BIN", "truncated" if magic is None else f"bad magic 0x{magic:08X}")
    if file_addr % 4:
        raise LoaderError("INVALID_BIN", "image address not 4-aligned")
    n_words = fw.header_words or detect_header_words(data)
    if len(data) < 4 * n_words:
        raise LoaderError("INVALID_BIN", f"truncated: {len(data)} bytes, shorter than a header")
    h = Header.parse(data, n_words)
    warnings = check_flags(h.flags, fw)
    rt = (file_addr + off(h.data_data) + off(h.rt_ctx)) & U32
    check_runtime(mem.u32(rt + 40, "rt_ctx"), mem.u32(rt + 56, "rt_ctx"), fw)
    return h, warnings


def _give_ram(mem: InstallMemory, h: Header, file_addr: int, cfg: Config) -> None:
    """`_ai_reloc_install`'s argument checks, then the RAM the image asks for: exec RAM and the
    external RAM rt_ctx declares (more of either belongs to the application)."""
    need = align8(off(h.bss_end)) + (0 if cfg.mode & MODE_XIP else align8(off(h.data_data)))
    if not need:
        raise LoaderError("INVALID_BIN", "the image asks for no RAM")
    if not cfg.mode & (MODE_XIP | MODE_COPY):
        raise LoaderError("ARG", "mode has neither XIP nor COPY")
    if not cfg.exec_ram_addr or not cfg.exec_ram_size or cfg.exec_ram_size < need:
        raise LoaderError("MEMORY", f"exec RAM of {cfg.exec_ram_size} bytes, {need} needed",
                          rule="exec_ram" if cfg.exec_ram_assumed else None)
    if cfg.ext_ram_addr and cfg.ext_ram_addr % 4:
        raise LoaderError("PARAM_ADDR", "ext RAM not 4-aligned")
    if cfg.exec_ram_addr % 4:
        raise LoaderError("MEMORY", "exec RAM not 4-aligned")
    mem.map(cfg.exec_ram_addr, bytearray(need))
    if cfg.ext_ram_addr:   # the pools' size check uses the whole budget
        try:
            ext_need = align8(mem.u32((file_addr + off(h.data_data) + off(h.rt_ctx) + 32) & U32))
        except LoaderError:
            ext_need = 0
        mem.map(cfg.ext_ram_addr, bytearray(min(cfg.ext_ram_size, ext_need)))


def _load(mem: InstallMemory, h: Header, file_addr: int, cfg: Config) -> tuple[Header, int, int]:
    """COPY: the RO part into exec RAM (the header is read from the copy from then on); then the
    data image and .bss, with the loader's sizes: .bss from the raw words, data is the rest."""
    if cfg.mode & MODE_COPY:
        ro_base = cfg.exec_ram_addr
        mem.copy(ro_base, file_addr, off(h.data_data), what="the RO part")
        ram_base = (ro_base + off(h.data_data)) & U32
        h = Header.parse(mem.read(ro_base, h.size, "the copied header"), h.n_words)
    else:
        ro_base, ram_base = file_addr, cfg.exec_ram_addr
    bss_size = (h.bss_end - h.bss_start) & U32
    mem.copy(ram_base, (file_addr + off(h.data_data)) & U32, (off(h.bss_end) - bss_size) & U32, what="the data image")
    mem.fill((ram_base + off(h.bss_start)) & U32, bss_size, what=".bss")
    return h, ro_base, ram_base


def _relocate(mem: InstallMemory, h: Header, file_addr: int, ro_base: int, ram_base: int, bases: dict[int, int],
              copy_mode: bool) -> tuple[int, int]:
    """R_ARM_GOT_BREL then R_ARM_ABS32: every GOT word, then the word at every REL site (read from
    the file's table) rebased; a site in the RO part only in COPY mode. (GOT words, REL sites)."""
    rebase = _rebaser(bases)
    got = _words((ram_base + off(h.got_start)) & U32, (ram_base + off(h.got_end)) & U32)
    for a in got:
        mem.set_u32(a, rebase(mem.u32(a, "the GOT"), f"GOT at 0x{a:08X}"), "the GOT")
    sites = _words((file_addr + off(h.rel_start)) & U32, (file_addr + off(h.rel_end)) & U32)
    for p in sites:
        site = mem.u32(p, "the REL table")
        where = f"REL site 0x{site:08X}"
        a = ((ro_base if seg(site) == SEG_FLASH else ram_base) + off(site)) & U32
        value = rebase(mem.u32(a, where), where)
        if seg(site) == SEG_FLASH and not copy_mode:
            raise LoaderError("INVALID_BIN", f"{where} in the read-only image (XIP: NOT_SUPPORTED)")
        mem.set_u32(a, value, where)
    return len(got), len(sites)


def install(data: Data, file_addr: int, cfg: Config, fw: Firmware | None = None,
            params: Data | memoryview | None = None, verify_params: bool = True) -> Installed:
    """`ll_aton_reloc_install(file_ptr, config, ...)` on `data` mapped at `file_addr`, step by
    step, then our rules; returns the memory model after installation."""
    fw = fw or Firmware()
    mem = InstallMemory()
    mem.map(file_addr, memoryview(data).toreadonly())
    if cfg is not None and cfg.ext_param_addr:
        mem.map(cfg.ext_param_addr, memoryview(params if params is not None else b"").toreadonly())
    h, warnings = _check_image(mem, data, file_addr, fw)
    if cfg is None:
        raise LoaderError("ARG", "no config")
    _give_ram(mem, h, file_addr, cfg)
    param0 = _prepare_pools(mem, data, file_addr, h, cfg, warnings)
    param1 = cfg.ext_ram_addr
    h, ro_base, ram_base = _load(mem, h, file_addr, cfg)
    copy_mode = bool(cfg.mode & MODE_COPY)
    got_words, rel_sites = _relocate(mem, h, file_addr, ro_base, ram_base, {
        SEG_RAM: ram_base, SEG_FLASH: ro_base, SEG_PARAM0: param0, SEG_PARAM1: param1}, copy_mode)
    rt = (ram_base + off(h.rt_ctx)) & U32
    for i, value in ((3, ro_base), (2, ram_base), (1, file_addr), (0, 1 | (0 if copy_mode else 2))):
        mem.set_u32(rt + 4 * i, value, "rt_ctx")
    for i in (15, 4):   # ll_instance and cbs: the firmware's pointers, written by it (itf_network read)
        mem.set_u32(rt + 4 * i, mem.u32(rt + 4 * i, "rt_ctx"), "rt_ctx")
    mem.u32(rt + 64, "rt_ctx")

    try:
        img = check_layout(data, params, h.n_words)
    except Damaged as e:
        raise LoaderError("INVALID_BIN", e.detail, rule=e.rule) from None
    if verify_params:
        check_params_words(img, params if params is not None else memoryview(data)[h.params_offset:]
                           if h.params_offset else b"", split=params is not None)
    return Installed("COPY" if copy_mode else "XIP", ro_base, ram_base, param0, param1, mem, warnings, got_words,
                     rel_sites)


def check_image(data: Data, params: Data | memoryview | None = None, fw: Firmware | None = None,
                file_addr: int = FILE_ADDR, param_addr: int = PARAMS_ADDR,
                verify_params: bool = True) -> list[Installed]:
    """Install in XIP and in COPY mode; returns both memory models or raises LoaderError.
    `verify_params=False` skips the params CRC-32 (for the packer, which just computed it)."""
    off_at = Header.offset_of("params_offset")
    split = len(data) >= off_at + 4 and struct.unpack_from("<I", data, off_at)[0] == 0
    results = []
    for mode in (MODE_XIP, MODE_COPY):
        cfg = Config(mode=mode | MODE_CLEAR, ext_param_addr=param_addr if split else 0, exec_ram_assumed=True)
        results.append(install(data, file_addr, cfg, fw, params if split else None,
                               verify_params=verify_params and mode == MODE_XIP))
    return results


def check_file(bin_path: str, params_path: str | None = None, verify_params: bool = True,
               fw: Firmware | None = None) -> tuple[Image, list[Installed]]:
    """Check an image (and its split params) against the firmware `fw` that will load it (None:
    one built as the image says, for the build's own check); returns (image, [XIP install, COPY
    install])."""
    img = Image.load(bin_path, params_path)
    split = img.header.params_offset == 0
    return img, check_image(img.data, img.params if split else None, fw or Firmware.matching(img),
                            verify_params=verify_params)
