"""The flash step without SCons: which models go on the board, which programmer and probe, the
gate (layout, the image checker, the firmware that will load each image), the deploy of the
changed sectors, and the reports. `scons flash` declares it; `FlashOptions` is its signature."""
from __future__ import annotations

import contextlib
import glob
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import IO, TYPE_CHECKING

from ..atomic import write_text
from ..board import Board, load_board
from ..build_layout import ModelLayout, deploy_records
from ..errors import N6Error
from . import mrel
from .deploy import ModelFiles, deploy, layout
from .project import DEPLOY_VERBS
from .gate import check_external_pools, check_firmware, check_installs, check_layout, default_firmware
from .shared_board import board_holds, forget_held, record_held
from .records import RecordStore

if TYPE_CHECKING:                 # the programmers and firmwares are imported when a step needs them
    from ..releases import Release
    from ..reloc.firmware import Firmware
    from ..reloc.image import Image
    from .backend import Backend
    from .boards import ExporterProbe, LabPlace
    from .cubeprogrammer import CliInstall
    from .deploy import FlashResult

ST_USB_VENDOR = 0x0483


@dataclass(frozen=True)
class FlashOptions:
    board: str                # the board file
    # ((model, network image, params image or None), ...) going on the board together
    files: tuple[tuple[str, str, str | None], ...]
    multi: bool               # a 3.x release: several models behind the multi-model header
    release: str              # ST Edge AI Core release of the install
    backend: str              # "stm32cubeprogrammer" | "pyocd"
    cli: str | None           # STM32_Programmer_CLI (None for pyOCD)
    simulated: bool           # the simulated programmer
    found_by: str             # how the programmer was found
    probes: tuple[str, ...]   # serial numbers of the attached probes (USB), or PROBE=
    probe: str | None         # PROBE= or None
    force: bool
    reset: str                # FLASH_RESET=
    dry_run: bool
    copy_mode: bool           # RELOC_COPY_MODE: the firmware installs in COPY mode
    ext_ram: int | None       # the external RAM the firmware gives the model (None: no check)
    build_dir: str
    sim_board: str            # the simulated board's state folder
    install_root: str
    exporter: ExporterProbe | None = None    # the probe is on a labgrid exporter's host: its programmer flashes
    sim_probe: str = ""       # a simulated board of several: the probe serial its folder is made with
    place: LabPlace | None = None    # the labgrid place of the board (n6.flash.boards.on_place_board)

    @property
    def models(self) -> list[str]:
        return [m for m, _, _ in self.files]

    def programmer_install(self) -> CliInstall | None:
        """The STM32_Programmer_CLI that flashes (None: pyOCD): the one on the labgrid exporter's
        host the probe is plugged into, else this machine's."""
        from .cubeprogrammer import CliInstall
        if self.backend == "pyocd":
            return None
        if self.exporter:
            return CliInstall(self.exporter.programmer, False, self.exporter.found_by)
        return CliInstall(self.cli, self.simulated, self.found_by)   # type: ignore[arg-type]  # not pyOCD: a CLI

    def for_steps(self) -> FlashOptions:
        """These options as the steps that put the set on the board themselves sign them: FORCE=
        and DRY_RUN= are the flash step's alone."""
        return replace(self, force=False, dry_run=False)


def find_programmer(choice: str, board: Board,
                    environ: Mapping[str, str] = os.environ) -> tuple[str, CliInstall | None]:
    """(backend name, CliInstall or None) for FLASH_BACKEND= / the board file's choice."""
    from .cubeprogrammer import CliInstall, find_cli
    if choice == "pyocd":
        return "pyocd", None
    if choice == "simulated":
        return "stm32cubeprogrammer", CliInstall.simulated_cli("FLASH_BACKEND=simulated")
    install = find_cli(environ)
    if choice == "stm32cubeprogrammer" and install.simulated:
        raise N6Error(board.path, "programmer stm32cubeprogrammer requested but STM32_Programmer_CLI was not found",
                      "install STM32CubeProgrammer and set STM32_PROGRAMMER_CLI or STM32_CUBE_IDE_DIR")
    return "stm32cubeprogrammer", install


