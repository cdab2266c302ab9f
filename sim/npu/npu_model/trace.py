"""`./n6 npu-trace IMAGE [--params P] [--c-info C] [--json OUT]`: run a relocatable image once on
the simulated board with the NPU model in control mode and print each hardware chain's epoch
program (units and their fields, stream-switch routes, what each stream engine reads and writes,
in which pool or buffer: c_info.json's names when given), then a table per epoch. The JSON beside
it holds the same. Figures are simulated; outputs of unmodelled units are not computed."""
import argparse
import json
import os
import sys

from tabulate import tabulate

from n6.atomic import write_text
from n6.errors import N6Error
from n6.profiling.cinfo import read_c_info


def trace(image, params=None, c_info=None, release="2.2"):
    """(InstalledModel after one inference on zero inputs, its inference result)."""
    from n6board.firmware import InstalledModel
    with open(image, "rb") as f:
        data = f.read()
    extra = None
    if params:
        with open(params, "rb") as f:
            extra = f.read()
    model = InstalledModel(data, extra, core=release, npu_model="control")
    if c_info:
        names = read_c_info(c_info)
        model.npu.locate = lambda address: names.name_at(address) or model.buffer_at(address)
    result = model.infer([bytes(b.nbytes) for b in model.inputs])
    return model, result


def report(model):
    """{"simulated": True, "programs": [...], "not_computed": [...], totals}."""
    return {"simulated": True, "model": model.name, "npu_cycles": model.npu.cycles,
            "bytes_moved": model.npu.bytes_moved, "programs": [p.as_dict() for p in model.npu.programs],
            "not_computed": model.npu.not_computed}


def table(model):
    rows = {}
    for p in model.npu.programs:
        row = rows.setdefault(p.label, [p.label, 0, set(), 0, 0])
        row[1] += 1
        row[2].update(u.name for u in p.units)
        row[3] += sum(f.nbytes for f in p.footprints)
        row[4] += p.cycles
    return tabulate([[r[0], r[1], len(r[2]), r[3], r[4]] for r in rows.values()],
                    headers=["epoch", "chains", "units", "bytes moved", "NPU cycles (simulated)"])


def main(argv=None):
    ap = argparse.ArgumentParser(prog="npu-trace", description=__doc__.split("\n\n")[0])
    ap.add_argument("image")
    ap.add_argument("--params", help="the split params file (network_rel_params.bin)")
    ap.add_argument("--c-info", help="the model's c_info.json: pool and buffer names")
    ap.add_argument("--json", help="write the report here (default: beside the image, npu_trace.json)")
    ap.add_argument("--release", default="2.2")
    args = ap.parse_args(argv)
    from n6board.emulator import Fault
    try:
        model, _ = trace(args.image, args.params, args.c_info, args.release)
    except (N6Error, OSError) as e:
        print(f"npu-trace: {e}", file=sys.stderr)
        return 2
    except Fault as e:
        print(f"npu-trace: {args.image}: {e}", file=sys.stderr)
        return 1
    for p in model.npu.programs:
        print(p.text())
    print(table(model))
    out = args.json or os.path.join(os.path.dirname(os.path.abspath(args.image)), "npu_trace.json")
    write_text(out, json.dumps(report(model), indent=1) + "\n")
    print(f"  TRACE    {out}")
    return 0
