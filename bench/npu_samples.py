"""ST's real 2.2 samples as the NPU unit benches read them (N6_REAL_STEDGEAI names the test bed):
each epoch's units as register fields by ATON.h name, its switch routes and stream-engine inits,
the params .raw, and the source model's constant tensors. The epochs come from network.c through
the test suite's own parser and its init-struct → register-field rules (tests/test_npu_real.py),
the judge of npu1's decoder: read apart from the model the benches measure."""
import os
import sys
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, p) for p in ("tests", "site_scons", "sim/npu", "sim/board", "sim/programmer")]
REAL = os.environ.get("N6_REAL_STEDGEAI", "")
SAMPLES = ("nucleo_mnv1", "blazeface")


def need_test_bed():
    if not (REAL and os.path.isdir(os.path.join(REAL, "samples"))):
        sys.exit("no real ST Edge AI Core test bed: set N6_REAL_STEDGEAI to its folder")


def registers(fields, kind):
    """{register: {field: value}} from test_npu_real's {(register, field): value} (resets elsewhere)."""
    from npu_model.registers import aton_map
    unit = aton_map().units[kind]
    out = {r.name: r.split(r.reset) for r in unit.registers.values()}
    for (reg, name), value in fields.items():
        if name in out.get(reg, {}):
            out[reg][name] = value
    return out


def epochs(sample):
    """{epoch: {"convacc": {i: registers}, "arith": {i: registers}, "init": network.c's structs,
    "routes": {(dest, port, context, source, frames)}}}."""
    from test_npu_real import expected_arith_fields, expected_convacc_fields, network_c_epochs
    out = {}
    for epoch, d in network_c_epochs(sample).items():
        out[epoch] = {"convacc": {i: registers(expected_convacc_fields(c), "CONVACC") for i, c in d["convacc"].items()},
                      "arith": {i: registers(expected_arith_fields(c), "ARITH") for i, c in d["arith"].items()},
                      "init": d, "routes": d["routes"]}
    return out


def source(route_dest, port, routes):
    """The unit feeding `route_dest` port `port` (context 0)."""
    return next((r[3] for r in routes if r[0] == route_dest and r[1] == port and r[2] == 0), None)


def params(sample):
    """The flash params (.raw) as bytes; network.c addresses them from 0x7100_0000."""
    with open(os.path.join(REAL, "samples", sample, "network_atonbuf.xSPI2.raw"), "rb") as f:
        return f.read()


def interpreter(sample):
    """LiteRT on the source model, every tensor preserved."""
    warnings.filterwarnings("ignore")
    from ai_edge_litert.interpreter import Interpreter
    it = Interpreter(os.path.join(REAL, "sources", sample, "model.tflite"), experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    return it


def weight_tensors(it):
    """[(name, int8 array as [O, H, W, I])] of the model's constant int8 tensors (2-D as 1x1)."""
    out = []
    for d in it.get_tensor_details():
        if d["dtype"] == np.int8 and len(d["shape"]) in (2, 4):
            try:
                t = it.get_tensor(d["index"])
            except ValueError:
                continue
            out.append((d["name"], t if t.ndim == 4 else t[:, None, None, :]))
    return out