def make_programmer(opts: FlashOptions, board: Board, log_path: str, verbose: bool = False) -> Backend:
    """The backend that talks to the probe: STM32_Programmer_CLI through the tool runner, or pyOCD."""
    from .cubeprogrammer import CubeProgrammer
    from .pyocd_backend import PyOCD
    from ..tool_runner import Runner, ToolRunner
    install = opts.programmer_install()
    if install is None:
        return PyOCD(board.programmer.pyocd_target, board.programmer.frequency, opts.probe, log_path)
    environ = dict(os.environ)
    if install.simulated:
        environ["N6_SIM_BOARD"] = opts.sim_board
    local = ToolRunner(log_path, verbose=verbose, dry_run=opts.dry_run, env=install.environ(environ))
    runner: Runner = local
    cls: type[CubeProgrammer] = CubeProgrammer
    if opts.exporter:             # the probe is on the exporter's host: the programmer runs there
        from .remote import ExporterProgrammer, RemoteRunner
        cls, runner = ExporterProgrammer, RemoteRunner(opts.exporter.host, local)
    return cls(install, runner, board.flash.external_loader, board.programmer.frequency,
               board.programmer.access_port, opts.probe, log_path)


def attached_probes(simulated: bool, sim_dir: str) -> list[str]:
    """Serial numbers of the probes as the host sees them, without calling the programmer."""
    if simulated:
        from ..simulators import probe_serial
        return [probe_serial(sim_dir)]
    try:
        from serial.tools import list_ports
        return sorted(p.serial_number for p in list_ports.comports() if p.vid == ST_USB_VENDOR and p.serial_number)
    except Exception:     # no USB enumeration here: the programmer tells the serial when it runs
        return []


def chosen_models(model_var: str, board: Board, all_models: Collection[str],
                  broken: Mapping[str, N6Error] | None = None) -> list[str]:
    """The models the user chose: MODEL= (comma list), else the board file's `models` (empty: no
    choice). A name that is no model is a one-line error; a model folder that cannot be read
    (`broken`: name → its N6Error), its own."""
    chosen = [m.strip() for m in model_var.split(",") if m.strip()] or list(board.images.models)
    for m in chosen:
        if m in (broken or {}):
            raise broken[m]   # type: ignore[index]  # m is in broken
        if m not in all_models:
            raise N6Error(None, f"MODEL={m}: no such model", f"choose from {', '.join(sorted(all_models))}")
    return chosen


def models_to_flash(chosen: Sequence[str], requested: Iterable[str], all_models: Collection[str], board: Board,
                    multi: bool) -> tuple[str, ...]:
    """The model set of one `scons flash` run (`chosen`: chosen_models, `requested`: the flash
    targets of the command line), or a one-line error."""
    sets: set[tuple[str, ...]] = set()
    for t in requested:
        if t == "flash":
            if chosen:
                sets.add(tuple(chosen))
            elif len(all_models) == 1 or multi and len(all_models) <= mrel.MAX_MODELS:
                sets.add(tuple(sorted(all_models)))
            else:
                raise N6Error(None, f"several models and no choice: {', '.join(sorted(all_models))}",
                              f"scons flash MODEL=<name>, or models = [...] in {board.path}")
        else:
            sets.add((t[len("flash-"):],))
    if len(sets) > 1:
        raise N6Error(None, f"flash targets name different model sets {sorted(sets)}", "flash one set at a time")
    models = sets.pop()
    if not multi and len(models) > 1:
        raise N6Error(None, f"{', '.join(models)}: a 2.x install holds one model on the board at a time",
                      "choose one with MODEL=")
    return models


def run_options(board_file: str, release: Release, backend: str, force: bool, reset: str, dry_run: bool,
                copy_mode: bool, ext_ram: str, build_dir: str, install_root: str) -> FlashOptions:
    """The FlashOptions of one build run before a model set and a board are given them
    (n6.flash.project.Deployment.plan). `backend`: FLASH_BACKEND= (empty: the board file's
    choice, found by find_programmer); `ext_ram`: RELOC_EXT_RAM_SIZE=."""
    board = load_board(board_file)
    backend, install = find_programmer(backend or board.programmer.backend, board)
    return FlashOptions(board=board.path, files=(), multi=release.multi_model, release=release.core,
                        backend=backend, cli=install.cli if install else None,
                        simulated=install is not None and install.simulated,
                        found_by=install.found_by if install else "pyocd", probes=(), probe=None, force=force,
                        reset=reset, dry_run=dry_run, copy_mode=copy_mode, ext_ram=ext_ram_budget(ext_ram, board),
                        build_dir=build_dir, sim_board="", install_root=install_root)


