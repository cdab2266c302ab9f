"""The image and pack steps as the build runs them. Pack: pack, check the image (XIP and COPY
install), write the results JSON, print the size report and apply the size gate. A failure
leaves no image behind."""
import json
import os
from collections.abc import Callable, Sequence

from ..atomic import write_text
from ..errors import N6Error
from . import report
from .report import Budgets
from .check import LoaderError, check_file
from .names import params_path
from .pack import pack


def code_step(elf: str, code_path: str) -> None:
    """The ELF's part of the image, kept apart so new weights never read the ELF again."""
    from .elf import code_image   # pyelftools: only when the ELF changed
    code_image(elf).save(code_path)


def pack_step(code_path: str, params_desc: str, bin_path: str, results_path: str, name: str, budgets: Budgets,
              split: bool = False, log: Callable[[str], object] = print,
              hash_name: str | None = None) -> dict[str, str]:
    """Returns the `hash_name` digests of the files pack wrote in one pass (n6.reloc.pack)."""
    try:
        packed = pack(code_path, params_desc, bin_path, split=split, hash_name=hash_name)
        try:   # the params CRC-32 was computed from the very bytes written: not read back here
            img, installs = check_file(bin_path, packed.params_path, verify_params=False)
        except LoaderError as e:
            raise N6Error(bin_path, f"rejected by the image checker: {e}",
                          "report this as a bug of the packer") from None
        files = [bin_path] + ([packed.params_path] if packed.params_path else [])
        res = report.results(img, packed, name, files)
        res["reloc_binary_image"]["notes"] = list(dict.fromkeys(w for i in installs for w in i.warnings))
        write_text(results_path, json.dumps(res, indent=1) + "\n")
        log(report.text(res, budgets, bin_path))
        for note in res["reloc_binary_image"]["notes"]:
            log(f"  warning: {note}")
        report.gate(res, budgets, bin_path)
    except N6Error:
        for path in (bin_path, params_path(bin_path), results_path):   # no stale image outlives a failure
            if os.path.exists(path):
                os.unlink(path)
        raise
    return packed.digests


def check_step(images: Sequence[str], say: Callable[[str], object] = print,
               report: Callable[[N6Error], object] = print) -> None:
    """`scons check`: the image checker on every image, XIP and COPY; every rejected image is
    reported (`report`, one line each; the last one raised). An image the build made always passes
    (pack checks it): a rejected one was changed outside the build. It is removed, so the next
    build makes it again."""
    rejected: list[N6Error] = []
    for path in images:
        try:
            _, modes = check_file(path)
        except LoaderError as e:
            os.unlink(path)
            rejected.append(N6Error(path, f"rejected: {e}", "build it again: `scons`"))
            continue
        say(f"  CHECK    {path}: installs in " + " and ".join(m.mode for m in modes) + " mode" +
            "".join(f"; warning: {w}" for w in dict.fromkeys(w for m in modes for w in m.warnings)))
    for error in rejected[:-1]:
        report(error)
    if rejected:
        raise rejected[-1]
