"""Where a 2.x firmware reads the image, as the prepare step takes it: a module of its own, so that
the prepare step's code is this and not the other steps' options or the board file parser."""
from dataclasses import dataclass


@dataclass(frozen=True)
class ImageArea:
    """Where a 2.x firmware reads the image: the board's network region [start, end), one image at
    `start` (its firmware knows no other address). An absolute flash pool lying there, or under the
    params image at `end` (`split`), moves to the first sector past them (n6.reloc.move.plan)."""
    start: int                      # [images] network
    end: int                        # [images] params
    sector: int                     # the flash's erase sector
    split: bool                     # a params image starts at `end`
