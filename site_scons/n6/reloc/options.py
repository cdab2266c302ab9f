"""The options of a model's image steps as typed values, built once per model from the build's
variables and its model.json: their repr makes each step's signature (the varlist idiom) and the
steps receive them as they are."""
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, NamedTuple, Self

from ..board_files import board_path
from ..errors import N6Error
from ..sizes import parse_size
from .area import ImageArea

if TYPE_CHECKING:
    from ..releases import Release

BUDGETS = ("flash", "params_flash", "exec_ram", "ext_ram")


@dataclass(frozen=True)
class ImageOptions:
    """How a model's image is built: RELOC_* variables, each overridable in model.json "reloc"."""
    secure: bool = True             # -mcmse: for a secure firmware
    split: bool = False             # params in <name>_rel_params.bin
    dbg_info: bool = True           # LL_ATON_EB_DBG_INFO
    ecblob_in_params: bool = False  # constant epoch-controller blobs in the params area
    name: str | None = None         # image base name (None: the network file stem)

    @classmethod
    def of(cls, defaults: Mapping[str, Any], overrides: Mapping[str, Any], where: str) -> Self:
        """`defaults` (the variables) updated with a model.json "reloc" object read from `where`."""
        known = {f.name for f in fields(cls)}
        unknown = set(overrides) - known
        if unknown:
            raise N6Error(where, f"unknown reloc option '{sorted(unknown)[0]}'", f"use {', '.join(sorted(known))}")
        return cls(**{**defaults, **overrides})


class BoardFacts(NamedTuple):
    """What the image steps take from a board file, in one read: the size gate's `budgets`
    (n6.board.Board.budgets) and the `area` where its 2.x firmware reads the image (an unsplit
    one; a split build's ImageArea says so with `split`). Module-level: the stat cache pickles it."""
    budgets: dict[str, int | None]
    area: ImageArea


def board_facts(path: str) -> BoardFacts:
    from ..board import load_board
    b = load_board(path)
    return BoardFacts(b.budgets, ImageArea(b.images.network, b.images.params, b.flash.sector_size, False))


def image_area(area: ImageArea, release: "Release") -> ImageArea | None:
    """Where absolute flash pools must move out of, given a board's image `area` (BoardFacts.area):
    it for a 2.x release; None for 3.x: the multi-model header tells the firmware where the image
    is, and the image moves past the pools. What the SCons step gives prepare, and what a caller
    of n6.reloc.prepare.prepare outside SCons gives it to move pools as the build does."""
    return None if release.multi_model else area


@dataclass(frozen=True)
class PrepareOptions:
    name: str
    ecblob_in_params: bool
    epoch_controller: bool          # the network has an _ecblobs.h
    absolute_flash_pools: bool      # RELOC_ABSOLUTE_FLASH_POOLS
    image_area: ImageArea | None    # with absolute_flash_pools, 2.x: where the firmware reads the image
    simulated_install: bool
    install_version: tuple[int, ...]   # the install's LL_ATON version
    raws: tuple[str, ...]           # the .raw files the params description names (paths)


@dataclass(frozen=True)
class PackOptions:
    name: str
    split: bool
    budgets: tuple[tuple[str, int | None], ...]   # ((budget, bytes or None: no check), ...), the board's resolved
    copy_mode: bool


def size_budgets(values: Mapping[str, object]) -> dict[str, int | str | None]:
    """The size gate's budgets from the RELOC_<BUDGET>_SIZE values (bytes; None: gate off; "board"
    where the value is empty: the board file's applies, see gate_budgets)."""
    return {k: "board" if values.get(k) in ("", None) else
            parse_size(values[k], f"RELOC_{k.upper()}_SIZE", allow_none=True) for k in BUDGETS}


def gate_board(budgets: Mapping[str, int | str | None], board: str, moves_pools: bool) -> str | None:
    """The board file (of the board named `board`) the image steps read, if any of `budgets`
    comes from it or absolute flash pools may move (`moves_pools`); a missing one: load_board's
    one line, which says which boards there are."""
    if "board" not in budgets.values() and not moves_pools:
        return None
    path = board_path(board)
    if not os.path.isfile(path):
        from ..board import load_board
        load_board(path)
    return path


def gate_budgets(budgets: Mapping[str, int | str | None],
                 from_board: Mapping[str, int | None]) -> tuple[tuple[str, int | None], ...]:
    """The size gate's budgets with the board file's (`from_board`, board_facts) wherever
    `budgets` says "board": resolved once per build, so the pack step reads no board file and
    its signature holds the very figures it gates by."""
    return tuple((k, from_board[k] if isinstance(v, str) else v) for k, v in budgets.items())

