"""`scons flash` / `scons flash-<model>`: deploy the relocatable images to the board, writing only
the 64 KB sectors whose bytes differ from what that board (probe serial) holds.

The flash step is an SCons node: `build/<model>/flash/on_board.json` (what is on the board, the
dependency of run/validate) and `flash.json` (this flash's report). Its signature is the images,
the board file and a Value with the deploy settings and the probe identity: the serial numbers of
the attached ST-LINKs as USB enumerates them (pyserial; the simulated board's probe.json), so a
swapped board reflashes while nothing changed costs no programmer call at all. What another tool
did to the board is only seen when a flash runs (read-back check) or with FORCE=1."""
import json
import os
import sys
import tempfile

import SCons.Action
import SCons.Script

from n6.board_files import DEFAULT_BOARD, board_path
from n6.errors import N6Error
from n6_scons import describe_targets, reports_errors, say, sim_board_dir, step_code

ST_USB_VENDOR = 0x0483
# what the flash action runs: the gate, the multi-model header, the deploy, the programmers
FLASH_MODULES = ["n6.atomic", "n6.board", "n6.flash.mrel", "n6.flash.deploy", "n6.flash.gate", "n6.flash.records",
                 "n6.flash.cubeprogrammer", "n6.flash.pyocd_backend", "n6.flash.runner", "n6.flash.validation_firmware",
                 "n6.releases", "n6.sizes"]


def _backend_choice(env, board):
    """(backend name, CliInstall or None); found once per build, not once per model."""
    choice = env.get("FLASH_BACKEND") or board.programmer.backend
    if choice not in _BACKENDS:
        _BACKENDS[choice] = _find_backend(choice, board)
    return _BACKENDS[choice]


_BACKENDS = {}


def _find_backend(choice, board):
    from n6.flash.cubeprogrammer import find_cli
    if choice == "pyocd":
        return "pyocd", None
    if choice == "simulated":
        from n6.flash.cubeprogrammer import CLI_NAME, CliInstall
        from n6.paths import SIM_PROGRAMMER_BIN
        return "stm32cubeprogrammer", CliInstall(os.path.join(SIM_PROGRAMMER_BIN, CLI_NAME), True,
                                                 "FLASH_BACKEND=simulated")
    install = find_cli(os.environ)
    if choice == "stm32cubeprogrammer" and install.simulated:
        raise N6Error(board.path, "programmer stm32cubeprogrammer requested but STM32_Programmer_CLI was not found",
                      "install STM32CubeProgrammer and set STM32_PROGRAMMER_CLI or STM32_CUBE_IDE_DIR")
    return "stm32cubeprogrammer", install


def attached_probes(simulated, sim_dir):
    """Serial numbers of the probes as the host sees them, without calling the programmer."""
    if simulated:
        from n6.simulators import load
        return [load("programmer_sim.board_state").BoardState(sim_dir).probe()["serial"]]
    try:
        from serial.tools import list_ports
        return sorted(p.serial_number for p in list_ports.comports() if p.vid == ST_USB_VENDOR and p.serial_number)
    except Exception:     # no USB enumeration here: the programmer tells the serial when it runs
        return []


_PROBES = {}


def _probes_once(simulated, sim_dir):
    key = (simulated, sim_dir)
    if key not in _PROBES:
        _PROBES[key] = attached_probes(simulated, sim_dir)
    return _PROBES[key]


def _models_to_flash(env, requested, all_models, board, multi):
    """The model set of one `scons flash` run, or a one-line error."""
    chosen = [m for m in env.get("MODEL", "").split(",") if m] or list(board.images.models)
    for m in chosen:
        if m not in all_models:
            raise N6Error(None, f"MODEL={m}: no such model", f"choose from {', '.join(sorted(all_models))}")
    sets = set()
    for t in requested:
        if t == "flash":
            if chosen:
                sets.add(tuple(chosen))
            elif len(all_models) == 1 or multi and len(all_models) <= 4:
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


