"""`python -m n6board --image network_rel.bin [--params P] [--port-file F] [--rfc2217 HOST:PORT]`:
the simulated STM32N6570-DK running ST's aiValidation reloc firmware, on a pseudo-terminal (and
over the network). Prints (or writes to --port-file) the pty's path, then serves the host until
the link drops or it is terminated.
The firmware is the board's own (Python, the default) or, with `--firmware` / N6_SIM_FIRMWARE,
ST's validation firmware ELF itself on the DK twin (`dk/`)."""
import argparse
import os
import sys
import tty

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "site_scons"))
sys.path.insert(0, os.path.join(ROOT, "sim", "programmer"))
sys.path.insert(0, os.path.join(ROOT, "sim", "npu"))

from n6.atomic import write_text  # noqa: E402
from n6.board import load_board  # noqa: E402
from n6.board_files import board_path  # noqa: E402
from n6.flash import mrel  # noqa: E402
from n6.releases import release  # noqa: E402
from n6.reloc.check import LoaderError  # noqa: E402
from n6.reloc.image import Header, Image, off  # noqa: E402

from npu_model.npu import MODES  # noqa: E402
from unicorn import UcError  # noqa: E402

from .emulator import Fault, NpuAccess, NpuStopped  # noqa: E402
from .firmware import InstalledModel, layout_from_board  # noqa: E402
from .server import Board, BoardReset, FdPort  # noqa: E402


def read_flash(state, board, release):
    """[(image, split params or None, mode)] as the firmware finds them in the memory-mapped flash:
    with a 3.x firmware the models of the multi-model header ("MREL") when there is one, else the
    image at the board file's network address."""
    from programmer_sim.board_state import BoardState
    flash = BoardState(state)
    found = None
    if release.header_words > 24:
        found = mrel.parse(flash.read(board.images.multi_model_header, 12 + 8 * mrel.MAX_MODELS))
    flags, pairs = found or (0, [(board.images.network, 0)])
    mode = "XIP" if flags & mrel.FLAG_XIP else "COPY"
    return [_read_image(flash, at, params_at or board.images.params) + (mode,) for at, params_at in pairs]


def _read_image(flash, at, params_at):
    """The image at `at` as much as its header describes, whatever its size (then its params)."""
    head = flash.read(at, 4 * 32)
    if head[:4] != b"NBIN":
        return head[:4], None
    img = Image.parse(flash.read(at, _end(Header.parse(head))))
    h = img.header
    if h.params_offset:
        return flash.read(at, h.params_offset + _params_len(img)), None
    return flash.read(at, (off(h.rel_end) + 7) & ~7), flash.read(params_at, _params_len(img))


def flash_pools(state, data, params):
    """[(address, bytes)] of the image's absolute pools in the memory-mapped flash, as the board's
    flash holds them (the runtime reads them there; `scons flash` puts them at their address)."""
    from n6.flash.gate import flash_pools as pools
    from programmer_sim.board_state import BoardState
    if not state:
        return []
    flash = BoardState(state)
    return [(d.dst, flash.read(d.dst, d.size)) for d, _ in pools(Image.parse(data, params=params))]


def _end(h):
    return max(off(h.rel_end), off(h.data_data) + off(h.bss_start), 0x60)


def _params_len(img):
    """Bytes of the params area the descriptors read (the firmware maps the flash; we read it)."""
    return max([d.foff + ((d.size + 7) & ~7) for d in img.descriptors if d.type in (1, 2)] + [0])


