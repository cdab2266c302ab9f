"""The gate before any write: where the images go (region fit, overlaps, boot area, alignment) and
whether the firmware that will load them accepts them (runtime version, secure, dbg-info, FPU/CPU,
external RAM), with the loader's error names. Refusals are N6Errors carrying the numbers."""
from dataclasses import dataclass

from ..board import Firmware
from ..errors import N6Error
from ..releases import release
from ..reloc.image import MAGIC, Image


@dataclass(frozen=True)
class Placed:
    """One image at its address; `region` = (name, start, end) it must fit."""
    path: str
    address: int
    size: int
    role: str                # "network" | "params" | "header"
    region: tuple


def _span(p):
    return f"{p.size} bytes at 0x{p.address:08X}-0x{p.address + p.size:08X}"


def check_layout(placed, board):
    flash = board.flash
    sector = flash.sector_size
    for p in placed:
        align = flash.page_size if p.role == "header" else sector
        if p.address % align:
            raise N6Error(p.path, f"address 0x{p.address:08X} is not aligned to {align // 1024} KB "
                          f"({'page' if p.role == 'header' else 'erase sector'})", "fix the address in the board file")
        name, lo, hi = p.region
        if p.address < lo or p.address + p.size > hi:
            raise N6Error(p.path, f"{_span(p)} does not fit the {name} region 0x{lo:08X}-0x{hi:08X} "
                          f"({hi - lo} bytes; {p.address + p.size - hi if p.address + p.size > hi else lo - p.address}"
                          " bytes over)", "build with RELOC_SPLIT=1 or flash fewer models")
        if p.address < flash.base or p.address + p.size > flash.end:
            raise N6Error(p.path, f"{_span(p)} is outside the flash 0x{flash.base:08X}-0x{flash.end:08X}",
                          "fix the image addresses in the board file")
        for start, end in flash.no_write:
            first = p.address - p.address % sector      # the programmer erases whole sectors
            if first < end and start < p.address + p.size:
                raise N6Error(p.path, f"{_span(p)} would write the boot area 0x{start:08X}-0x{end:08X} "
                              "(FSBL and applications)", f"place {p.role} images outside it in {board.path}")
    by_sector = sorted(placed, key=lambda p: p.address)
    for a, b in zip(by_sector, by_sector[1:]):
        a_last = (a.address + max(a.size, 1) - 1) // sector
        if b.address // sector <= a_last:
            raise N6Error(b.path, f"{_span(b)} overlaps {a.path} ({_span(a)}) within the same "
                          f"{sector // 1024} KB erase sector" if b.address >= a.address + a.size else
                          f"{_span(b)} overlaps {a.path} ({_span(a)})", "move one of them in the board file")


def default_firmware(install_release):
    """ST's validation firmware of the install: secure, dbg-info on, Cortex-M55 with FPU."""
    return Firmware(install_release, True, True, True, 0xD22)


def _version(word):
    return f"{word >> 24}.{(word >> 16) & 0xFF}.{(word >> 8) & 0xFF}"


def check_firmware(path, data, firmware, ext_ram_budget, where):
    """Refuse an image the firmware's loader would refuse, or crash on. Returns warnings."""
    fw_rel = release(firmware.release)
    fix = f"rebuild the image for the firmware, or describe the firmware in [firmware] of {where}"
    if len(data) < 96 or int.from_bytes(data[:4], "little") != MAGIC:
        raise N6Error(path, f"Invalid magic value - {int.from_bytes(data[:4], 'little'):x} instead {MAGIC:x}",
                      "flash a network_rel.bin built by this project")
    img = Image.parse(data, path)
    words = img.header.n_words
    if words != fw_rel.header_words:
        img_rel = "2.x" if words == 24 else "3.x"
        consequence = ("ST's loader takes rt_ctx from a code word and reads past the image (bus fault, no error)"
                       if words < fw_rel.header_words else "the loader refuses it (INVALID_BIN)")
        raise N6Error(path, f"ST Edge AI {img_rel} image ({4 * words}-byte header) for a {fw_rel.core} firmware "
                      f"({fw_rel.header_size}-byte header): {consequence}", fix)
    flags, rt = img.flags, img.rt_ctx
    if rt is None:
        raise N6Error(path, "no runtime context in the image (INVALID_BIN)", "rebuild the image")
    if rt.rt_version & 0xFFFFFF00 != fw_rel.rt_version:
        raise N6Error(path, f"runtime {_version(rt.rt_version)} but the firmware's LL_ATON is "
                      f"{_version(fw_rel.rt_version)} (ST Edge AI {fw_rel.core}): INVALID_BIN", fix)
    if flags.cpuid != firmware.cpu_part:
        raise N6Error(path, f"built for CPU part 0x{flags.cpuid:03X}, the firmware runs on 0x{firmware.cpu_part:03X}: "
                      "INVALID_BIN", fix)
    if flags.fpu and not firmware.fpu:
        raise N6Error(path, "built for an FPU the firmware does not enable (CPACR): INVALID_BIN", fix)
    warnings = []
    if flags.secure and not firmware.secure:
        raise N6Error(path, "secure image (-mcmse) for a non-secure firmware: INVALID_BIN",
                      "build with RELOC_SECURE=0, or " + fix)
    if firmware.secure and not flags.secure:
        warnings.append(f"{path}: non-secure image on a secure firmware (the loader warns, installs)")
    if flags.dbg_info != firmware.dbg_info:
        raise N6Error(path, f"dbg-info {'on' if flags.dbg_info else 'off'} but the firmware's is "
                      f"{'on' if firmware.dbg_info else 'off'}: INVALID_BIN",
                      f"build with RELOC_DBG_INFO={int(firmware.dbg_info)}, or " + fix)
    need = (rt.ext_ram_sz + 7) & ~7
    if ext_ram_budget is not None and need > ext_ram_budget:
        raise N6Error(path, f"Model requires more external RAM than available {need} > {ext_ram_budget}",
                      "reduce the model's external-RAM pool, or raise RELOC_EXT_RAM_SIZE for a board with more PSRAM")
    return warnings
