"""Board description files (`firmware/boards/<board>.toml`): the flash geometry, the areas never
written, image addresses, RAM budgets, the programmer and the serial link of one board. Loaded
with the standard library's tomllib; every wrong key or value is one N6Error naming file and key."""
import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NoReturn, TypeVar, overload

from .board_files import available_boards
from .flash.backend import BACKENDS
from .flash.boards import BoardList
from .errors import N6Error
from .jsonfile import read_text
from .serial_link import BAUDRATE, DEFAULT_HEADER, HEADERS
from .reloc.firmware import Firmware
from .paths import StrPath
from .tomlfile import parse_toml

# [validation] firmware: ST's validation firmware of the install (built for the STM32N6570-DK), none
# this board can run, or else the path of the board's own firmware ELF
ST_FIRMWARE, NO_FIRMWARE = "st", "none"
T = TypeVar("T")
Table = dict[str, Any]   # a TOML table, with its dotted name under "_name" for the messages
Top = Literal[""]        # the file's top level, in place of a table


@dataclass(frozen=True)
class Region:
    name: str
    base: int
    size: int

    @property
    def end(self) -> int:
        return self.base + self.size


@dataclass(frozen=True)
class Flash:
    base: int
    size: int
    sector_size: int
    page_size: int
    external_loader: str
    no_write: tuple[tuple[int, int], ...]   # ((start, end), ...) end exclusive

    @property
    def end(self) -> int:
        return self.base + self.size


@dataclass(frozen=True)
class Images:
    network: int
    params: int
    multi_model_header: int
    models: tuple[str, ...]   # models flashed when MODEL= is not given (empty: choose on the command line)


@dataclass(frozen=True)
class Memory:
    exec_ram: Region
    external_ram: Region     # what the firmware gives the loader for the relocatable RW pool
    npu_ram: tuple[Region, ...]
    external_ram_device: Region | None = None   # the whole external RAM as mapped (absent: external_ram)

    @property
    def external_ram_span(self) -> Region:
        """Where absolute external-RAM pools may lie."""
        return self.external_ram_device or self.external_ram


@dataclass(frozen=True)
class Programmer:
    backend: str
    frequency: int           # SWD kHz
    access_port: int
    pyocd_target: str


@dataclass(frozen=True)
class Validation:
    port: str
    baudrate: int
    header: str
    usbc: bool = False             # the link is the board's USB-C port (ST's -usbc firmwares), not the ST-LINK's
    firmware: str = ST_FIRMWARE    # the aiValidation firmware a real board runs: "st", "none" or an ELF path


@dataclass(frozen=True)
class Board:
    name: str
    path: str
    flash: Flash
    images: Images
    memory: Memory
    programmer: Programmer
    validation: Validation
    firmware: Firmware | None
    boards: BoardList | None = None     # [boards]: the boards of this kind a build uses (else the command line's)

    @property
    def budgets(self) -> dict[str, int | None]:
        """The size gate's defaults (bytes; 0 → None, gate off): each image's flash region and the RAMs."""
        b = {"flash": self.images.params - self.images.network, "params_flash": self.flash.end - self.images.params,
             "exec_ram": self.memory.exec_ram.size, "ext_ram": self.memory.external_ram.size}
        return {k: v or None for k, v in b.items()}

    @property
    def key(self) -> str:
        """The file stem, as given to BOARD=."""
        return os.path.splitext(os.path.basename(self.path))[0]


def load_board(path: StrPath) -> Board:
    """Parse and check one board file → Board (parsed once per content: every model's steps of
    one build ask for it)."""
    path = str(path)
    if not os.path.exists(path):
        raise N6Error(path, "board file not found",
                      f"use BOARD= with one of {', '.join(available_boards())} or a path to a .toml file")
    text = read_text(path, "board file")
    if (path, text) not in _BOARDS:
        _BOARDS[path, text] = _parse_board(path, parse_toml(path, text, "board file"))
    return _BOARDS[path, text]


_BOARDS: dict[tuple[str, str], Board] = {}