def boot(args):
    """(models, install error text, banner lines)."""
    banner = ["", "#", "# aiValidation (simulated STM32N6570-DK, reloc firmware)", "#"]
    board = load_board(args.board)
    if args.image:
        with open(args.image, "rb") as f:
            data = f.read()
        params = None
        if args.params:
            with open(args.params, "rb") as f:
                params = f.read()
        images = [(data, params, args.mode)]
    else:
        images = read_flash(args.state, board, release(args.release))
    layout = layout_from_board(board)
    exec_base, exec_size = layout["exec_ram"]
    models = []
    for data, params, mode in images:
        if len(data) < 4 or data[:4] != b"NBIN":
            banner.append("No relocatable model found in flash")
            continue
        try:
            model = InstalledModel(data, params, dict(layout, exec_ram=(exec_base, exec_size)), core=args.release,
                                   mode=args.mode or mode, board_firmware=board.firmware, npu_model=args.npu_model,
                                   flash=flash_pools(args.state, data, params))
        except LoaderError as e:
            text = f"AI RELOC ERROR: install failed, {e.name} ({e.code}): {e.detail}"
            return models, text, banner + [text]
        except NpuStopped as e:
            text = f"model initialisation: {e}"
            return models, text, banner + [text]
        except NpuAccess as e:
            text = f"model initialisation programs the NPU ({e}): hardware epochs are not executable on the " \
                   "simulated board"
            return models, text, banner + [text]
        except (Fault, UcError) as e:      # the model's init code (or its tables) crashed
            text = f"HardFault during model initialisation: {e}"
            return models, text, banner + [text]
        used = ((model.img.xip_size if model.mode == "XIP" else model.img.copy_size) + 31) & ~31
        exec_base, exec_size = exec_base + used, exec_size - used    # the next model's exec RAM
        models.append(model)
        banner.append(f"Model installation: {model.name} ({model.mode}), runtime {model.runtime_desc}")
    banner += ["READY to receive a CMD from the HOST...", "Protocol version = 3.1"]
    return models, None, banner


def main(argv=None):
    ap = argparse.ArgumentParser(prog="n6board")
    ap.add_argument("--board", default=board_path("stm32n6570-dk"))
    ap.add_argument("--state", default=os.environ.get("N6_SIM_BOARD", ""), help="simulated board state folder")
    ap.add_argument("--image", help="boot this image file instead of the simulated flash")
    ap.add_argument("--params")
    ap.add_argument("--release", default="2.2")
    ap.add_argument("--mode", choices=("COPY", "XIP"), help="install mode (default: COPY, or the MREL header's)")
    ap.add_argument("--header", choices=("2byte", "1byte"), help="default: the board file's [validation] header")
    ap.add_argument("--port-file")
    ap.add_argument("--rfc2217", metavar="HOST:PORT",
                    help="also serve the port over the network (RFC 2217, as a lab's exporter; PORT 0: a free one); "
                         "the port file then names its rfc2217:// URL")
    ap.add_argument("--firmware", default=os.environ.get("N6_SIM_FIRMWARE", ""),
                    help="run ST's validation firmware on the DK twin: its ELF, an ST Edge AI Core install (the "
                         "variant that loads the flashed image), or 'st' (the install STEDGEAI_CORE_DIR names); "
                         "default: the simulated board's own firmware")
    args = ap.parse_args(argv)
    args.npu_model = os.environ.get("NPU_MODEL") or "stop"
    if args.npu_model not in MODES:
        sys.exit(f"NPU_MODEL={args.npu_model}: not a mode of the NPU model (fix: set NPU_MODEL to one of "
                 f"{', '.join(MODES)}, or unset it)")
    master, slave = os.openpty()
    tty.setraw(slave)
    tty.setraw(master)
    path = os.ttyname(slave)
    if args.firmware:
        from .dk import serve
        board = load_board(args.board)
        images = read_flash(args.state, board, release(args.release)) if args.state else []
        sys.exit(serve.serve(args, board, images, master, lambda: _publish(args, path)))
    serve_own_firmware(args, master, lambda: _publish(args, path))


def serve_own_firmware(args, master, publish):
    """The board's own firmware: boot, publish the port once, serve; the programmer's reset
    (-rst, -hardRst on the board's state) boots it again from the flash."""
    from .dk.serve import board_state, release_emulators
    state, published = board_state(args.state), False
    while True:
        done, watch = state.watch_resets() if state else (0, lambda: False)
        models, error, banner = boot(args)
        os.write(master, ("\r\n".join(banner) + "\r\n").encode())
        if state:
            state.board_served(done)
        if not published:
            publish()
            published = True
        port = FdPort(master, watch)
        try:
            Board(port, args.header or load_board(args.board).validation.header, models, error,
                  os.environ.get("N6_SIM_BOARD_FAULT", "")).serve()
            return
        except BoardReset:
            port.drain()
            models = error = None
            release_emulators()


def _publish(args, path):
    """Tell the host where the board is: the port file, else stdout (the network port's URL with
    --rfc2217)."""
    if args.rfc2217:
        from . import network_port
        host, _, port = args.rfc2217.rpartition(":")
        path, _ = network_port.serve(path, host or "127.0.0.1", int(port or 0))   # served until the board exits
    if args.port_file:
        write_text(args.port_file, path + "\n")
    else:
        print(path, flush=True)


if __name__ == "__main__":
    main()
