"""`python -m n6.reloc inspect|check <network_rel.bin> [--params <network_rel_params.bin>] [--json]`

inspect: header, decoded flags, pool descriptors, REL entries and sizes of any image.
check:   the loader's checks and an installation in XIP and COPY mode, judged for a board's
         firmware (--board, default the default board's; the report names it); exit 1 when the
         image is rejected, with the loader's error name, or our rule's where ST's loader installs."""
import argparse
import json
import os
import signal
import struct
import sys

from collections.abc import Sequence

from tabulate import tabulate

from ..board_files import DEFAULT_BOARD
from ..errors import N6Error
from ..jsonfile import JsonObject
from . import check
from .firmware import Firmware
from .image import MAGIC, Image, off


def inspect(img: Image) -> JsonObject:
    h = img.header
    return {
        "header": {k: f"0x{v:08X}" for k, v in h.words.items()}, "header_size": h.size,
        "flags": img.flags.as_dict(),
        "sizes": {"file": len(img.data), "ro": img.ro_size, "rw": img.rw_size, "xip": img.xip_size,
                  "copy": img.copy_size, "params_offset": h.params_offset, "params": len(img.params),
                  "got": off(h.got_end) - off(h.got_start), "bss": off(h.bss_end) - off(h.bss_start)},
        "rt_ctx": {k: v for k, v in vars(img.rt_ctx).items()} if img.rt_ctx else None,
        "c_name": img.string_at(img.rt_ctx.c_name) if img.rt_ctx else "",
        "runtime": img.string_at(img.rt_ctx.rt_version_desc) if img.rt_ctx else "",
        "descriptors": [{"name": d.name, "flags": f"0x{d.flags:08X}", "decoded": d.flags_desc, "foff": d.foff,
                         "dst": f"0x{d.dst:08X}", "size": d.size} for d in img.descriptors],
        "rel": [f"0x{s:08X}" for s in img.rel_sites],
    }


def _print(info: JsonObject) -> None:
    print(tabulate([[k, v] for k, v in info["header"].items()], ["header word", "value"]))
    print()
    print(tabulate([[k, v] for k, v in info["flags"].items()], ["flag", "value"]))
    print(f"\nnetwork '{info['c_name']}', runtime {info['runtime']}")
    print(tabulate([[k, v] for k, v in info["sizes"].items()], ["size", "bytes"]))
    print()
    print(tabulate(info["descriptors"], "keys"))
    print(f"\nREL entries ({len(info['rel'])}): " + " ".join(info["rel"]))


def _firmware(board_name: str, image: str, params: str | None) -> tuple[Firmware, str]:
    """(Firmware, what it is) of the board the image is judged for: `./n6 check` answers "will
    this install there?", so the firmware is the board's, never one built as the image says."""
    from ..board import load_board
    from ..board_files import board_path
    from ..flash.gate import board_firmware
    return board_firmware(load_board(board_path(board_name)), Image.load(image, params))


def main(argv: Sequence[str] | None = None) -> int:
    try:
        status = _run(argv)
        sys.stdout.flush()
        return status
    except BrokenPipeError:      # `... | head` stopped reading: nothing is wrong with the image
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # and Python's last flush stays quiet
        return 128 + signal.SIGPIPE


def _run(argv: Sequence[str] | None) -> int:
    p = argparse.ArgumentParser(prog="n6.reloc", description="inspect or check a relocatable model image")
    p.add_argument("command", choices=["inspect", "check"])
    p.add_argument("image")
    p.add_argument("--params", help="the split params file (default: <image stem>_params.bin if present)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--board", default=DEFAULT_BOARD,
                   help=f"check: judge for this board's firmware (a bundled board or a .toml; default {DEFAULT_BOARD})")
    args = p.parse_args(argv)
    try:
        if args.command == "inspect":
            img = Image.load(args.image, args.params)
            if img.header.magic != MAGIC:
                raise N6Error(args.image, f"not a relocatable model image (magic 0x{img.header.magic:08X}, "
                              f"expected 0x{MAGIC:08X})", "pass a network_rel.bin built by n6 or ST's npu_driver.py")
            try:
                info = inspect(img)
            except (struct.error, ValueError, IndexError, UnicodeDecodeError) as e:
                raise N6Error(args.image, f"malformed image: {e}", "rebuild the image") from None
            print(json.dumps(info, indent=1)) if args.json else _print(info)
            return 0
        fw, judged_for = _firmware(args.board, args.image, args.params)
        _, results = check.check_file(args.image, args.params, fw=fw)
    except BrokenPipeError:
        raise
    except OSError as e:
        print(f"n6.reloc: error: {e.filename or args.image}: {e.strerror}", file=sys.stderr)
        return 2
    except N6Error as e:
        print(f"n6.reloc: error: {e}", file=sys.stderr)
        return 2
    except check.LoaderError as e:
        if args.json:
            print(json.dumps({"image": args.image, "ok": False, "error": e.name if e.rule is None else None,
                              "code": e.code if e.rule is None else None, "rule": e.rule, "detail": e.detail,
                              "firmware": judged_for}))
        else:
            print(f"{args.image}: rejected by {judged_for}: {e}", file=sys.stderr)
        return 1
    report = {"image": args.image, "ok": True, "firmware": judged_for, "modes": [
        {"mode": r.mode, "ro_base": f"0x{r.ro_base:08X}", "ram_base": f"0x{r.ram_base:08X}",
         "got_words": r.got_words, "rel_sites": r.rel_sites, "warnings": r.warnings} for r in results]}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"{args.image}: judged for {judged_for}")
        for m in report["modes"]:
            print(f"{args.image}: installs in {m['mode']} mode (RO at {m['ro_base']}, RAM at {m['ram_base']}, "
                  f"{m['got_words']} GOT words, {m['rel_sites']} REL sites)" +
                  "".join(f"; warning: {w}" for w in m["warnings"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
