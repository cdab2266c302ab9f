"""The pack step as the build runs it: pack, check the image (XIP and COPY install), write the
results JSON, print the size report and apply the size gate. A failure leaves no image behind."""
import json
import os

from ..atomic import write_text
from ..errors import N6Error
from ..releases import release_for_atonn
from . import report
from .check import LoaderError, check_file
from .pack import pack


def pack_step(elf, blob, bin_path, results_path, name, budgets, split=False, log=print):
    packed = pack(elf, blob, bin_path, split=split)
    outputs = [bin_path, results_path] + ([packed.params_path] if packed.params_path else [])
    try:
        try:
            img, _ = check_file(bin_path, packed.params_path)
        except LoaderError as e:
            raise N6Error(bin_path, f"rejected by the image checker: {e}", "report this as a bug of the packer") from None
        res = report.results(img, packed, name, release_for_atonn(img.rt_ctx.ll_aton_version), outputs[:1] + outputs[2:])
        write_text(results_path, json.dumps(res, indent=1) + "\n")
        log(report.text(res, budgets, bin_path))
        report.gate(res, budgets, bin_path)
    except N6Error:
        for path in outputs:
            if os.path.exists(path):
                os.unlink(path)
        raise
    return res
