"""Size and memory report of a packed image: ST's XIP / COPY / PARAMS figures, the pool
descriptor table, usage bars against the configured budgets (a gate), and the results JSON."""
import datetime
import os
from collections.abc import Sequence
from dataclasses import dataclass

from tabulate import tabulate

from ..errors import N6Error
from .image import align8, off
from ..jsonfile import JsonObject
from ..releases import release_for_atonn
from .image import Image
from .names import params_path
from .pack import Packed

RESULTS_VERSION = "1.0"


@dataclass(frozen=True)
class Budgets:
    """Where the image goes on the board; None disables a check."""
    flash: int | None = 8 << 20   # network_rel.bin at 0x71000000
    params_flash: int | None = 104 << 20  # network_rel_params.bin at 0x71800000 (split)
    exec_ram: int | None = 640 << 10   # internal exec RAM at 0x34060000
    ext_ram: int | None = 27 << 20   # external RAM for the relocatable read/write pool
    copy_mode: bool = False        # the firmware installs in COPY mode (needs COPY size of exec RAM)


def results(img: Image, packed: Packed, name: str, files: Sequence[str]) -> JsonObject:
    h = img.header
    rt = img.rt_ctx
    assert rt is not None   # a packed image: the checker found its rt_ctx
    release = release_for_atonn(rt.ll_aton_version)
    assert release is not None   # packed with an install's runtime: a release's LL_ATON
    img_params = os.path.getsize(packed.bin_path) - h.params_offset if h.params_offset else 0
    image = {
        "flags": dict(img.flags.as_dict(), description=f"0x{h.flags:08X}"),
        "img_size": packed.size, "params_offset": h.params_offset, "params_size": packed.params_size,
        "xip_size": img.xip_size, "copy_size": img.copy_size, "ro_size": img.ro_size, "rw_size": img.rw_size,
        "img_params_size": img_params, "acts_size": rt.acts_sz, "ext_ram_size": rt.ext_ram_sz,
        "header_size": h.size,
        "sections": {"header": h.size, "data": off(h.data_end), "bss": off(h.bss_end) - off(h.bss_start),
                     "got": off(h.got_end) - off(h.got_start), "rel": off(h.rel_end) - off(h.rel_start)},
        "mempool_c_descriptors": [{"name": d.name, "addr": f"0x{d.name_addr:08X}", "flags_raw": f"0x{d.flags:08X}",
                                   "flags_desc": d.flags_desc, "foff": d.foff, "dst": f"0x{d.dst:08X}",
                                   "size": d.size} for d in img.descriptors],
        "rt_context": {"c_name": img.string_at(rt.c_name), "rt_version_desc": img.string_at(rt.rt_version_desc),
                       "rt_version": f"0x{rt.rt_version:08X}", "rt_version_extra": rt.rt_version_extra,
                       "acts_sz": rt.acts_sz, "params_sz": rt.params_sz, "ext_ram_sz": rt.ext_ram_sz,
                       "params_bin_sz": rt.params_bin_sz, "params_bin_crc32": f"0x{rt.params_bin_crc32:08X}",
                       "rt_c_struct_sizes": f"0x{rt.rt_c_struct_sizes:04X}"},
        "rel_entries": packed.rel_entries, "got_entries": packed.got_entries, "ec_blobs_in_params": packed.ec_blob_size,
        "notes": [],
        "gen_files": [{"size": os.path.getsize(f), "path": f} for f in files if os.path.exists(f)],
    }
    return {"version": RESULTS_VERSION, "created-date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "name": name, "versions": {"n6": RESULTS_VERSION, "st_edge_ai_core": release.core},
            "reloc_binary_image": image}


def _bar(used: int, total: int, width: int = 20) -> str:
    frac = used / total if total else 0.0
    filled = min(width, int(round(frac * width)))
    return f"[{'=' * filled}{' ' * (width - filled)}] {100 * frac:5.1f}% (used {used} of {total} bytes)"


def usage(res: JsonObject, budgets: Budgets, path: str) -> list[tuple[str, int, int | None]]:
    """(label, used, budget) rows for the gate and the bars of the image `path`."""
    r = res["reloc_binary_image"]
    split = r["params_offset"] == 0 and r["params_size"] > 0
    rows = [(f"flash ({os.path.basename(path)})", r["img_size"], budgets.flash)]
    if split:
        rows.append((f"flash ({os.path.basename(params_path(path))})", r["params_size"], budgets.params_flash))
    rows.append(("exec RAM (" + ("COPY" if budgets.copy_mode else "XIP") + ")",
                 r["copy_size"] if budgets.copy_mode else r["xip_size"], budgets.exec_ram))
    if r["ext_ram_size"]:
        rows.append(("external RAM", align8(r["ext_ram_size"]), budgets.ext_ram))
    return rows


def text(res: JsonObject, budgets: Budgets, path: str) -> str:
    r = res["reloc_binary_image"]
    secure = "secure" if r["flags"]["secure"] else "non-secure"
    dbg_info = "on" if r["flags"]["dbg_info"] else "off"
    lines = [f"  {path}: {r['img_size']} bytes, header {r['header_size']} B, flags {r['flags']['description']} "
             f"({secure}, dbg-info {dbg_info})",
             f"  XIP size {r['xip_size']}  COPY size {r['copy_size']}  PARAMS offset {r['params_offset']}  "
             f"PARAMS size {r['params_size']}  REL {r['rel_entries']}  GOT {r['got_entries']}"]
    table = [[d["name"], d["flags_raw"], d["flags_desc"], d["foff"], d["dst"], d["size"]]
             for d in r["mempool_c_descriptors"]]
    lines += ["  " + line for line in tabulate(table, ["pool", "flags", "decoded", "foff", "dst", "size"]).splitlines()]
    lines += [f"  {label:<32} {_bar(used, total)}" for label, used, total in usage(res, budgets, path) if total]
    return "\n".join(lines)


def gate(res: JsonObject, budgets: Budgets, path: str) -> None:
    for label, used, total in usage(res, budgets, path):
        if total and used > total:
            raise N6Error(path, f"does not fit: {label} needs {used} bytes, {total} available",
                          "set RELOC_SPLIT=1 to flash the params separately, shrink the model, "
                          "or raise the RELOC_*_SIZE budget")
