"""Host-side image checker: the firmware loader's checks in their order (reloc-format.md §3.2),
then a full installation into a memory model in XIP or COPY mode, applying the GOT and REL
relocations. Failures carry the loader's error-code names. One check is ours: the params blob
size and CRC-32 stored in rt_ctx must match the params the image is installed with."""
import struct
import zlib
from dataclasses import dataclass, field

from ..mpool import EXTERNAL_BASE, EXTERNAL_FLASH
from ..nn_interface import struct_sizes_word
from .image import MAGIC, SEG_FLASH, SEG_NULL, SEG_PARAM0, SEG_PARAM1, SEG_RAM, Header, Image, align8, off, seg
from .pools import ATTR_CACHEABLE, ATTR_WRITE, DATA_ACTIV, DATA_MIXED, TYPE_COPY, TYPE_RELOC, TYPE_RESET

ERROR_CODES = {"NONE": 0, "INVALID_BIN": -1, "MEMORY": -2, "NOT_SUPPORTED": -3, "ARG": -4, "INVALID_HDL": -5,
               "INSTALL": -6, "PARAM_ADDR": -7, "PARAM_DESC": -8, "PARAMS_CRC": -100}
MODE_XIP, MODE_COPY, MODE_CLEAR = 1, 2, 4
FILE_ADDR, PARAMS_ADDR = 0x7100_0000, 0x7180_0000   # where the board keeps image and split params


class LoaderError(Exception):
    def __init__(self, name, detail):
        self.name, self.code, self.detail = name, ERROR_CODES[name], detail
        super().__init__(f"{name} ({self.code}): {detail}")


@dataclass
class Firmware:
    """What the loader compares the image with: the firmware's build and the CPU it runs on."""
    cpu_part: int = 0xD22
    fpu_enabled: bool = True
    cmse: bool = True
    dbg_info: bool = True
    async_mode: bool = True
    ll_aton: tuple = (1, 1, 1)
    struct_sizes: int = struct_sizes_word(True)

    @classmethod
    def matching(cls, img, cmse=True):
        """A firmware built from the same release and options as `img` (its intended host)."""
        flags = img.flags
        return cls(cmse=cmse, dbg_info=flags.dbg_info, async_mode=flags.async_mode,
                   ll_aton=img.rt_ctx.ll_aton_version[:3] if img.rt_ctx else (1, 1, 1),
                   struct_sizes=struct_sizes_word(flags.dbg_info))


@dataclass
class Config:
    """`ll_aton_reloc_config`: where the application lets the loader put the model."""
    exec_ram_addr: int = 0x3406_0000
    exec_ram_size: int = 640 * 1024
    ext_ram_addr: int = 0x9010_0000
    ext_ram_size: int = 27 * 1024 * 1024
    ext_param_addr: int = 0
    mode: int = MODE_XIP | MODE_CLEAR


class Memory:
    """Sparse byte-addressed memory: mapped regions, created on first write where asked."""

    def __init__(self):
        self.regions = []

    def map(self, base, data):
        """Map `data` at `base`; bytes/memoryview regions are read-only and never copied."""
        self.regions.append((base, data))

    def find(self, addr, n):
        for base, buf in self.regions:
            if base <= addr and addr + n <= base + len(buf):
                return buf, addr - base
        return None, 0

    def read(self, addr, n):
        buf, at = self.find(addr, n)
        if buf is None:
            raise LoaderError("INVALID_BIN", f"read of {n} bytes at unmapped 0x{addr:08X}")
        return bytes(buf[at:at + n])

    def write(self, addr, data, create=False):
        buf, at = self.find(addr, len(data))
        if buf is None:
            if not create:
                raise LoaderError("INVALID_BIN", f"write of {len(data)} bytes at unmapped 0x{addr:08X}")
            self.map(addr, bytearray(len(data)))
            buf, at = self.find(addr, len(data))
        if not isinstance(buf, bytearray):
            raise LoaderError("INVALID_BIN", f"write of {len(data)} bytes into read-only 0x{addr:08X}")
        buf[at:at + len(data)] = data

    def u32(self, addr):
        return struct.unpack("<I", self.read(addr, 4))[0]

    def set_u32(self, addr, value):
        self.write(addr, struct.pack("<I", value))


