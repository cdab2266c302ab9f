"""`python -m n6.flash IMAGE [--params P] [--board B] [--probe SERIAL] [--backend B] [--force]
[--dry-run] [--out DIR]`: put one image on the board as `scons flash` does (the same gate, the
changed sectors only, the same records), without SCons. The reports go to DIR (default: the
image's folder/flash)."""
import argparse
import os
import sys
from collections.abc import Sequence

from ..board import load_board
from .backend import BACKENDS
from ..board_files import DEFAULT_BOARD, board_path
from ..build_layout import DEFAULT_BUILD_DIR, FLASH_REPORT, ON_BOARD, sim_board_state
from ..errors import N6Error
from ..releases import DEFAULT_RELEASE, release_for_atonn
from ..reloc.image import Image
from .step import FlashOptions, attached_probes, find_programmer, flash_step


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m n6.flash", description=__doc__.split("\n\n")[0])
    p.add_argument("image")
    p.add_argument("--params", help="the split params image (default: <image stem>_params.bin beside a split image)")
    p.add_argument("--board", default=DEFAULT_BOARD, help="board file: a bundled name or a .toml path")
    p.add_argument("--probe", help="serial number of the ST-LINK (default: the only one attached)")
    p.add_argument("--backend", choices=BACKENDS)
    p.add_argument("--force", action="store_true", help="write every sector")
    p.add_argument("--dry-run", action="store_true", help="print the programmer commands instead")
    p.add_argument("--sim-board", default=sim_board_state(DEFAULT_BUILD_DIR),
                   help="the simulated board's folder (default: N6_SIM_BOARD, else build/sim-board)")
    p.add_argument("--install", default="", help="the ST Edge AI Core install (its validation firmware's facts)")
    p.add_argument("--out", help="where the reports go (default: <image folder>/flash)")
    args = p.parse_args(argv)
    try:
        bpath = board_path(args.board)
        board = load_board(bpath)
        backend, install = find_programmer(args.backend or board.programmer.backend, board)
        simulated = install is not None and install.simulated
        img = Image.load(args.image, args.params)
        rel = release_for_atonn(img.rt_ctx.ll_aton_version) if img.rt_ctx else None
        out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.image)), "flash")
        opts = FlashOptions(
            board=bpath, files=(("network", args.image, img.params_file),), multi=False,
            release=rel.core if rel else DEFAULT_RELEASE, backend=backend, cli=install.cli if install else None,
            simulated=simulated, found_by=install.found_by if install else "pyocd",
            probes=(args.probe,) if args.probe else tuple(attached_probes(simulated, args.sim_board)),
            probe=args.probe, force=args.force, reset="none", dry_run=args.dry_run, copy_mode=False,
            ext_ram=board.budgets["ext_ram"], build_dir=os.path.dirname(os.path.abspath(out)),
            sim_board=os.path.abspath(args.sim_board), install_root=args.install)
        os.makedirs(out, exist_ok=True)
        flash_step(opts, [(os.path.join(out, ON_BOARD), os.path.join(out, FLASH_REPORT))])
    except N6Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
