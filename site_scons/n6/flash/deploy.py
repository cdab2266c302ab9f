"""One flash: where each model's images go, what the board already holds (records checked by
reading back image header and rt_ctx), which 64 KB sectors differ, one programmer call writing
all of them, and the records updated only after the programmer reports a verified write."""
import hashlib
import os
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from ..errors import N6Error
from ..mpool import EXTERNAL_FLASH
from ..reloc.image import Image, RtCtx, align, detect_header_words, off
from . import mrel
from ..board import Board
from .backend import Backend, Download, Progress
from .gate import Placed, flash_pools, parse_image
from .records import RecordStore, changed_sectors, runs, sectors_of

READBACK_PARAMS = 256      # bytes read back from the start of a params image


@dataclass
class FlashImage:
    path: str                # shown in messages and reports
    address: int
    data: bytes
    role: str                # "network" | "params" | "pool" (an absolute flash pool's bytes) | "header"
    models: tuple[str, ...]   # the models this image belongs to
    region: tuple[str, int, int]   # (name, start, end)
    image: Image | None = None     # a network image as parsed by the layout (None: it does not parse)

    @property
    def placed(self) -> Placed:
        return Placed(self.path, self.address, len(self.data), self.role, self.region)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class ModelFiles:
    name: str
    network: str
    params: str | None = None   # split builds


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def layout(models: Sequence[ModelFiles], board: Board, multi_model: bool, flags: int = 0,
           warnings: list[str] | None = None) -> list[FlashImage]:
    """FlashImages for `models` (ModelFiles): 2.x one model at the board's addresses; 3.x each
    model's images packed sector-aligned from those addresses, plus the multi-model header with
    `flags` (the install mode) and the external exec RAM flag its models need on this board. An
    image's absolute flash pools go at their own addresses (`pool`), the image clear of them; a
    2.x image whose pools lie where the firmware reads it goes there as ST's flow puts it, its
    pools left out, with a line in `warnings`."""
    if not multi_model and len(models) != 1:
        raise N6Error(board.path, f"{len(models)} models for a 2.x install, which holds one model at a time",
                      "choose one with MODEL=")
    if len(models) > mrel.MAX_MODELS:
        raise N6Error(board.path, f"{len(models)} models; the multi-model header holds at most {mrel.MAX_MODELS}",
                      "choose at most 4 with MODEL=a,b,...")
    sector, img = board.flash.sector_size, board.images
    net_region = ("network", img.network, img.params)
    par_region = ("params", img.params, board.flash.end)
    out: list[FlashImage]
    out, pairs, exec_sizes = [], [], []
    net_at, par_at = img.network, img.params
    named: dict[str, str] = {}    # c-name → the image that carries it
    for m in models:
        data = _read(m.network)
        pdata = _read(m.params) if m.params else None
        try:
            image = parse_image(m.network, data, pdata)
        except N6Error:
            if multi_model:
                raise
            image = None          # no image: the gate refuses it with the loader's words (check_installs)
        pools = [FlashImage(f"{m.network} pool {d.name}", d.dst, raw, "pool", (m.name,),
                            ("external flash", *EXTERNAL_FLASH)) for d, raw in flash_pools(image)] if image else []
        at = _clear_of(net_at, len(data), [p for p in out if p.role == "pool"] + pools, sector)
        if at != net_at and not multi_model:
            p = next(p for p in pools if _share_a_sector(net_at, len(data), p, sector))
            (warnings if warnings is not None else []).append(
                f"{m.network}: its absolute flash pool at 0x{p.address:08X}-0x{p.address + len(p.data):08X} lies "
                f"where the firmware reads the image (0x{net_at:08X}, [images] network of {board.path}): the "
                "image goes there, as ST's flow puts it, and the network reads the image's bytes as its weights. "
                "For its weights build it with n6 for this board (its prepare step moves the pool clear of the "
                "image, unless epoch-controller blobs hold addresses in it), make the pool USEMODE_RELATIVE, or "
                "give a firmware that reads the image clear of the pool "
                f"([images] network = 0x{align(p.address + len(p.data), 16 << 20):08X})")
            pools, at = [], net_at
        out += pools
        out.append(FlashImage(m.network, at, data, "network", (m.name,),
                              net_region if at == net_at else ("network", at, board.flash.end), image))
        if multi_model:
            assert image is not None      # a 3.x image that does not parse stopped the layout above
            exec_sizes.append(image.xip_size if flags & mrel.FLAG_XIP else image.copy_size)
            _one_model_per_c_name(named, image, m.network)
        pair = [at, 0]
        net_at = align(at + len(data), sector)
        if m.params:
            assert pdata is not None      # read above, as m.params names it
            out.append(FlashImage(m.params, par_at, pdata, "params", (m.name,), par_region))
            pair[1] = par_at
            par_at = align(par_at + len(pdata), sector)
        pairs.append(tuple(pair))
    if multi_model:
        at = img.multi_model_header
        out.insert(0, FlashImage(f"multi-model header ({', '.join(m.name for m in models)})", at,
                                 mrel.build(pairs, mrel.flags_for(flags, exec_sizes, board.memory.exec_ram.size)),
                                 "header", tuple(m.name for m in models),
                                 ("multi-model header", at, at + board.flash.page_size)))
    return out


