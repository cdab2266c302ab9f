"""The image and pack steps as the build runs them. Pack: pack, check the image (XIP and COPY
install), write the results JSON, print the size report and apply the size gate. A failure
leaves no image behind."""
import json
import os

from ..atomic import write_text
from ..errors import N6Error
from ..releases import release_for_atonn
from . import report
from .check import LoaderError, check_file
from .names import params_path
from .pack import pack


def code_step(elf, code_path):
    """The ELF's part of the image, kept apart so new weights never read the ELF again."""
    from .elf import code_image   # pyelftools: only when the ELF changed
    code_image(elf).save(code_path)


def pack_step(code_path, params_desc, bin_path, results_path, name, budgets, split=False, log=print):
    try:
        packed = pack(code_path, params_desc, bin_path, split=split)
        try:   # the params CRC-32 was computed from the very bytes written: not read back here
            img, installs = check_file(bin_path, packed.params_path, verify_params=False)
        except LoaderError as e:
            raise N6Error(bin_path, f"rejected by the image checker: {e}", "report this as a bug of the packer") from None
        files = [bin_path] + ([packed.params_path] if packed.params_path else [])
        res = report.results(img, packed, name, release_for_atonn(img.rt_ctx.ll_aton_version), files)
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
    return res
