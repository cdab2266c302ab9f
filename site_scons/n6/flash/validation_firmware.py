"""ST's prebuilt aiValidation reloc firmware of an install: which variant loads an image (one
choice for the flash gate and for starting it on a real board), and what its loader checks, read
from the ELF itself, so the gate judges an image against the firmware that will really load it.

Read from the ELF (pyelftools): the LL_ATON version from the `atonn-v<M>.<m>.<u>-<dev>...`
description the runtime keeps in its loaded data; a secure (CMSE) build from its secure entry
functions (`__acle_se_*`, what every CMSE compiler emits for them); dbg-info and the two struct
sizes the loader compares (`LL_Buffer_InfoTypeDef`, `EpochBlock_ItemTypeDef`) from the DWARF
description of those types; FPU use from the hard-float ABI flag. The CPU part is the board's,
not the firmware's. Exec/external RAM addresses live in the firmware's code, not its data: they
are ST's documented figures below."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..board import NO_FIRMWARE, ST_FIRMWARE, Board
from ..reloc.firmware import Firmware
from ..errors import N6Error
from ..releases import RELEASES
from ..serial_link import BAUDRATE
from ..stedgeai_install import VALIDATION_FIRMWARE_DIR as FIRMWARE_DIR

if TYPE_CHECKING:                 # pyelftools and the image format are read when a firmware is
    from elftools.elf.elffile import ELFFile

    from ..reloc.image import Image, RtCtx

EXEC_RAM = 640 << 10                    # internal exec RAM of the plain firmwares
EXT_EXEC_RAM = (0x91C0_0000, 4 << 20)   # the -ext firmwares' exec RAM, in PSRAM
EXT_RAM = 27 << 20                      # external RAM the firmwares give the relocatable RW pool
MAX_SPEED_BAUD = 5_529_600
EF_ARM_ABI_FLOAT_HARD = 0x400
DBG_INFO_MEMBERS = {"epoch_num", "last_epoch_num", "in_streng_mask", "out_streng_mask", "estimated_npu_cycles",
                    "estimated_tot_cycles"}
_VERSION = re.compile(rb"atonn-v(\d+)\.(\d+)\.(\d+)-(\d+)")
FIX = "describe the firmware in the [firmware] table of the board file"


@dataclass(frozen=True)
class Variant:
    """One firmware: its file name in the install (or its path, for a board's own firmware) and
    the exec RAM it gives a model."""
    name: str
    mode: str                 # "copy" | "xip"
    ext: bool                 # exec RAM in PSRAM (EXT_EXEC_RAM), else internal (EXEC_RAM)

    @property
    def exec_ram_size(self) -> int:
        return EXT_EXEC_RAM[1] if self.ext else EXEC_RAM


LINKS = (str(BAUDRATE), "5529600", "usbc")    # the board's aiValidation link: ST-LINK VCP at either rate, or USB-C


def choose_variant(release: str, mode: str = "copy", copy_size: int = 0, ext_ram_size: int = 0, usbc: bool = False,
                   max_speed: bool = False, where: str | None = None, xip_size: int = 0) -> Variant:
    """ST's variant for an image, as ST's st_load_and_run.py chooses it: the install mode, `-ext`
    when the exec RAM that mode needs (the XIP size in XIP mode, the COPY size in COPY mode) is
    above the internal 640 KB, then the link: `-usbc`, else `-5529600` at that baud rate. More
    external RAM than the firmware gives is an error. 3.x ships one firmware per link (the
    multi-model header tells it the install mode)."""
    if ext_ram_size > EXT_RAM:
        raise N6Error(where, f"Model requires more external RAM than available {ext_ram_size} > {EXT_RAM}",
                      "reduce the model's external-RAM pool")
    if not release.startswith("2"):
        return Variant(f"stm32n6570-dk-validation-reloc{'-usbc' if usbc else ''}.elf", mode, False)
    exec_size = copy_size if mode == "copy" else xip_size
    ext = exec_size > EXEC_RAM
    if exec_size > EXT_EXEC_RAM[1]:
        raise N6Error(where, f"the model needs {exec_size} bytes of exec RAM in {mode.upper()} mode, more than the "
                      f"{EXT_EXEC_RAM[1]} of the -ext firmware",
                      "install in XIP mode (RELOC_COPY_MODE=0)" if mode == "copy" else "make the model smaller")
    link = "-usbc" if usbc else "-5529600" if max_speed else ""
    return Variant(f"stm32n6570-dk-validation-reloc-{mode}{'-ext' if ext else ''}{link}.elf", mode, ext)


def variant_for(release: str, image: Image | _Sized, board: Board, copy_mode: bool,
                where: str | None = None) -> Variant:
    """The firmware that loads `image` (n6.reloc.image.Image) on `board`: the board file's own
    ([validation] firmware = a path), else ST's variant: install mode from the build
    (RELOC_COPY_MODE), the link from the board file (usbc, baud rate). A board that cannot run
    ST's firmware and names none is refused."""
    mode = "copy" if copy_mode else "xip"
    firmware = board.validation.firmware
    if firmware == NO_FIRMWARE:
        raise N6Error(board.path, f"{board.name} cannot run ST's validation firmware: ST builds it for the "
                      "STM32N6570-DK only (its PSRAM holds the model's external RAM and the -ext exec RAM)",
                      f'build one for this board and name its ELF in {board.path}: [validation] firmware = '
                      '"<path/to/firmware.elf>"')
    if firmware != ST_FIRMWARE:
        return Variant(firmware, mode, False)
    return choose_variant(release, mode, image.copy_size, (image.rt_ctx.ext_ram_sz + 7) & ~7 if image.rt_ctx else 0,
                          usbc=board.validation.usbc, max_speed=board.validation.baudrate == MAX_SPEED_BAUD,
                          where=where, xip_size=image.xip_size)


def possible_variants(release: str, board: Board, copy_mode: bool) -> list[Variant]:
    """The firmwares `variant_for` may choose for any image with these settings (for dependencies)."""
    if board.validation.firmware == NO_FIRMWARE:
        return []
    return list({variant_for(release, _Sized(size, size), board, copy_mode): None for size in (0, EXEC_RAM + 8)})


@dataclass
class _Sized:
    xip_size: int
    copy_size: int
    rt_ctx: RtCtx | None = None


def firmware_path(install_root: str, variant: Variant) -> str:
    """The variant's file (in the install, or the board's own); a one-line error when it is missing."""
    path = os.path.join(install_root, FIRMWARE_DIR, variant.name)
    if not os.path.isfile(path):
        raise N6Error(path, f"The '{variant.name}' is not available",
                      "fix [validation] firmware in the board file" if os.path.isabs(variant.name) else
                      "use an ST Edge AI Core install with its N6_reloc validation firmwares (STEDGEAI_CORE_DIR)")
    return path


def installed_firmware(install_root: str, release: str, image: Image, board: Board, copy_mode: bool,
                       where: str | None = None) -> Firmware | None:
    """Facts of the firmware that loads `image` (the board's own, or the install's variant), or
    None when none is known: the install ships no validation firmwares (the simulated install:
    the simulated board plays the firmware) or the board runs none of ST's."""
    firmware = board.validation.firmware
    if firmware == NO_FIRMWARE or firmware == ST_FIRMWARE and not os.path.isdir(os.path.join(install_root,
                                                                                             FIRMWARE_DIR)):
        return None
    return read_firmware(firmware_path(install_root, variant_for(release, image, board, copy_mode, where)),
                         board_cpu_part(board))


def board_cpu_part(board: Board) -> int:
    """CPUID part number of the board's core (the loader reads the CPU, not the firmware)."""
    return board.firmware.cpu_part if board.firmware else 0xD22


def read_firmware(path: str, cpu_part: int = 0xD22) -> Firmware:
    """The loader-relevant facts of a firmware ELF as an n6.reloc.firmware.Firmware (`source` = path);
    a fact the ELF does not carry (no symbols, no DWARF) is None: the gate does not check it."""
    from elftools.common.exceptions import DWARFError, ELFError
    from elftools.elf.elffile import ELFFile
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            if elf["e_machine"] != "EM_ARM" or elf.elfclass != 32:
                raise N6Error(path, f"not a 32-bit Arm firmware ({elf['e_machine']}, ELF{elf.elfclass})", FIX)
            version = _ll_aton_version(path, elf)
            secure = _has_secure_entries(elf)
            dbg_info, struct_sizes = _runtime_structs(elf)
            fpu = bool(elf["e_flags"] & EF_ARM_ABI_FLOAT_HARD)
    except (OSError, ELFError, DWARFError, ValueError) as e:
        raise N6Error(path, f"unreadable firmware ELF: {e}", FIX) from None
    rel = next((r for r in RELEASES.values() if r.atonn[:3] == version), None)
    if rel is None:
        raise N6Error(path, "LL_ATON {}.{}.{} of this firmware belongs to no supported ST Edge AI Core release"
                      .format(*version), FIX)
    return Firmware(rel.core, secure, dbg_info, fpu, cpu_part, ll_aton=version, struct_sizes=struct_sizes,
                    source=path)


def _ll_aton_version(path: str, elf: ELFFile) -> tuple[int, ...]:
    """(major, minor, micro) of the `atonn-v...` description in the loaded data."""
    found = set()
    for seg in elf.iter_segments():
        if seg["p_type"] == "PT_LOAD" and seg["p_filesz"]:
            found |= {tuple(int(x) for x in m.groups()[:3]) for m in _VERSION.finditer(seg.data())}
    if len(found) != 1:
        raise N6Error(path, "no LL_ATON version description (atonn-v...) in the firmware's data" if not found else
                      f"several LL_ATON versions in the firmware's data: {sorted(found)}", FIX)
    return found.pop()


def _has_secure_entries(elf: ELFFile) -> bool | None:
    """True when the firmware exports secure entry functions (built with CMSE); None without symbols."""
    symtab = elf.get_section_by_name(".symtab")
    if symtab is None:
        return None
    return any(sym.name.startswith("__acle_se_") for sym in symtab.iter_symbols())   # type: ignore[attr-defined]  # .symtab is a symbol table


def _runtime_structs(elf: ELFFile) -> tuple[bool | None, int | None]:
    """(dbg_info, sizeof(LL_Buffer_InfoTypeDef) | sizeof(EpochBlock_ItemTypeDef) << 8) from the
    DWARF types, or (None, None) when the ELF does not describe them."""
    if not elf.has_dwarf_info():
        return None, None
    found = {}
    for cu in elf.get_dwarf_info().iter_CUs():
        for die in cu.iter_DIEs():
            name = die.attributes.get("DW_AT_name")
            if die.tag != "DW_TAG_typedef" or name is None:
                continue
            name = name.value.decode(errors="replace")
            if name in ("LL_Buffer_InfoTypeDef", "EpochBlock_ItemTypeDef") and name not in found:
                struct = die.get_DIE_from_attribute("DW_AT_type")
                if struct.tag == "DW_TAG_structure_type" and "DW_AT_byte_size" in struct.attributes:
                    members = {c.attributes["DW_AT_name"].value.decode(errors="replace")
                               for c in struct.iter_children() if "DW_AT_name" in c.attributes}
                    found[name] = (struct.attributes["DW_AT_byte_size"].value, members)
        if len(found) == 2:
            buf, (eb, eb_members) = found["LL_Buffer_InfoTypeDef"][0], found["EpochBlock_ItemTypeDef"]
            return bool(eb_members & DBG_INFO_MEMBERS), buf | eb << 8
    return None, None
