"""The gate before any write: where the images go (region fit, overlaps, boot area, alignment),
whether the firmware that will load them accepts them (runtime version, secure, dbg-info, FPU/CPU,
external RAM) and whether its loader installs them (a damaged image), with the loader's error
names. Refusals are N6Errors carrying the numbers."""
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import N6Error
from ..mpool import EXTERNAL_BASE, EXTERNAL_FLASH
from ..board import NO_FIRMWARE, ST_FIRMWARE, Board
from ..releases import DEFAULT_RELEASE, release, release_for_atonn
from ..reloc.check import LoaderError, check_flags, check_image, check_runtime
from ..reloc.firmware import Firmware
from ..reloc.image import MAGIC, Data, Image, PoolDescriptor, align8
from ..reloc.pools import TYPE_COPY, TYPE_RESET


@dataclass(frozen=True)
class Placed:
    """One image at its address; `region` = (name, start, end) it must fit."""
    path: str
    address: int
    size: int
    role: str                # "network" | "params" | "pool" | "header"
    region: tuple[str, int, int]


def _span(p: Placed) -> str:
    return f"{p.size} bytes at 0x{p.address:08X}-0x{p.address + p.size:08X}"


MPOOL_FIX = "move the pool in its .mpool and regenerate"   # a pool's address is network.c's, from the .mpool


def _region_fix(p: Placed, placed: Sequence[Placed], board: Board) -> str:
    """What makes `p` fit its region: a pool, the .mpool; an image, the images' addresses or sizes
    (a split build has params images; a multi-model set, a header and fewer models to flash)."""
    if p.role == "pool":
        return MPOOL_FIX
    fewer = ", or flash fewer models" if any(q.role == "header" for q in placed) else ""
    if p.role == "network" and not any(q.role == "params" for q in placed):
        return f"build with RELOC_SPLIT=1 (params in their own image at [images] params){fewer}"
    return f"place [images] params of {board.path} to give the {p.role} images room{fewer}"


def _overlap_fix(a: Placed, b: Placed, board: Board) -> str:
    """What moves one of two overlapping pieces: an image's address is the board file's, a pool's
    the .mpool's (a pool prepare moved from under a 2.x build's images, RELOC_ABSOLUTE_FLASH_POOLS,
    stays where the .mpool puts it once that is clear of them)."""
    images = [p.role for p in (a, b) if p.role != "pool"]
    if not images:
        return "move one of the pools in its .mpool and regenerate"
    if len(images) == 1:
        return f"{MPOOL_FIX}, or the {images[0]} image in [images] of {board.path}"
    return f"move one of them in [images] of {board.path}"


def check_layout(placed: Sequence[Placed], board: Board) -> None:
    flash = board.flash
    sector = flash.sector_size
    for p in placed:
        align = {"header": flash.page_size, "pool": 1}.get(p.role, sector)    # a pool: where network.c reads it
        if p.address % align:
            raise N6Error(p.path, f"address 0x{p.address:08X} is not aligned to {align // 1024} KB "
                          f"({'page' if p.role == 'header' else 'erase sector'})", "fix the address in the board file")
        name, lo, hi = p.region
        if p.address < lo or p.address + p.size > hi:
            raise N6Error(p.path, f"{_span(p)} does not fit the {name} region 0x{lo:08X}-0x{hi:08X} "
                          f"({hi - lo} bytes; {p.address + p.size - hi if p.address + p.size > hi else lo - p.address}"
                          " bytes over)", _region_fix(p, placed, board))
        if p.address < flash.base or p.address + p.size > flash.end:
            raise N6Error(p.path, f"{_span(p)} is outside the flash 0x{flash.base:08X}-0x{flash.end:08X}",
                          "move the pool into the board's flash in the .mpool and regenerate" if p.role == "pool" else
                          "fix the image addresses in the board file")
        for start, end in flash.no_write:
            first = p.address - p.address % sector      # the programmer erases whole sectors
            if first < end and start < p.address + p.size:
                raise N6Error(p.path, f"{_span(p)} would write the boot area 0x{start:08X}-0x{end:08X} "
                              "(FSBL and applications)", "move the pool out of it in the .mpool and regenerate"
                              if p.role == "pool" else f"place {p.role} images outside it in {board.path}")
    by_sector = sorted(placed, key=lambda p: p.address)
    for a, b in zip(by_sector, by_sector[1:]):
        a_last = (a.address + max(a.size, 1) - 1) // sector
        if b.address // sector <= a_last:
            raise N6Error(b.path, f"{_span(b)} overlaps {a.path} ({_span(a)}) within the same "
                          f"{sector // 1024} KB erase sector" if b.address >= a.address + a.size else
                          f"{_span(b)} overlaps {a.path} ({_span(a)})", _overlap_fix(a, b, board))