def flash_targets(env, model_images, install_release):
    """Define `flash` / `flash-<model>` for what the command line asks. Remembers the models so
    that env.OnBoard(model) can give other steps (run, validate, profile) the flash step of a model
    (declaring it reads the board file and lists the attached probes)."""
    _CONTEXT[env.Dir("$BUILD_DIR").abspath] = (model_images, install_release)
    requested = [t for t in SCons.Script.COMMAND_LINE_TARGETS
                 if t == "flash" or t.startswith("flash-") and t[6:] in model_images]
    if not requested:
        return []
    from n6.board import load_board
    board = load_board(board_path(env["BOARD"]))
    models = _models_to_flash(env, requested, model_images, board, install_release.header_words > 24)
    nodes = _flash_step(env, models)
    for t in requested:
        env.Alias(t, nodes)
    return nodes


def on_board(env, model):
    """`build/<model>/flash/on_board.json`: the node that puts `model` on the board (its flash
    step, alone or in the set the command line flashes). Depend on it to run on the board; call
    it after FlashTargets. Defining steps costs no programmer call; building two different sets in
    one run is refused (the board holds one set)."""
    key = env.Dir("$BUILD_DIR").abspath
    if key not in _CONTEXT or model not in _CONTEXT[key][0]:
        raise N6Error(None, f"no model {model} to put on the board", "see `scons -h` for the models")
    for models, nodes in _STEPS.get(key, {}).items():
        if model in models:
            return nodes[2 * models.index(model)]
    return _flash_step(env, (model,))[0]


_CONTEXT = {}     # build dir → (model images, install release)
_FLASHED = {}     # build dir → the model set flashed in this run
_STEPS = {}       # build dir → {models: flash step nodes}


def _flash_step(env, models):
    """One flash step for `models` (together on the board): targets on_board.json + flash.json per model."""
    key = env.Dir("$BUILD_DIR").abspath
    model_images, install_release = _CONTEXT[key]
    bpath = board_path(env["BOARD"])
    from n6.board import load_board
    board = load_board(bpath)
    multi = install_release.header_words > 24
    backend, install = _backend_choice(env, board)
    simulated = install is not None and install.simulated
    probes = [env["PROBE"]] if env.get("PROBE") else _probes_once(simulated, sim_board_dir(env))
    cfg = {"board": bpath, "models": list(models), "multi": multi, "release": install_release.core,
           "backend": backend, "cli": install.cli if install else None, "simulated": simulated,
           "found_by": install.found_by if install else "pyocd", "probes": probes, "probe": env.get("PROBE") or None,
           "force": bool(env.get("FORCE")), "reset": env.get("FLASH_RESET", "none"),
           "dry_run": bool(env.get("DRY_RUN")), "copy_mode": bool(env.get("RELOC_COPY_MODE")),
           "ext_ram": _ext_ram_budget(env, board), "build_dir": env.Dir("$BUILD_DIR").path,
           "sim_board": sim_board_dir(env), "install_root": env.StedgeaiInstall()[0]}
    sources, files = _firmware_sources(env, board, cfg), {}
    for m in models:
        imgs = [n for n in model_images[m] if n.name.endswith(("_rel.bin", "_rel_params.bin"))]
        files[m] = {"network": next(n.path for n in imgs if n.name.endswith("_rel.bin")),
                    "params": next((n.path for n in imgs if n.name.endswith("_rel_params.bin")), None)}
        sources += imgs
    cfg["files"] = files
    targets = []
    for m in models:
        out = os.path.join("$BUILD_DIR", m, "flash")
        targets += [os.path.join(out, "on_board.json"), os.path.join(out, "flash.json")]
    nodes = env.Command(targets, sources + [env.File(bpath), env.Value(json.dumps(cfg, sort_keys=True))],
                        _FLASH_ACTION)
    env.Depends(nodes, step_code(env, "flash", FLASH_MODULES, __file__))
    env.NoCache(nodes)
    if cfg["force"] or cfg["dry_run"]:
        env.AlwaysBuild(nodes)
    _STEPS.setdefault(key, {})[tuple(models)] = nodes
    return nodes


def _firmware_sources(env, board, cfg):
    """The install's validation firmwares the gate may read (a changed one re-runs the gate)."""
    from n6.flash.validation_firmware import FIRMWARE_DIR, possible_variants
    if board.firmware is not None:
        return []
    names = {v.name for v in possible_variants(cfg["release"], board, cfg["copy_mode"])}
    paths = [os.path.join(cfg["install_root"], FIRMWARE_DIR, n) for n in sorted(names)]
    return [env.File(p) for p in paths if os.path.isfile(p)]


