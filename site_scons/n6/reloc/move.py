"""Absolute flash pools moved out of where a 2.x firmware reads the image: which pools move where
(`plan`, `check_landing`), and the one rule for an address inside them (`shifted`), applied to the generated C
(prepare: network.c and _ecblobs.h), where the compiler then places every address.

Not to a linked image's words: which of them are addresses no image records (big_mlp's image,
its pool at 0x71000000, holds the word 0x71003032: the bytes "20\0q" of its buffer names "q_20",
"q_22"), so an image prepared elsewhere keeps ST's placement. Nor to epoch-controller blobs
holding a word inside a moving pool: ST's generated blobs carry no relocation table (its ec_reloc
needs one), so which of their words are addresses is not known either; such a network's pools stay
where ST's flow puts them, and one line says why. The simulated tool's blobs hold none (its
operators' pool bases are C in _ecblobs.h, which moves)."""
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import N6Error
from ..mpool import EXTERNAL_FLASH
from .area import ImageArea
from .image import align

@dataclass(frozen=True)
class Span:
    """An absolute pool: `name`, its address and its size in bytes; `flash`: read-only, in the
    memory-mapped external flash (only such a pool moves)."""
    name: str
    at: int
    size: int
    flash: bool


@dataclass(frozen=True)
class Moved:
    """An absolute flash pool moved from `old` to `new`: its `size` bytes, and every address
    inside them, follow."""
    name: str
    old: int
    new: int
    size: int


def plan(pools: Sequence[Span], area: ImageArea, params_region: int) -> list[Moved]:
    """The moves of the flash pools lying where the firmware reads the images (the image area, and
    a split build's params image of `params_region` bytes, ParamsBlob.region_size, after it): each
    to the first free sector past them, one after the other."""
    at = free = align(area.end + (params_region if area.split else 0), area.sector)
    moved = []
    for p in pools:
        if p.flash and p.at < free and p.at + p.size > area.start:
            moved.append(Moved(p.name, p.at, at, p.size))
            at = align(at + p.size, area.sector)
    return moved


def check_landing(moved: Sequence[Moved], pools: Sequence[Span], area: ImageArea, where: str) -> None:
    """A pool that would land on another absolute pool or past the flash stops the moves in one
    line naming `where` (checked only for moves that happen: kept pools build as ST's flow builds them;
    against the pools that stay, as a moving pool's old place is free)."""
    moving = {mv.name for mv in moved}
    staying = [p for p in pools if p.name not in moving]
    for mv in moved:
        clash = next((p for p in staying if p.at < mv.new + mv.size and mv.new < p.at + p.size), None)
        if clash or mv.new + mv.size > EXTERNAL_FLASH[1]:
            land = f"onto pool '{clash.name}'" if clash else "past the external flash"
            raise N6Error(where, f"absolute flash pool '{mv.name}' lies where the firmware reads the image "
                          f"(0x{area.start:08X}); moved to 0x{mv.new:08X} it would land {land}",
                          "set the board file's [images] network clear of the pool, or build without "
                          "RELOC_ABSOLUTE_FLASH_POOLS")


def shifted(value: int, moved: Sequence[Moved], starts: Iterable[int] = ()) -> int | None:
    """Where the address `value` goes, or None if it stays: an address inside a moved pool
    follows it; one at a moved pool's end follows it too, unless a pool starts there (`starts`:
    every pool's address before the move)."""
    mv = next((mv for mv in moved if mv.old <= value < mv.old + mv.size), None) or \
        next((mv for mv in moved if value == mv.old + mv.size and value not in starts), None)
    return None if mv is None else value - mv.old + mv.new


_ADDRESS = re.compile(r"\b0x([0-9a-fA-F]{8})UL\b")


def move_addresses(text: str, moved: Sequence[Moved], starts: Sequence[int] = ()) -> str:
    """Generated C with every address inside a moved pool (`0x71000000UL`, a base, and the
    `Equivalent hex address` comments) and each moved pool's `offset=` line following it."""
    def shift(m: re.Match[str]) -> str:
        new = shifted(int(m.group(1), 16), moved, starts)
        if new is None:
            return m.group(0)
        digits = f"{new:08X}"
        return f"0x{digits.lower() if m.group(1).islower() else digits}UL"
    for mv in moved:
        text = re.sub(rf"(file postfix={re.escape(mv.name)}\s.*?offset=)0x{mv.old:08x}\b", rf"\g<1>0x{mv.new:08x}",
                      text, flags=re.I)
    return _ADDRESS.sub(shift, text) if moved else text


U64_WORD = re.compile(r"\b0x([0-9a-fA-F]{16})ULL?\b")   # a blob word (c_blob_words, prepare.const_blobs)


def c_blob_words(text: str) -> list[int]:
    """The 32-bit words of the 64-bit blob arrays of an `_ecblobs.h` (little-endian halves)."""
    return [w for m in U64_WORD.finditer(text) for v in (int(m.group(1), 16),) for w in (v & 0xFFFF_FFFF, v >> 32)]


def blob_refusal(blob_words: Sequence[int], moved: Sequence[Moved], where: str,
                 starts: Sequence[int] = ()) -> str | None:
    """Why the pools cannot move, if an epoch-controller blob word lies inside a moving pool
    (`starts`: as for `shifted`)."""
    hits = [w for w in blob_words if shifted(w, moved, starts) is not None]
    if not hits:
        return None
    names = ", ".join(f"'{mv.name}'" for mv in moved)
    words = f"{len(hits)} word{'s' if len(hits) > 1 else ''}"
    return (f"{where}: absolute flash pool {names} not moved: its epoch-controller blobs hold {words} inside it "
            f"(first 0x{hits[0]:08X}), and ST's generated blobs carry no relocation table that would say which are "
            "addresses; the image overwrites the pool where the firmware reads it (make the pool USEMODE_RELATIVE, "
            "or give a firmware that reads the image elsewhere)")