def default_firmware(install_release: str) -> Firmware:
    """ST's validation firmware of the install: secure, dbg-info on, Cortex-M55 with FPU."""
    return Firmware(install_release)


def board_firmware(board: Board, img: Image) -> tuple[Firmware, str]:
    """The firmware that loads `img` on `board` when no install is at hand (`./n6 check`): the
    board file's [firmware], its own firmware ELF, else ST's validation firmware as ST documents
    it, of the release whose LL_ATON the image carries (ST's default release when the image names
    one ST never released). (Firmware, what it is, for the report)."""
    from .validation_firmware import board_cpu_part, read_firmware
    if board.firmware is not None:
        return board.firmware, f"{board.name}: the [firmware] of {board.path}"
    if board.validation.firmware not in (ST_FIRMWARE, NO_FIRMWARE):
        return read_firmware(board.validation.firmware, board_cpu_part(board)), \
            f"{board.name}: {board.validation.firmware}"
    rel = release_for_atonn(img.rt_ctx.ll_aton_version) if img.rt_ctx else None
    core = rel.core if rel else DEFAULT_RELEASE
    fw = default_firmware(core)
    return fw, (f"{board.name}: ST's validation firmware of ST Edge AI Core {core} as documented (LL_ATON "
                f"{'.'.join(map(str, fw.version))}, secure, dbg-info, async)")  # type: ignore[arg-type]  # a release's: known


def parse_image(path: str, data: Data, params: Data | None = None) -> Image:
    """The image (with its split `params`), or ST's error for anything without its magic."""
    if len(data) < 96 or int.from_bytes(data[:4], "little") != MAGIC:
        raise N6Error(path, f"Invalid magic value - {int.from_bytes(data[:4], 'little'):x} instead {MAGIC:x}",
                      "flash a network_rel.bin built by this project")
    return Image.parse(data, path, params=params)


def check_firmware(path: str, data: Data, firmware: Firmware, ext_ram_budget: int | None, where: str,
                   img: Image | None = None) -> list[str]:
    """Refuse an image the firmware's loader would refuse, or crash on. Returns warnings. A fact
    of `firmware` that is None is not known and not checked. `img`: `data` parsed already."""
    fw_rel = release(firmware.release)   # type: ignore[arg-type]  # a gate's firmware names its release
    named = f" ({firmware.source})" if firmware.source else ""
    fix = (f"rebuild the image for the firmware, or describe the firmware in [firmware] of {where}" +
           (" (it is read from the install's validation firmware now)" if firmware.source else ""))
    img = img or parse_image(path, data)
    words = img.header.n_words
    if words != fw_rel.header_words:
        img_rel = "2.x" if words == 24 else "3.x"
        consequence = ("ST's loader takes rt_ctx from a code word and reads past the image (bus fault, no error)"
                       if words < fw_rel.header_words else "the loader refuses it (INVALID_BIN)")
        raise N6Error(path, f"ST Edge AI {img_rel} image ({4 * words}-byte header) for a {fw_rel.core} firmware"
                      f"{named} ({fw_rel.header_size}-byte header): {consequence}", fix)
    rt = img.rt_ctx
    if rt is None:
        raise N6Error(path, "no runtime context in the image (INVALID_BIN)", "rebuild the image")
    try:       # the loader's own checks of the image against the firmware (n6.reloc.check)
        notes = check_flags(img.header.flags, firmware)
        check_runtime(rt.rt_version, rt.rt_c_struct_sizes, firmware)
    except LoaderError as e:
        how = {"secure": "build with RELOC_SECURE=0, or ",
               "dbg_info": f"build with RELOC_DBG_INFO={int(bool(firmware.dbg_info))}, or "}.get(e.fact, "")  # type: ignore[arg-type]  # no fact: no hint
        raise N6Error(path, f"{e.detail}{named}: {e.name}", how + fix) from None
    warnings = [f"{path}: {note} (the loader warns, installs)" for note in notes]
    need = (rt.ext_ram_sz + 7) & ~7
    if ext_ram_budget is not None and need > ext_ram_budget:
        raise N6Error(path, f"Model requires more external RAM than available {need} > {ext_ram_budget}",
                      "reduce the model's external-RAM pool, or raise RELOC_EXT_RAM_SIZE for a board with more PSRAM")
    return warnings


