"""Our own rules for an image, on top of the loader model (check.py): damage ST's loader lets through
(it masks segment bits away, walks tables from start to end address and trusts every offset) but
no build of ST's flow writes, and that breaks the model once it runs. Each refusal names its rule
(LoaderError.rule in check.py); the differential test against ST's loader lists every rule with its reason."""
from typing import NoReturn

from ..errors import N6Error
from .image import Data
from .image import ENTRIES_3, FLASH_BASE, RAM_BASE, SEG_FLASH, SEG_RAM, Image, PoolDescriptor, RtCtx, off, seg
from .pools import DATA_ACTIV, TYPE_COPY, TYPE_RELOC

RAM_WORDS = ("data_start", "data_end", "bss_start", "bss_end", "got_start", "got_end", "params_start", "rt_ctx")
FLASH_WORDS = ("data_data", "rel_start", "rel_end")
FUNCTIONS = tuple(n for n in ENTRIES_3 if n != "rt_ctx")   # the entry table's functions (2.x: a subset)


class Damaged(Exception):
    """One broken rule: its name and what is wrong (the checker reports it as INVALID_BIN)."""

    def __init__(self, rule: str, detail: str) -> None:
        self.rule, self.detail = rule, detail
        super().__init__(f"{rule}: {detail}")


def _refuse(rule: str, detail: str) -> NoReturn:
    raise Damaged(rule, detail)


def check_layout(data: Data, params: Data | memoryview | None = None, n_words: int | None = None) -> Image:
    """Refuse an image whose header, REL table or pool table is damaged; returns the parsed Image."""
    try:
        img = Image.parse(data, n_words=n_words, params=params)
    except N6Error as e:
        _refuse("truncated", e.problem)
    h = img.header
    for name in RAM_WORDS + FLASH_WORDS:
        want = SEG_RAM if name in RAM_WORDS else SEG_FLASH
        if seg(h.words[name]) != want:
            _refuse("segments", f"header word {name} 0x{h.words[name]:08X} is not in segment 0x{want:X}")
    if seg(h.params_offset):
        _refuse("segments", f"header word params_offset 0x{h.params_offset:08X} is not a file offset")
    if h.data_start != RAM_BASE:
        _refuse("data_start", f"data_start is 0x{h.data_start:08X}: the loader copies the RAM segment from its "
                f"start, 0x{RAM_BASE:08X}")
    w = {name: off(h.words[name]) for name in RAM_WORDS + FLASH_WORDS}
    if not (w["data_end"] <= w["bss_start"] <= w["bss_end"] and w["got_start"] <= w["got_end"] <= w["bss_start"]):
        _refuse("sections", f"sections out of order: data ..0x{w['data_end']:X}, GOT 0x{w['got_start']:X}.."
                f"0x{w['got_end']:X}, .bss 0x{w['bss_start']:X}..0x{w['bss_end']:X}")
    if (w["got_start"] | w["got_end"]) % 4:
        _refuse("got", f"GOT 0x{w['got_start']:X}..0x{w['got_end']:X} is not word-aligned")
    if w["rel_start"] > w["rel_end"] or (w["rel_start"] | w["rel_end"]) % 4:
        _refuse("rel_table", f"REL table 0x{w['rel_start']:X}..0x{w['rel_end']:X} is not a run of words")
    _check_rel_sites(img, w)
    _check_tables(img, w)
    return img


def _check_rel_sites(img: Image, w: dict[str, int]) -> None:
    ro = img.ro_size
    for site in img.rel_sites:
        if site % 4:
            _refuse("rel_aligned", f"REL site 0x{site:08X} is not word-aligned")
        if seg(site) not in (SEG_RAM, SEG_FLASH):
            _refuse("rel_segment", f"REL site 0x{site:08X} is in segment 0x{seg(site):X}, neither RAM nor the "
                    "RO part (the loader takes it for RAM)")
        end = w["bss_end"] if seg(site) == SEG_RAM else ro
        if off(site) + 4 > end:
            _refuse("rel_range", f"REL site 0x{site:08X} is past its segment (0x{end:X} bytes)")


def _check_tables(img: Image, w: dict[str, int]) -> None:
    """rt_ctx and the pool table inside the data image, entry points Thumb code in the RO part,
    and the params each pool takes its content from inside the params."""
    data_len = w["bss_start"]
    if w["rt_ctx"] + RtCtx.SIZE > data_len:
        _refuse("tables", f"rt_ctx at 0x{w['rt_ctx']:X} is not inside the data image (0x{data_len:X} bytes)")
    if w["params_start"] + PoolDescriptor.SIZE * (len(img.descriptors) + 1) > data_len:
        _refuse("tables", f"pool table at 0x{w['params_start']:X} is not inside the data image")
    for name in FUNCTIONS:
        addr = img.header.words.get(name)
        if addr is not None and (seg(addr) != SEG_FLASH or off(addr) >= img.ro_size or not addr & 1):
            _refuse("entries", f"entry {name} 0x{addr:08X} is not Thumb code of the RO part "
                    f"(0x{FLASH_BASE:08X}..0x{FLASH_BASE + img.ro_size:08X})")
    for d in img.descriptors:
        takes = d.type == TYPE_COPY or (d.type == TYPE_RELOC and (d.flags >> 16) & 0xFF != DATA_ACTIV)
        if takes and d.foff + d.size > len(img.params):
            _refuse("pools", f"pool {d.name or hex(d.name_addr)} takes bytes 0x{d.foff:X}..0x{d.foff + d.size:X} "
                    f"of {len(img.params)} bytes of params")