def ext_ram_budget(value: str, board: Board) -> int | None:
    """External RAM the firmware gives the model: RELOC_EXT_RAM_SIZE's `value`, else the board
    file's, as the pack step's size gate reads it (None: no check)."""
    if value in (None, ""):
        return board.budgets["ext_ram"]
    from ..sizes import parse_size
    return parse_size(value, "RELOC_EXT_RAM_SIZE", allow_none=True)


def deploy_requests(targets: Iterable[str], chosen: Sequence[str], all_models: Collection[str]) -> dict[str, list[str]]:
    """verb → the models the command line asks it for: `<verb>-<model>`, and for a bare `<verb>`
    the chosen models, else every model (a whole-project run)."""
    wanted: dict[str, set[str]] = {}
    for t in targets:
        verb, _, name = t.partition("-")
        if verb in DEPLOY_VERBS and (not name or name in all_models):
            wanted.setdefault(verb, set()).update([name] if name else chosen or all_models)
    return {verb: sorted(models) for verb, models in wanted.items()}


def board_sets(models: Iterable[str], multi: bool, held: Sequence[str] = (),
               names: Mapping[str, str] | None = None) -> list[tuple[str, ...]]:
    """The model sets put on the board in turn so that each of `models` runs: the set the board
    already holds (`held`) first when it has any of them, so that running one model of a flashed
    3.x set keeps the set; then the rest in sets of up to four (3.x) or one by one (2.x), never two
    models of one name on the board (`names`: model → the name the board knows it by; the firmware
    runs the first model of a name)."""
    sets: list[tuple[str, ...]]
    todo, sets = sorted(models), []
    if set(held) & set(todo) and (multi or len(held) == 1):    # a 3.x set held is no set for a 2.x install
        sets.append(tuple(held))
        todo = [m for m in todo if m not in held]
    size = mrel.MAX_MODELS if multi else 1
    name = (names or {}).get
    filling: list[list[str]] = []
    for m in todo:
        room = next((s for s in filling if len(s) < size and name(m, m) not in {name(x, x) for x in s}), None)
        if room is None:
            filling.append(room := [])
        room.append(m)
    return sets + [tuple(s) for s in filling]


def held_set(build_dir: str, models: Iterable[str], all_models: Collection[str]) -> tuple[str, ...]:
    """The model set the board holds as the last flash recorded it (the `set` of the models'
    on_board.json; a flash that overwrote a model removed its file), or () when unknown."""
    for m in models:
        try:
            with open(ModelLayout(build_dir, m).on_board, encoding="utf-8") as f:
                held = tuple(json.load(f).get("set", ()))
        except (OSError, ValueError, AttributeError, TypeError):
            continue
        if m in held and all(isinstance(x, str) and x in all_models for x in held):
            return held
    return ()


def firmware_files(board: Board, release: str, copy_mode: bool, install_root: str) -> list[str]:
    """The install's validation firmwares the gate may read (a changed one re-runs the gate)."""
    from .validation_firmware import FIRMWARE_DIR, possible_variants
    if board.firmware is not None:
        return []
    names = {v.name for v in possible_variants(release, board, copy_mode)}
    return [p for p in (os.path.join(install_root, FIRMWARE_DIR, n) for n in sorted(names)) if os.path.isfile(p)]


def firmware_for(opts: FlashOptions, board: Board, image: Image,
                 path: str) -> tuple[Firmware, tuple[int, int] | None]:
    """What loads the image: the board file's [firmware], else the install's validation firmware
    variant for it, else ST's firmware of the release as documented. (firmware, -ext exec RAM
    (base, bytes used) or None)."""
    from .validation_firmware import EXT_EXEC_RAM, installed_firmware, variant_for
    if board.firmware is not None:
        return board.firmware, None
    found = installed_firmware(opts.install_root, opts.release, image, board, opts.copy_mode, path)
    if found is None:
        return default_firmware(opts.release), None
    ext = variant_for(opts.release, image, board, opts.copy_mode, path).ext
    return found, (EXT_EXEC_RAM[0], image.copy_size if opts.copy_mode else image.xip_size) if ext else None


def _sizes(n: int) -> str:
    return f"{n // 1024} KiB" if n < 10 << 20 else f"{n / (1 << 20):.1f} MiB"