def check_installs(path: str, data: Data, params: Data | None = None, img: Image | None = None) -> Image:
    """The bytes about to be written, as the loader checks and installs them (n6.reloc.check, XIP
    and COPY): an image changed after the build checked it (a flipped byte, a file cut short) is
    refused here, not found by the board. `img`: `data` (with `params`) parsed already. Returns
    the image the checker accepted, parsed."""
    try:
        try:
            img = img or Image.parse(data, path, params=params)
        except N6Error as e:       # shorter than its header says: the loader's INVALID_BIN
            raise LoaderError("INVALID_BIN", e.problem) from None
        check_image(data, params, Firmware.matching(img))
    except LoaderError as e:
        raise N6Error(path, f"rejected by the image checker: {e}", "build it again: `scons`") from None
    return img


def flash_pools(img: Image) -> list[tuple[PoolDescriptor, bytes]]:
    """The image's absolute pools in the memory-mapped external flash (COPY descriptors there): the
    loader cannot write the flash, so their bytes must be on the board at their own address, as
    ST's static deployments flash the pool's `.raw`. [(descriptor, its bytes)]."""
    return [(d, bytes(img.params[d.foff:d.foff + d.size])) for d in img.descriptors
            if d.type == TYPE_COPY and EXTERNAL_FLASH[0] <= d.dst < EXTERNAL_FLASH[1]]


def check_external_pools(path: str, img: Image, board: Board, ext_exec_ram: tuple[int, int] | None = None) -> None:
    """Absolute pools in external RAM (COPY/RESET descriptors: the loader writes them at their own
    address) are legal in a relocatable image when they lie in the board's external RAM, clear of
    what the loader itself puts there: the relocatable RW pool at the start of `external_ram`
    (align8(ext_ram_sz) bytes) and, for an `-ext` firmware, the model's exec RAM (`ext_exec_ram`
    = (base, bytes used) or None)."""
    span, ext = board.memory.external_ram_span, board.memory.external_ram
    taken = []
    if img.rt_ctx and img.rt_ctx.ext_ram_sz:
        taken.append(("the loader's relocatable external-RAM pool", ext.base, ext.base + align8(img.rt_ctx.ext_ram_sz)))
    if ext_exec_ram:
        taken.append(("the -ext firmware's exec RAM", ext_exec_ram[0], ext_exec_ram[0] + ext_exec_ram[1]))
    for d in img.descriptors:
        kind = d.flags >> 24
        if (kind not in (TYPE_COPY, TYPE_RESET) or d.dst < EXTERNAL_BASE
                or EXTERNAL_FLASH[0] <= d.dst < EXTERNAL_FLASH[1]):
            continue
        lo, hi = d.dst, d.dst + align8(d.size)
        pool = f"absolute pool '{d.name}' at 0x{lo:08X}-0x{hi:08X} ({hi - lo} bytes)"
        if not span.size or lo < span.base or hi > span.end:
            where = (f"the board's external RAM 0x{span.base:08X}-0x{span.end:08X}" if span.size else
                     "the board's external RAM (it has none)")
            raise N6Error(path, f"{pool} is outside {where}",
                          f"move the pool in the .mpool, or describe the RAM in [memory] external_ram_device of "
                          f"{board.path}")
        for what, a, b in taken:
            if lo < b and a < hi:
                raise N6Error(path, f"{pool} overlaps {what} 0x{a:08X}-0x{b:08X} ({min(hi, b) - max(lo, a)} bytes)",
                              "move the pool in the .mpool above it, or make it USEMODE_RELATIVE")
