"""`python -m n6board --image network_rel.bin [--params P] [--port-file F]`: the simulated
STM32N6570-DK running ST's aiValidation reloc firmware, on a pseudo-terminal. Prints (or writes
to --port-file) the pty's path, then serves the host until the link drops or it is terminated."""
import argparse
import os
import sys
import tty

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "site_scons"))

from n6.atomic import write_text  # noqa: E402
from n6.reloc.check import LoaderError  # noqa: E402

from .firmware import InstalledModel  # noqa: E402
from .server import Board, FdPort  # noqa: E402


def boot(args):
    """(models, install error text, banner lines)."""
    banner = ["", "#", "# aiValidation (simulated STM32N6570-DK, reloc firmware)", "#"]
    with open(args.image, "rb") as f:
        data = f.read()
    params = None
    if args.params:
        with open(args.params, "rb") as f:
            params = f.read()
    if len(data) < 4 or data[:4] != b"NBIN":
        banner.append("No relocatable model found in flash")
        return [], None, banner
    try:
        model = InstalledModel(data, params, core=args.release, mode=args.mode)
    except LoaderError as e:
        text = f"AI RELOC ERROR: install failed, {e.name} ({e.code}): {e.detail}"
        return [], text, banner + [text]
    banner += [f"Model installation: {model.name} ({args.mode}), runtime {model.runtime_desc}",
               "READY to receive a CMD from the HOST...", "Protocol version = 3.1"]
    return [model], None, banner


def main(argv=None):
    ap = argparse.ArgumentParser(prog="n6board")
    ap.add_argument("--image", required=True)
    ap.add_argument("--params")
    ap.add_argument("--release", default="2.2")
    ap.add_argument("--mode", choices=("COPY", "XIP"), default="COPY")
    ap.add_argument("--header", choices=("2byte", "1byte"), default="2byte")
    ap.add_argument("--port-file")
    args = ap.parse_args(argv)
    master, slave = os.openpty()
    tty.setraw(slave)
    tty.setraw(master)
    path = os.ttyname(slave)
    models, error, banner = boot(args)
    os.write(master, ("\r\n".join(banner) + "\r\n").encode())
    if args.port_file:
        write_text(args.port_file, path + "\n")
    else:
        print(path, flush=True)
    Board(FdPort(master), args.header, models, error, os.environ.get("N6_SIM_BOARD_FAULT", "")).serve()


if __name__ == "__main__":
    main()
