"""The linked ELF → the code image (header, RO part, data image, REL table, EC blobs).

Reads sections with pyelftools, checks them, builds the REL table and patches the header's REL
range and data; the params come later (pack). Symbol and relocation tables are unpacked in one
pass per table (pyelftools parses one entry per call: two thirds of the step on a real model).
Only this step needs pyelftools, and it reruns only when the ELF changes."""
import struct
from collections.abc import Sequence
from typing import NoReturn

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import Section

from ..errors import N6Error
from .image import (FAKE_SIZE, FLASH_BASE, MAGIC, RAM_BASE, SEG_FLASH, SEG_PARAM0, SEG_PARAM1, SEG_RAM, CodeImage,
                    Header, align8, off, read_descriptors, seg)
from .pools import TYPE_COPY

REQUIRED_SECTIONS = (".flash", ".rel.flash", ".data", ".rel.data", ".relocs", ".bss")
SECTION_SEGMENT = {".flash": SEG_FLASH, ".relocs": SEG_FLASH, ".data": SEG_RAM, ".bss": SEG_RAM,
                   ".params_0": SEG_PARAM0, ".params_1": SEG_PARAM1, ".params_2": 0xA}
R_ARM_ABS32, R_ARM_REL32, R_ARM_THM_CALL, R_ARM_GOT_BREL, R_ARM_THM_JUMP24, R_ARM_GOT_PREL = 2, 3, 10, 26, 30, 96
STT_SECTION, SHN_UNDEF = 3, 0
ELF32_SYM = struct.Struct("<3I2BH")      # st_name st_value st_size st_info st_other st_shndx
ELF32_REL = {"SHT_REL": struct.Struct("<2I"), "SHT_RELA": struct.Struct("<2Ii")}   # r_offset r_info [r_addend]
ACCEPTED = {R_ARM_ABS32: "R_ARM_ABS32", R_ARM_GOT_BREL: "R_ARM_GOT_BREL", R_ARM_THM_CALL: "R_ARM_THM_CALL",
            R_ARM_THM_JUMP24: "R_ARM_THM_JUMP24", R_ARM_REL32: "R_ARM_REL32", R_ARM_GOT_PREL: "R_ARM_GOT_PREL"}


class Symbol:
    __slots__ = ("name", "value", "size", "type", "shndx")

    def __init__(self, name: str, value: int, size: int, info: int, shndx: int) -> None:
        self.name, self.value, self.size, self.type, self.shndx = name, value, size, info & 0xF, shndx


class _Elf:
    def __init__(self, path: str) -> None:
        self.path = path
        self.f = open(path, "rb")
        try:
            self.elf = ELFFile(self.f)
        except Exception:
            self.f.close()
            raise N6Error(path, "not an ELF file", "re-run the link step") from None
        self.section_list = list(self.elf.iter_sections())
        self.sections = {s.name: s for s in self.section_list}
        symtab = self.sections.get(".symtab")
        if symtab is None or symtab["sh_type"] != "SHT_SYMTAB" or symtab["sh_entsize"] != ELF32_SYM.size:
            raise N6Error(path, "no symbol table", "link without stripping symbols")
        self.symtab = self.symbol_table(symtab)
        self.symbols = {s.name: s for s in self.symtab if s.name}

    def symbol_table(self, section: Section) -> list[Symbol]:
        strtab = self.section_list[section["sh_link"]].data()
        out: list[Symbol] = []
        for st_name, value, size, info, _, shndx in ELF32_SYM.iter_unpack(section.data()):
            out.append(Symbol(strtab[st_name:strtab.index(b"\0", st_name)].decode(errors="replace"),
                              value, size, info, shndx))
        return out

    def data(self, name: str) -> bytes:
        s = self.sections.get(name)
        return bytes(s.data()) if s is not None and s["sh_type"] != "SHT_NOBITS" else b""

    def close(self) -> None:
        self.f.close()


def read_symbols(path: str) -> list[Symbol]:
    """Every symbol of an ELF file, read in one pass over its table (fast on large firmwares)."""
    e = _Elf(path)
    try:
        return e.symtab
    finally:
        e.close()


def _fail(path: str, problem: str,
          fix: str = "check the linker script and the compile flags of the relocatable build") -> NoReturn:
    raise N6Error(path, problem, fix)


def _sanity(e: _Elf) -> None:
    for name in REQUIRED_SECTIONS:
        if name not in e.sections:
            _fail(e.path, f"section {name} is missing", "link with firmware/reloc_network_gcc.ld and --emit-relocs")
    for name, s in e.sections.items():
        if (name.startswith(".rel.") or name == ".relocs") and s["sh_size"] and s["sh_type"] != "SHT_REL":
            _fail(e.path, f"section {name} is not of type REL")
        want = SECTION_SEGMENT.get(name)
        if want is not None and s["sh_addr"] and seg(s["sh_addr"]) != want:
            _fail(e.path, f"section {name} at 0x{s['sh_addr']:08X} is outside segment 0x{want:X}")
    for sym in ("_network_entries", "_network_rt_ctx", "_params_desc"):
        if sym not in e.symbols:
            _fail(e.path, f"symbol {sym} is missing",
                  "compile the network with BUILD_AI_NETWORK_RELOC and the prepared sources")
    h = Header.parse(e.data(".flash"))
    if h.magic != MAGIC or h.data_start != RAM_BASE or seg(h.data_data) != SEG_FLASH:
        _fail(e.path, "the first words of .flash are not a relocatable-image header")