def _clear_of(at: int, size: int, pieces: Sequence[FlashImage], sector: int) -> int:
    """The first sector-aligned address from `at` where `size` bytes share no erase sector with
    `pieces` (a 3.x image moves past the absolute pools; the header gives the firmware its address)."""
    while True:
        hit = [p for p in pieces if _share_a_sector(at, size, p, sector)]
        if not hit:
            return at
        at = align(max(p.address + len(p.data) for p in hit), sector)


def _share_a_sector(at: int, size: int, piece: FlashImage, sector: int) -> bool:
    """Whether `size` bytes at `at` and `piece` share an erase sector (the programmer erases whole ones)."""
    return piece.address // sector <= (at + max(size, 1) - 1) // sector and \
        at // sector <= (piece.address + max(len(piece.data), 1) - 1) // sector


def _one_model_per_c_name(named: dict[str, str], image: Image, path: str) -> None:
    """ST's validation firmware runs the first installed model of the c-name a host asks for (and
    ST's client keeps one model per c-name): a second model of that name could never run."""
    c_name = image.string_at(image.rt_ctx.c_name) if image.rt_ctx else ""
    if c_name in named:
        raise N6Error(path, f"its model is named '{c_name}' on the board, as {named[c_name]}'s is: the firmware "
                      f"runs the first model of a name, so this one could not run",
                      "give each model its own c-name (model.json \"name\"), or put them on the board in turn")
    named[c_name] = path


def readback_ranges(image: FlashImage, record: bytes) -> list[tuple[int, int]]:
    """What to read back to trust `record` at the image's address: the header and rt_ctx of a
    network image (they carry the params size and CRC), the start of params, a whole MREL header."""
    a = image.address
    if image.role == "network" and len(record) >= 104:
        n = 4 * detect_header_words(record)
        rt_at = off(int.from_bytes(record[16:20], "little")) + off(int.from_bytes(record[n - 4:n], "little"))
        ranges = [(a, n)]
        if rt_at + RtCtx.SIZE <= len(record):
            ranges.append((a + rt_at, RtCtx.SIZE))
        return ranges
    if image.role in ("params", "pool"):
        return [(a, min(READBACK_PARAMS, len(record)))]
    return [(a, len(record))]


@dataclass
class ImageResult:
    image: FlashImage
    sectors: int
    written: list[int]       # sector addresses written
    bytes_written: int = 0
    seconds: float = 0.0
    full_reason: str | None = None   # why the whole image was written (None: diff against the record)

    def as_dict(self) -> dict[str, object]:
        return {"path": self.image.path, "role": self.image.role, "models": list(self.image.models),
                "address": f"0x{self.image.address:08X}", "size": len(self.image.data), "sha256": self.image.sha256,
                "sectors": self.sectors, "sectors_written": len(self.written),
                "sectors_skipped": self.sectors - len(self.written), "bytes_written": self.bytes_written,
                "seconds": round(self.seconds, 3), "full_write_reason": self.full_reason}


@dataclass
class FlashResult:
    serial: str | None
    images: list[ImageResult]
    programmer_calls: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def _plan(images: Sequence[FlashImage], store: RecordStore, serial: str | None, force: bool,
          pending: Collection[int] | None) -> list[tuple[bytes | None, str | None]]:
    """(record, why not) per image: the record the diff trusts until the read-back confirms it."""
    plans: list[tuple[bytes | None, str | None]] = []
    for im in images:
        record, why = store.load(serial, im.address) if serial else (None, "no record for this board")
        if force:
            record, why = None, "FORCE=1"
        elif pending is None:
            record, why = None, "damaged record of an interrupted flash"
        plans.append((record, why))
    return plans