def _parse_board(path: str, data: Table) -> Board:
    r = _Reader(path, data)
    name = r.value("", "name", str)
    flash_t, images_t, memory_t = r.table("flash"), r.table("images"), r.table("memory")
    prog_t, val_t = r.table("programmer"), r.table("validation")
    fw_t, boards_t = r.table("firmware", required=False), r.table("boards", required=False)
    r.only("", {"name", "flash", "images", "memory", "programmer", "validation", "firmware", "boards"})

    flash = Flash(r.value(flash_t, "base", int), r.value(flash_t, "size", int, positive=True),
                  r.value(flash_t, "sector_size", int, positive=True),
                  r.value(flash_t, "page_size", int, positive=True),
                  r.value(flash_t, "external_loader", str), r.ranges(flash_t, "no_write"))
    r.only(flash_t, {"base", "size", "sector_size", "page_size", "external_loader", "no_write"})
    if flash.sector_size & (flash.sector_size - 1) or flash.sector_size % flash.page_size:
        r.fail("flash.sector_size", f"{flash.sector_size:#x} is not a power of two multiple of page_size "
               f"{flash.page_size:#x}")
    for start, end in flash.no_write:
        if start < flash.base or end > flash.end:
            r.fail("flash.no_write", f"[{start:#010x}, {end:#010x}] is outside the flash "
                   f"[{flash.base:#010x}, {flash.end:#010x}]")

    models = r.value(images_t, "models", list, default=[])
    if not all(isinstance(m, str) for m in models):
        r.fail("images.models", "must be a list of model names")
    images = Images(r.value(images_t, "network", int), r.value(images_t, "params", int),
                    r.value(images_t, "multi_model_header", int), tuple(models))
    r.only(images_t, {"network", "params", "multi_model_header", "models"})
    for key in ("network", "params", "multi_model_header"):
        addr = getattr(images, key)
        if addr is not None and not flash.base <= addr < flash.end:
            r.fail(f"images.{key}", f"{addr:#010x} is outside the flash [{flash.base:#010x}, {flash.end:#010x}]",
                   "give an address inside [flash] (base, base + size)")

    npu = r.value(memory_t, "npu_ram", list, default=[])
    memory = Memory(r.region(memory_t, "exec_ram"), r.region(memory_t, "external_ram"),
                    tuple(r.region({"_name": "memory.npu_ram", **{str(i): t for i, t in enumerate(npu)}}, str(i),
                                   named=True) for i in range(len(npu))),
                    r.region(memory_t, "external_ram_device") if "external_ram_device" in memory_t else None)
    r.only(memory_t, {"exec_ram", "external_ram", "npu_ram", "external_ram_device"})
    dev, ext = memory.external_ram_span, memory.external_ram
    if ext.size and not (dev.base <= ext.base and ext.end <= dev.end):
        r.fail("memory.external_ram", f"0x{ext.base:08X}-0x{ext.end:08X} is not inside external_ram_device "
               f"0x{dev.base:08X}-0x{dev.end:08X}")

    programmer = Programmer(r.value(prog_t, "backend", str, choices=BACKENDS, default="auto"),
                            r.value(prog_t, "frequency", int, positive=True, default=2000),
                            r.value(prog_t, "access_port", int, default=1),
                            r.value(prog_t, "pyocd_target", str, default="stm32n657x0hxq"))
    r.only(prog_t, {"backend", "frequency", "access_port", "pyocd_target"})

    firmware = r.value(val_t, "firmware", str, default=ST_FIRMWARE)
    if firmware not in (ST_FIRMWARE, NO_FIRMWARE):
        firmware = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), firmware))
    validation = Validation(r.value(val_t, "port", str, default=""),
                            r.value(val_t, "baudrate", int, positive=True, default=BAUDRATE),
                            r.value(val_t, "header", str, choices=HEADERS, default=DEFAULT_HEADER),
                            r.value(val_t, "usbc", bool, default=False), firmware)
    r.only(val_t, {"port", "baudrate", "header", "usbc", "firmware"})

    board_firmware = None
    if fw_t is not None:
        board_firmware = Firmware(r.value(fw_t, "release", str), r.value(fw_t, "secure", bool),
                            r.value(fw_t, "dbg_info", bool), r.value(fw_t, "fpu", bool, default=True),
                            r.value(fw_t, "cpu_part", int, default=0xD22))
        r.only(fw_t, {"release", "secure", "dbg_info", "fpu", "cpu_part"})
    boards = None
    if boards_t is not None:
        boards = BoardList(r.strings(boards_t, "probes"), r.strings(boards_t, "ports"),
                           r.value(boards_t, "simulated", int, positive=True, default=1),
                           r.strings(boards_t, "places"), r.value(boards_t, "coordinator", str, default=""), path)
        r.only(boards_t, set(BoardList.KEYS))
    return Board(name, path, flash, images, memory, programmer, validation, board_firmware, boards)