class ProgressBar:
    """`  FLASH    [=====     ]  1.2 MiB of 2.0 MiB  98 KiB/s` redrawn on a terminal only."""

    def __init__(self, tag: str = "", stream: IO[str] = sys.stdout) -> None:
        self.tag, self.stream, self.tty = tag, stream, stream.isatty()
        self.start: tuple[float, int] | None = None
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if not self.tty or not total:
            return
        now = time.monotonic()
        self.start = self.start or (now, done)
        elapsed = now - self.start[0]
        rate = f"{(done - self.start[1]) / elapsed / 1024:.0f} KiB/s" if elapsed > 0.2 else ""
        fill = 30 * done // total
        self.stream.write(f"\r  FLASH    [{'=' * fill}{' ' * (30 - fill)}] {_sizes(done)} of {_sizes(total)} "
                          f"{rate:<12}{self.tag}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * 90 + "\r")
            self.stream.flush()


def invalidate_other_stamps(build_dir: str, own: Collection[str], result: FlashResult) -> None:
    """Another model's on_board.json on the same board (probe) whose bytes this flash overwrote no
    longer holds: remove it, so its next flash runs (and finds, by the records, what to write back).
    The steps of other boards remove stamps too, side by side: one gone meanwhile is left alone."""
    written = [(r.image.address, r.image.address + len(r.image.data)) for r in result.images]
    for stamp in glob.glob(ModelLayout(build_dir, "*").on_board):
        if os.path.abspath(stamp) in own:
            continue
        try:
            with open(stamp, encoding="utf-8") as f:
                info = json.load(f)
            if info.get("probe") != result.serial:      # on another board
                continue
            spans = [(int(i["address"], 16), int(i["address"], 16) + i["size"]) for i in info["images"]]
        except (OSError, ValueError, KeyError, TypeError):
            spans = [(0, 1 << 32)]
        if any(a < d and c < b for a, b in written for c, d in spans):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(stamp)


def on_board_path(opts: FlashOptions, model: str) -> str:
    """The model's on_board.json (a deploy stamp)."""
    return ModelLayout(opts.build_dir, model).on_board


def stamp_paths(opts: FlashOptions) -> list[tuple[str, str]]:
    """(on_board.json, flash.json) of each model of the set: what the flash step leaves."""
    layouts = [ModelLayout(opts.build_dir, m) for m in opts.models]
    return [(layout.on_board, layout.flash_report) for layout in layouts]


def holds(opts: FlashOptions) -> bool:
    """Whether the board holds the set as the last flash left it: each model's on_board.json
    is there (a flash over it removes it) and names these images at these addresses, this set,
    and a probe that is attached, and the board's record says no other build flashed it since.
    No programmer call: what another tool wrote is not seen (the run's identity check is)."""
    wanted, seen = None, set()
    for on_board, _ in stamp_paths(opts):
        try:
            with open(on_board, encoding="utf-8") as f:
                stamp = json.load(f)
            if stamp.get("set") != opts.models or opts.probes and stamp.get("probe") not in opts.probes:
                return False
            if wanted is None:
                images = layout([ModelFiles(*f) for f in opts.files], load_board(opts.board), opts.multi,
                                0 if opts.copy_mode else mrel.FLAG_XIP)
                wanted = {im.path: (f"0x{im.address:08X}", im.sha256) for im in images}
            if any(wanted.get(i["path"]) != (i["address"], i["sha256"]) for i in stamp["images"]):
                return False
            seen |= {i["path"] for i in stamp["images"]}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return False
    return wanted is not None and seen == set(wanted) and \
        board_holds(opts, [(int(a, 16), h) for a, h in wanted.values()])


def ensure_on_board(opts: FlashOptions, say: Callable[[str], object] = print, verbose: bool = False) -> None:
    """Put the set on the board unless it holds it (holds): what a step that runs a model does
    first, so that it is right whatever ran on the board before it."""
    if not holds(opts):
        flash_step(opts, stamp_paths(opts), say, verbose)


def flash_step(opts: FlashOptions, reports: Sequence[tuple[str, str]], say: Callable[[str], object] = print,
               verbose: bool = False) -> None:
    """Put the models on the board: the gate before any programmer call, then the changed sectors.
    `reports`: per model (on_board.json, flash.json) paths, written when the flash is verified."""
    board = load_board(opts.board)
    models = [ModelFiles(m, network, params) for m, network, params in opts.files]
    notes: list[str] = []
    images = layout(models, board, opts.multi, 0 if opts.copy_mode else mrel.FLAG_XIP, notes)
    check_layout([im.placed for im in images], board)       # the gate: before any programmer call
    tag = ("  SIMULATED" if opts.simulated else "") + ("  DRY RUN: nothing was written" if opts.dry_run else "")
    for w in notes:
        say(f"  WARNING  {w}{tag}")
    for im in images:
        if im.role == "network":
            params = next((p.data for p in images if p.role == "params" and p.models == im.models), None)
            try:
                img = check_installs(im.path, im.data, params, im.image)   # as the layout parsed it, if it did
            except N6Error:
                os.unlink(im.path)      # changed outside the build: the next build makes it again
                raise
            firmware, ext_exec_ram = firmware_for(opts, board, img, im.path)
            for w in check_firmware(im.path, im.data, firmware, opts.ext_ram, board.path, img):
                say(f"  WARNING  {w}{tag}")
            check_external_pools(im.path, img, board, ext_exec_ram)
    log_path = os.path.join(os.path.relpath(os.path.dirname(reports[0][0])), "programmer.log")
    if os.path.exists(log_path):
        os.unlink(log_path)
    if opts.sim_probe and not opts.dry_run:
        from .boards import make_simulated_board
        make_simulated_board(opts.sim_board, opts.sim_probe)
    backend = make_programmer(opts, board, log_path, verbose)
    backend.check_options(opts.reset, opts.probe)
    probes = list(opts.probes) or ([] if opts.probe or opts.dry_run else backend.probes())
    if not opts.probe and len(probes) > 1:
        raise N6Error(None, f"several probes attached: {', '.join(probes)}", "choose one with PROBE=<serial>")
    store = RecordStore(deploy_records(opts.build_dir))
    bar = ProgressBar(tag)
    if not opts.dry_run:
        forget_held(opts)         # until the flash is verified, nobody knows what the board holds
    with tempfile.TemporaryDirectory(prefix="n6-flash-") as work:
        try:
            result = deploy(images, backend, store, board.flash.sector_size, work, force=opts.force,
                            reset=opts.reset, serial_hint=opts.probe or (probes[0] if probes else None),
                            on_progress=bar, dry_run=opts.dry_run)
        finally:
            bar.close()
    if backend.simulated and not opts.simulated:      # the programmer on a lab machine said it is simulated
        tag = "  SIMULATED" + tag
    for note in result.notes:
        say(f"  FLASH    {note}{tag}")
    for r in result.images:
        say(f"  FLASH    {r.image.path} \u2192 0x{r.image.address:08X}: {len(r.written)} of {r.sectors} sectors "
            f"({r.bytes_written // 1024} KiB) in {r.seconds:.1f} s{tag}")
    if opts.dry_run:
        return
    record_held(opts, [(im.address, im.sha256) for im in images])
    install = opts.programmer_install()
    report = {"board": board.key, "board_name": board.name, "probe": result.serial, "simulated": backend.simulated,
              "backend": opts.backend, "programmer": install.cli if install else None,
              "found_by": install.found_by if install else opts.found_by,
              "models": opts.models, "force": opts.force, "programmer_calls": result.programmer_calls,
              "seconds": round(result.seconds, 3), "bytes_written": sum(r.bytes_written for r in result.images),
              "notes": result.notes, "images": [r.as_dict() for r in result.images]}
    own = set()
    for m, (stamp, flash_json) in zip(opts.models, reports):
        on_board = {"board": board.key, "probe": result.serial, "simulated": backend.simulated, "model": m,
                    "set": opts.models,
                    "images": [{"path": r.image.path, "role": r.image.role, "address": f"0x{r.image.address:08X}",
                                "size": len(r.image.data), "sha256": r.image.sha256}
                               for r in result.images if m in r.image.models]}
        os.makedirs(os.path.dirname(stamp), exist_ok=True)     # a step's own flash (ensure_on_board)
        write_text(stamp, json.dumps(on_board, indent=1) + "\n")
        write_text(flash_json, json.dumps(report, indent=1) + "\n")
        own.add(os.path.abspath(stamp))
    invalidate_other_stamps(opts.build_dir, own, result)