def _downloads(results: Sequence[ImageResult], workdir: str, sector_size: int,
               skip: Collection[int] = ()) -> tuple[list[Download], list[int]]:
    """Files holding the bytes of each run of written sectors (but `skip`), with their owners."""
    downloads: list[Download] = []
    owners: list[int] = []
    for i, r in enumerate(results):
        for lo, hi in runs([s for s in r.written if s not in skip], sector_size):
            a, b = max(lo, r.image.address), min(hi, r.image.address + len(r.image.data))
            path = os.path.join(workdir, f"{a:08X}.bin")
            with open(path, "wb") as f:
                f.write(r.image.data[a - r.image.address:b - r.image.address])
            downloads.append(Download(path, a))
            owners.append(i)
            r.bytes_written += b - a
    return downloads, owners


def _credit(results: Sequence[ImageResult], owners: Iterable[int], seconds: Iterable[float]) -> None:
    for i, s in zip(owners, seconds):
        results[i].seconds += s


def deploy(images: Sequence[FlashImage], backend: Backend, store: RecordStore, sector_size: int, workdir: str,
           force: bool = False, reset: str = "none", serial_hint: str | None = None,
           on_progress: Progress | None = None, dry_run: bool = False) -> FlashResult:
    """Write what differs; returns FlashResult. Raises ProgrammerError/N6Error on failure, with no
    record updated.

    One programmer call in the common case: it reads back what the records of the expected probe
    say is on the board (image header and rt_ctx, start of params, the whole multi-model header)
    and writes the sectors that differ from those records, verified. When the read-back shows
    other bytes (another tool flashed the board, another probe answered), a second call writes the
    rest of those images; records are updated only once every write is verified."""
    start = time.monotonic()
    pending = store.pending(serial_hint) if serial_hint else set()
    plans = _plan(images, store, serial_hint, force, pending)
    results = []
    for im, (record, why) in zip(images, plans):
        every = sectors_of(im.address, len(im.data), sector_size)
        diff = every if record is None else changed_sectors(im.address, im.data, record, sector_size, pending or ())
        results.append(ImageResult(im, len(every), diff, full_reason=why if record is None else None))
    ranges = [r for im, (record, _) in zip(images, plans) if record is not None for r in readback_ranges(im, record)]
    downloads, owners = _downloads(results, workdir, sector_size)
    first, before = {s for r in results for s in r.written}, pending or set()
    if first and serial_hint and not dry_run:
        store.set_pending(serial_hint, before | first)
    serial, board_bytes, seconds = backend.exchange(ranges, downloads, verify=True, reset=reset,
                                                    on_progress=on_progress)
    _credit(results, owners, seconds)
    serial = serial or serial_hint or "unknown"
    if dry_run:
        return FlashResult(serial, results, 0, time.monotonic() - start, list(backend.notes))
    for im, (record, _), r in zip(images, plans, results):
        if record is None:
            continue
        mismatch = [a for a, n in readback_ranges(im, record)
                    if board_bytes.get(a) != record[a - im.address:a - im.address + n]]
        if serial != serial_hint:
            r.full_reason = "another probe answered than the records are for"
        elif mismatch:
            r.full_reason = f"board holds other bytes at 0x{mismatch[0]:08X} than this tool last wrote"
        if r.full_reason:
            r.written = sectors_of(im.address, len(im.data), sector_size)
    written = {s for r in results for s in r.written}
    mine = before if serial == serial_hint else store.pending(serial) or set()     # the board that answered
    rest, owners = _downloads(results, workdir, sector_size, skip=first)
    if rest:
        store.set_pending(serial, mine | written)
        _credit(results, owners, backend.program(rest, verify=True, reset=reset, on_progress=on_progress))
    for r in results:
        store.save(serial, r.image.address, r.image.data, r.image.path)
    store.set_pending(serial, mine - written)
    if serial_hint and serial != serial_hint:
        store.set_pending(serial_hint, before)                      # nothing was written to that board
    return FlashResult(serial, results, getattr(getattr(backend, "runner", None), "calls", 0),
                       time.monotonic() - start, list(backend.notes))