class _Reader:
    """Typed access to the parsed TOML that reports `<file>: [table] key ...` on any mistake."""

    def __init__(self, path: str, data: Table) -> None:
        self.path, self.data = path, data

    def fail(self, key: str, problem: str,
             fix: str = "see the bundled boards in firmware/boards/ for every key") -> NoReturn:
        raise N6Error(self.path, f"key {key}: {problem}", fix)

    def _t(self, table: Table | Top) -> Table:
        return self.data if table == "" else table

    @staticmethod
    def _prefix(table: Table | Top) -> str:
        return "" if table == "" else table["_name"] + "."

    @overload
    def table(self, name: str) -> Table: ...
    @overload
    def table(self, name: str, required: bool) -> Table | None: ...
    def table(self, name: str, required: bool = True) -> Table | None:
        t = self.data.get(name)
        if t is None:
            if required:
                self.fail(f"[{name}]", "missing table")
            return None
        if not isinstance(t, dict):
            self.fail(name, "must be a table ([" + name + "])")
        return {"_name": name, **t}

    def value(self, table: Table | Top, key: str, kind: type[T], positive: bool = False,
              choices: Sequence[str] | None = None, default: T | None = None) -> T:
        t = self._t(table)
        full = self._prefix(table) + key
        if key not in t:
            if default is None:
                self.fail(full, "missing")
            return default
        v = t[key]
        if kind is int and (isinstance(v, bool) or not isinstance(v, int)) or \
                kind is not int and not isinstance(v, kind):
            self.fail(full, f"{v!r} is not {'an integer' if kind is int else kind.__name__}")
        if kind is int and (v < 0 or positive and v == 0):
            self.fail(full, f"{v} must be {'positive' if positive else 'non-negative'}")
        if choices and v not in choices:
            self.fail(full, f"{v!r} is not one of {', '.join(choices)}")
        return v

    def strings(self, table: Table, key: str) -> tuple[str, ...]:
        """A list of non-empty strings (absent: empty)."""
        v = self.value(table, key, list, default=[])
        if not all(isinstance(x, str) and x.strip() for x in v):
            self.fail(self._prefix(table) + key, f"{v!r} is not a list of names")
        return tuple(x.strip() for x in v)

    def region(self, table: Table, key: str, named: bool = False) -> Region:
        full = table["_name"] + f"[{key}]" if named else self._prefix(table) + key
        t = self._t(table).get(key)
        if not isinstance(t, dict):
            self.fail(full, "missing or not a table {base = ..., size = ...}")
        sub = {"_name": full, **t}
        region = Region(self.value(sub, "name", str) if named else key, self.value(sub, "base", int),
                        self.value(sub, "size", int))
        self.only(sub, {"base", "size"} | ({"name"} if named else set()))
        return region

    def ranges(self, table: Table, key: str) -> tuple[tuple[int, int], ...]:
        full = self._prefix(table) + key
        v = self._t(table).get(key, [])
        ok = isinstance(v, list) and all(isinstance(p, list) and len(p) == 2 and
                                         all(isinstance(x, int) and not isinstance(x, bool) for x in p) and
                                         p[0] < p[1] for p in v)
        if not ok:
            self.fail(full, f"{v!r} is not a list of [start, end] pairs with start < end")
        return tuple((s, e) for s, e in v)

    def only(self, table: Table | Top, allowed: Collection[str]) -> None:
        t = self._t(table)
        for key in t:
            if key != "_name" and key not in allowed:
                self.fail(self._prefix(table) + key, "unknown key", f"allowed: {', '.join(sorted(allowed))}")