def _firmware_for(cfg, board, image, path):
    """What loads the image: the board file's [firmware], else the install's validation firmware
    variant for it, else ST's firmware of the release as documented. (firmware, -ext exec RAM
    (base, bytes used) or None)."""
    from n6.flash.gate import default_firmware
    from n6.flash.validation_firmware import EXT_EXEC_RAM, installed_firmware, variant_for
    from n6.releases import release
    if board.firmware is not None:
        return board.firmware, None
    found = installed_firmware(cfg["install_root"], cfg["release"], image, board, cfg["copy_mode"], path)
    if found is None:
        return default_firmware(release(cfg["release"]).core), None
    ext = variant_for(cfg["release"], image, board, cfg["copy_mode"], path).ext
    return found, (EXT_EXEC_RAM[0], image.copy_size if cfg["copy_mode"] else image.xip_size) if ext else None


def _ext_ram_budget(env, board):
    """External RAM the firmware gives the model: RELOC_EXT_RAM_SIZE, else the board's (None: no check)."""
    from n6.sizes import parse_size
    value = env.get("RELOC_EXT_RAM_SIZE")
    if value in (None, ""):
        return board.budgets["ext_ram"]   # as the pack step's size gate reads it (none on the board: no check)
    return parse_size(value, "RELOC_EXT_RAM_SIZE", allow_none=True)


def _sizes(n):
    return f"{n // 1024} KiB" if n < 10 << 20 else f"{n / (1 << 20):.1f} MiB"


class _Bar:
    """`  FLASH    [=====     ]  1.2 MiB of 2.0 MiB  98 KiB/s` redrawn on a terminal only."""

    def __init__(self, tag="", stream=sys.stdout):
        self.tag, self.stream, self.tty = tag, stream, stream.isatty()
        self.start = None
        self.shown = False

    def __call__(self, done, total):
        import time
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

    def close(self):
        if self.shown:
            self.stream.write("\r" + " " * 90 + "\r")
            self.stream.flush()


def _make_backend(cfg, board, log_path, serial):
    from n6.flash.cubeprogrammer import CliInstall, CubeProgrammer
    from n6.flash.pyocd_backend import PyOCD
    from n6.flash.runner import ToolRunner
    if cfg["backend"] == "pyocd":
        return PyOCD(board.programmer.pyocd_target, board.programmer.frequency, serial, log_path)
    install = CliInstall(cfg["cli"], cfg["simulated"], cfg["found_by"])
    environ = dict(os.environ)
    if install.simulated:
        environ["N6_SIM_BOARD"] = cfg["sim_board"]
    runner = ToolRunner(log_path, verbose=bool(cfg.get("verbose")), dry_run=cfg["dry_run"],
                        env=install.environ(environ))
    return CubeProgrammer(install, runner, board.flash.external_loader, board.programmer.frequency,
                          board.programmer.access_port, serial, log_path)


def _invalidate_other_stamps(build_dir, own, result):
    """Another model's on_board.json whose bytes this flash overwrote no longer holds: remove it,
    so its next flash runs (and finds, by the records, what to write back)."""
    import glob
    written = [(r.image.address, r.image.address + len(r.image.data)) for r in result.images]
    for stamp in glob.glob(os.path.join(build_dir, "*", "flash", "on_board.json")):
        if os.path.abspath(stamp) in own:
            continue
        try:
            with open(stamp, encoding="utf-8") as f:
                info = json.load(f)
            spans = [(int(i["address"], 16), int(i["address"], 16) + i["size"]) for i in info["images"]]
        except (OSError, ValueError, KeyError, TypeError):
            spans = [(0, 1 << 32)]
        if any(a < d and c < b for a, b in written for c, d in spans):
            os.unlink(stamp)