@dataclass
class Installed:
    mode: str
    ro_base: int
    ram_base: int
    param0: int
    param1: int
    memory: Memory
    warnings: list = field(default_factory=list)
    got_words: int = 0
    rel_sites: int = 0


def check_environment(img, fw):
    """§3.2 step 2: the image against the firmware and the CPU."""
    h, flags = img.header, img.header.flags
    if h.magic != MAGIC:
        raise LoaderError("INVALID_BIN", f"bad magic 0x{h.magic:08X}")
    major, minor = flags >> 28, (flags >> 24) & 0xF
    if major != 8 and minor != 0:
        raise LoaderError("INVALID_BIN", f"reloc runtime version {major}.{minor} is not 8.0")
    if flags & 0xFFF != fw.cpu_part:
        raise LoaderError("INVALID_BIN", f"built for CPU part 0x{flags & 0xFFF:03X}, this CPU is 0x{fw.cpu_part:03X}")
    if flags >> 12 & 1 and not fw.fpu_enabled:
        raise LoaderError("INVALID_BIN", "image needs the FPU, which is disabled")
    warnings = []
    secure = bool(flags >> 20 & 1)
    if secure and not fw.cmse:
        raise LoaderError("INVALID_BIN", "secure image in a non-secure firmware")
    if fw.cmse and not secure:
        warnings.append("non-secure image in a secure firmware")
    if bool(flags >> 21 & 1) != fw.dbg_info:
        raise LoaderError("INVALID_BIN", "LL_ATON_EB_DBG_INFO differs between image and firmware")
    if bool(flags >> 22 & 1) != fw.async_mode:
        raise LoaderError("INVALID_BIN", "runtime mode (async) differs between image and firmware")
    rt = img.rt_ctx
    if rt is None:
        raise LoaderError("INVALID_BIN", "no runtime context")
    major, minor, micro = fw.ll_aton
    if rt.rt_version & 0xFFFFFF00 != (major << 24 | minor << 16 | micro << 8):
        raise LoaderError("INVALID_BIN", "LL_ATON version {}.{}.{} of the image differs from the firmware's".format(
            rt.rt_version >> 24, (rt.rt_version >> 16) & 0xFF, (rt.rt_version >> 8) & 0xFF))
    if rt.rt_c_struct_sizes != fw.struct_sizes:
        raise LoaderError("INVALID_BIN", f"struct sizes 0x{rt.rt_c_struct_sizes:04X} differ from the firmware's "
                          f"0x{fw.struct_sizes:04X}")
    return warnings


def check_params_words(img, params):
    """Our addition: rt_ctx's params size / CRC-32 describe the raw params blob."""
    size = img.rt_ctx.params_bin_sz
    params = memoryview(params)
    raw = params[len(params) - size:] if size <= len(params) else params   # EC blobs come first
    if size != len(raw) or img.rt_ctx.params_bin_crc32 != zlib.crc32(raw):
        raise LoaderError("PARAMS_CRC", f"rt_ctx says {img.rt_ctx.params_bin_sz} bytes, CRC-32 "
                          f"0x{img.rt_ctx.params_bin_crc32:08X}; the params hold {len(raw)} bytes, CRC-32 "
                          f"0x{zlib.crc32(raw):08X}")