def _rel_table(e: _Elf, skipped: Sequence[tuple[int, int]]) -> list[int]:
    data_sec = e.sections[".data"]
    d_lo, d_hi = data_sec["sh_addr"], data_sec["sh_addr"] + data_sec["sh_size"]
    sites = []
    tables = {}
    for sec in e.section_list:
        entry = ELF32_REL.get(sec["sh_type"])
        if entry is None or not sec["sh_size"]:
            continue
        link = sec["sh_link"]
        if link not in tables:
            tables[link] = e.symtab if e.section_list[link].name == ".symtab" else \
                e.symbol_table(e.section_list[link])
        symtab = tables[link]
        for at, info, *_ in entry.iter_unpack(sec.data()):
            if info >> 8 == 0:
                continue
            sym = symtab[info >> 8]
            name = sym.name
            if sym.type == STT_SECTION:
                name = e.section_list[sym.shndx].name
            if name.startswith(".debug_"):
                continue
            rtype = info & 0xFF
            if rtype not in ACCEPTED:
                _fail(e.path, f"unsupported relocation type {rtype} against '{name}' at 0x{at:08X}",
                      "compile with the PIC flags of the relocatable build (-fpic -msingle-pic-base ...)")
            if sym.value == 0 and sym.shndx == SHN_UNDEF:
                _fail(e.path, f"unresolved symbol '{name}' referenced at 0x{at:08X}",
                      "provide it (runtime sources/archive) or remove the reference")
            if any(lo <= at < hi for lo, hi in skipped):
                continue
            if rtype == R_ARM_ABS32:
                if not d_lo <= at < d_hi:
                    _fail(e.path, f"absolute relocation against '{name}' at 0x{at:08X} is not from RAM",
                          "do not place pointer tables in read-only sections of a relocatable network")
                sites.append(at)
    return sites


def code_image(elf_path: str) -> CodeImage:
    """Everything of the image the ELF decides; params offset, size and CRC-32 stay 0."""
    e = _Elf(elf_path)
    try:
        _sanity(e)
        flash, data = bytearray(e.data(".flash")), bytearray(e.data(".data"))
        h = Header.parse(flash)
        ro_size = off(h.data_data)
        params0 = e.data(".params_0")
        ec_blobs = params0[:-FAKE_SIZE] if len(params0) >= FAKE_SIZE else b""
        if ec_blobs:   # COPY sources sit after the EC blobs in the params area
            for at, d in read_descriptors(data, off(h.params_start))[0]:
                if d.type == TYPE_COPY:
                    d.foff += len(ec_blobs)
                    data[at:at + d.SIZE] = d.pack()
        entries = e.symbols["_network_entries"]
        sites = _rel_table(e, [(entries.value, entries.value + entries.size)])
    finally:
        e.close()

    rel = struct.pack(f"<{len(sites)}I", *sites)
    data_img = bytes(data) + bytes(align8(len(data)) - len(data))
    rel_start = ro_size + len(data_img)
    struct.pack_into("<2I", flash, Header.offset_of("rel_start"), FLASH_BASE | rel_start,
                     (FLASH_BASE | rel_start) + len(rel))
    ro_img = bytes(flash[:ro_size]) + bytes(max(ro_size - len(flash), 0))
    code = ro_img + data_img + rel + bytes(align8(len(rel)) - len(rel))
    post_check(elf_path, code)
    return CodeImage(code, ec_blobs)


def post_check(path: str, data: bytes | bytearray) -> None:
    """Every REL site's word and every GOT word but the last three must point into data or bss
    (not the init-array/GOT gap), into the RO image, or into a relocatable pool segment."""
    h = Header.parse(data)
    ro, data_end, bss_start, bss_end = off(h.data_data), off(h.data_end), off(h.bss_start), off(h.bss_end)
    got_start, got_end, rel_start, rel_end = off(h.got_start), off(h.got_end), off(h.rel_start), off(h.rel_end)

    def valid(word: int) -> bool:
        s, o = seg(word), off(word)
        return (s == SEG_RAM and (o < data_end or bss_start <= o < bss_end)) or (s == SEG_FLASH and o < ro) or \
            s in (SEG_PARAM0, SEG_PARAM1)

    for site in struct.unpack_from(f"<{(rel_end - rel_start) // 4}I", data, rel_start):
        word = struct.unpack_from("<I", data, ro + off(site))[0]
        if not valid(word):
            _fail(path, f"REL site 0x{site:08X} holds 0x{word:08X}, which points nowhere the loader can rebase")
    for at in range(got_start, max(got_start, got_end - 12), 4):
        word = struct.unpack_from("<I", data, ro + at)[0]
        if not valid(word):
            _fail(path, f"GOT word at 0x{RAM_BASE | at:08X} holds 0x{word:08X}, which the loader cannot rebase")