@reports_errors
def _flash_action(target, source, env):
    from n6.atomic import write_text
    from n6.flash import mrel
    from n6.flash.deploy import ModelFiles, deploy, layout
    from n6.flash.gate import check_external_pools, check_firmware, check_layout, parse_image
    from n6.flash.records import RecordStore
    cfg = json.loads(source[-1].read())
    cfg["verbose"] = bool(env.get("VERBOSE"))
    ran = _FLASHED.setdefault(cfg["build_dir"], cfg["models"])
    if ran != cfg["models"]:          # the board holds one set: a second one would overwrite the first
        raise N6Error(None, f"one run would put {', '.join(ran)} and then {', '.join(cfg['models'])} on the board",
                      "flash (or run) one model set at a time")
    from n6.board import load_board
    board = load_board(cfg["board"])
    models = [ModelFiles(m, cfg["files"][m]["network"], cfg["files"][m]["params"]) for m in cfg["models"]]
    flags = 0 if cfg["copy_mode"] else mrel.FLAG_XIP
    images = layout(models, board, cfg["multi"], flags)
    check_layout([im.placed for im in images], board)       # the gate: before any programmer call
    tag = "  SIMULATED" if cfg["simulated"] else ""
    for im in images:
        if im.role == "network":
            img = parse_image(im.path, im.data)
            firmware, ext_exec_ram = _firmware_for(cfg, board, img, im.path)
            for w in check_firmware(im.path, im.data, firmware, cfg["ext_ram"], board.path):
                say(f"  WARNING  {w}{tag}")
            check_external_pools(im.path, img, board, ext_exec_ram)
    flash_dir = os.path.dirname(target[0].abspath)
    log_path = os.path.join(os.path.relpath(flash_dir), "programmer.log")
    if os.path.exists(log_path):
        os.unlink(log_path)
    backend = _make_backend(cfg, board, log_path, cfg["probe"])
    backend.check_options(cfg["reset"], cfg["probe"])
    probes = cfg["probes"] or ([] if cfg["probe"] or cfg["dry_run"] else backend.probes())
    if not cfg["probe"] and len(probes) > 1:
        raise N6Error(None, f"several probes attached: {', '.join(probes)}", "choose one with PROBE=<serial>")
    hint = cfg["probe"] or (probes[0] if probes else None)
    store = RecordStore(os.path.join(cfg["build_dir"], "deploy-records"))
    bar = _Bar(tag)
    with tempfile.TemporaryDirectory(prefix="n6-flash-") as work:
        try:
            result = deploy(images, backend, store, board.flash.sector_size, work, force=cfg["force"],
                            reset=cfg["reset"], serial_hint=hint, on_progress=bar, dry_run=cfg["dry_run"])
        finally:
            bar.close()
    for note in result.notes:
        say(f"  FLASH    {note}{tag}")
    for r in result.images:
        say(f"  FLASH    {r.image.path} \u2192 0x{r.image.address:08X}: {len(r.written)} of {r.sectors} sectors "
            f"({r.bytes_written // 1024} KiB) in {r.seconds:.1f} s{tag}")
    if cfg["dry_run"]:
        return None
    report = {"board": board.key, "board_name": board.name, "probe": result.serial, "simulated": cfg["simulated"],
              "backend": cfg["backend"], "programmer": cfg["cli"], "found_by": cfg["found_by"],
              "models": cfg["models"], "force": cfg["force"], "programmer_calls": result.programmer_calls,
              "seconds": round(result.seconds, 3), "bytes_written": sum(r.bytes_written for r in result.images),
              "notes": result.notes, "images": [r.as_dict() for r in result.images]}
    own = set()
    for i, m in enumerate(cfg["models"]):
        on_board = {"board": board.key, "probe": result.serial, "simulated": cfg["simulated"], "model": m,
                    "images": [{"path": r.image.path, "role": r.image.role, "address": f"0x{r.image.address:08X}",
                                "size": len(r.image.data), "sha256": r.image.sha256}
                               for r in result.images if m in r.image.models]}
        write_text(target[2 * i].abspath, json.dumps(on_board, indent=1) + "\n")
        write_text(target[2 * i + 1].abspath, json.dumps(report, indent=1) + "\n")
        own.add(target[2 * i].abspath)
    _invalidate_other_stamps(cfg["build_dir"], own, result)
    return None


_FLASH_ACTION = SCons.Action.Action(_flash_action, None)   # made once: making one signs the function's code


def generate(env):
    describe_targets(env, ("flash", "put the chosen model(s) on the board (BOARD=, MODEL=), writing changed sectors "
                                    "only"), ("flash-<model>", "put that model on the board"))
    env.SetDefault(BOARD=DEFAULT_BOARD, MODEL="", PROBE="", FORCE=False, FLASH_BACKEND="", FLASH_RESET="none",
                   DRY_RUN=False)
    env.AddMethod(flash_targets, "FlashTargets")
    env.AddMethod(on_board, "OnBoard")


def exists(env):
    return True