def install(data, file_addr, cfg, fw=None, params=None, verify_params=True):
    """`ll_aton_reloc_install(file_ptr, config, ...)` on `data` mapped at `file_addr`, checks in
    the loader's order; returns the memory model after installation."""
    fw = fw or Firmware()
    if not data or not file_addr:
        raise LoaderError("INVALID_BIN", "null image")
    if file_addr % 4:
        raise LoaderError("INVALID_BIN", "image address not 4-aligned")
    if len(data) < 96 or struct.unpack_from("<I", data, 0)[0] != MAGIC:
        raise LoaderError("INVALID_BIN", "bad magic" if len(data) >= 4 else "truncated")
    try:
        img = Image.parse(data, params=params)
    except Exception as e:   # N6Error for truncation
        raise LoaderError("INVALID_BIN", str(e)) from None
    warnings = check_environment(img, fw)
    if cfg is None:
        raise LoaderError("ARG", "no config")
    if not img.descriptors_terminated:
        raise LoaderError("INVALID_BIN", "descriptor table not terminated within 10 entries")
    if not cfg.mode & (MODE_XIP | MODE_COPY):
        raise LoaderError("ARG", "mode has neither XIP nor COPY")
    xip = bool(cfg.mode & MODE_XIP)
    need = img.xip_size if xip else img.xip_size + align8(img.ro_size)
    if not cfg.exec_ram_addr or not cfg.exec_ram_size or cfg.exec_ram_size < need:
        raise LoaderError("MEMORY", f"exec RAM of {cfg.exec_ram_size} bytes, {need} needed")
    if cfg.ext_ram_addr and cfg.ext_ram_addr % 4:
        raise LoaderError("PARAM_ADDR", "ext RAM not 4-aligned")
    if cfg.exec_ram_addr % 4:
        raise LoaderError("MEMORY", "exec RAM not 4-aligned")

    mem = Memory()
    mem.map(file_addr, data)
    h = img.header
    if cfg.ext_param_addr:
        base_p = cfg.ext_param_addr
        mem.map(base_p, params if params is not None else b"")
    elif h.params_offset:
        base_p = file_addr + h.params_offset
    else:
        raise LoaderError("PARAM_ADDR", "no params: split image installed without ext_param_addr")
    if base_p % 4:
        raise LoaderError("PARAM_ADDR", "params address not 4-aligned")
    if params is None:
        params = memoryview(data)[h.params_offset:] if h.params_offset else b""
    if verify_params:
        check_params_words(img, params)
    mem.map(cfg.exec_ram_addr, bytearray(cfg.exec_ram_size))
    if cfg.ext_ram_addr:   # model only the part the image can touch; the size check uses the real budget
        mem.map(cfg.ext_ram_addr, bytearray(min(cfg.ext_ram_size, align8(img.rt_ctx.ext_ram_sz))))
    param0 = 0
    for d in img.descriptors:
        src, length = base_p + d.foff, align8(d.size)
        attr = (d.flags >> 8) & 0xFF
        if d.type == TYPE_RELOC and d.pool_id == 0:
            if attr & ATTR_CACHEABLE and base_p <= EXTERNAL_BASE:
                raise LoaderError("PARAM_ADDR", f"cacheable pool {d.name} needs params above 0x60000000")
            if (d.flags >> 16) & 0xFF == DATA_MIXED or attr & ATTR_WRITE:
                raise LoaderError("PARAM_DESC", f"pool {d.name}: RELOC id 0 must be read-only params")
            param0 = src
        elif d.type == TYPE_RELOC and d.pool_id == 1:
            if (attr & ATTR_CACHEABLE and cfg.ext_ram_addr <= EXTERNAL_BASE) or not cfg.ext_ram_addr or \
                    cfg.ext_ram_size < length:
                raise LoaderError("PARAM_ADDR", f"pool {d.name} needs {length} bytes of external RAM above 0x60000000")
            if (d.flags >> 16) & 0xFF == DATA_MIXED:
                mem.write(cfg.ext_ram_addr, mem.read(src, length))
            elif (d.flags >> 16) & 0xFF == DATA_ACTIV and cfg.mode & MODE_CLEAR:
                mem.write(cfg.ext_ram_addr, bytes(length))
        elif d.type == TYPE_RELOC:
            raise LoaderError("PARAM_DESC", f"pool {d.name}: RELOC id {d.pool_id}")
        elif d.type == TYPE_COPY and EXTERNAL_FLASH[0] <= d.dst < EXTERNAL_FLASH[1]:
            # memory-mapped NOR: the loader's copy has no effect there (built on request only)
            clash = f", over the image at 0x{file_addr:08X}" if d.dst < file_addr + len(data) and \
                file_addr < d.dst + length else ""
            warnings.append(f"COPY pool {d.name} targets read-only flash 0x{d.dst:08X}..0x{d.dst + length:08X}{clash}: "
                            "the loader cannot write there")
        elif d.type == TYPE_COPY:
            mem.write(d.dst, mem.read(src, length), create=True)
        elif d.type == TYPE_RESET and cfg.mode & MODE_CLEAR:
            mem.write(d.dst, bytes(length), create=True)
    param1 = cfg.ext_ram_addr

    ro_size = img.ro_size
    if xip:
        ro_base, ram_base = file_addr, cfg.exec_ram_addr
    else:
        ro_base, ram_base = cfg.exec_ram_addr, cfg.exec_ram_addr + ro_size
        mem.write(ro_base, memoryview(data)[:ro_size])
    bss = off(h.bss_end) - off(h.bss_start)
    mem.write(ram_base, memoryview(data)[ro_size:ro_size + off(h.bss_end) - bss])
    mem.write(ram_base + off(h.bss_start), bytes(bss))
    bases = {SEG_RAM: ram_base, SEG_FLASH: ro_base, SEG_PARAM0: param0, SEG_PARAM1: param1}

    def rebase(word, where):
        s = seg(word)
        if s == SEG_NULL:
            return 0
        if s not in bases:
            raise LoaderError("INVALID_BIN", f"{where}: word 0x{word:08X} has unknown segment 0x{s:X}")
        return bases[s] + off(word)

    got = range(ram_base + off(h.got_start), ram_base + off(h.got_end), 4)
    for a in got:
        mem.set_u32(a, rebase(mem.u32(a), f"GOT at 0x{a:08X}"))
    sites = img.rel_sites
    for site in sites:
        if seg(site) == SEG_FLASH:
            if xip:
                raise LoaderError("INVALID_BIN", f"REL site 0x{site:08X} in the read-only image (XIP: NOT_SUPPORTED)")
            a = ro_base + off(site)
        elif seg(site) == SEG_RAM:
            a = ram_base + off(site)
        else:
            raise LoaderError("INVALID_BIN", f"REL site 0x{site:08X} in segment 0x{seg(site):X}")
        mem.set_u32(a, rebase(mem.u32(a), f"REL site 0x{site:08X}"))
    rt = ram_base + off(h.rt_ctx)
    for i, value in ((0, 1 | (2 if xip else 0)), (1, file_addr), (2, ram_base), (3, ro_base)):
        mem.set_u32(rt + 4 * i, value)
    return Installed("XIP" if xip else "COPY", ro_base, ram_base, param0, param1, mem, warnings, len(got), len(sites))


def check_image(data, params=None, fw=None, file_addr=FILE_ADDR, param_addr=PARAMS_ADDR, verify_params=True):
    """Install in XIP and in COPY mode; returns both memory models or raises LoaderError.
    `verify_params=False` skips the params CRC-32 (for the packer, which just computed it)."""
    off_at = Header.offset_of("params_offset")
    split = len(data) >= off_at + 4 and struct.unpack_from("<I", data, off_at)[0] == 0
    results = []
    for mode in (MODE_XIP, MODE_COPY):
        cfg = Config(mode=mode | MODE_CLEAR, ext_param_addr=param_addr if split else 0)
        results.append(install(data, file_addr, cfg, fw, params if split else None, verify_params=verify_params and mode == MODE_XIP))
    return results


def check_file(bin_path, params_path=None, verify_params=True):
    """Check an image (and its split params) against the firmware it is built for; returns
    (image, [XIP install, COPY install])."""
    img = Image.load(bin_path, params_path)
    split = img.header.params_offset == 0
    return img, check_image(img.data, img.params if split else None, Firmware.matching(img),
                            verify_params=verify_params)
