"""ST's real 2.2 samples as the NPU unit benches read them (N6_REAL_STEDGEAI names the test bed):
each epoch's units as register fields by ATON.h name, its switch routes and stream-engine inits,
the params .raw, and the source model's constant tensors. The epochs come from network.c through
the test suite's own parser and its init-struct → register-field rules (tests/network_c_inits.py),
the judge of npu1's decoder: read apart from the model the benches measure."""
import json
import os
import re
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


def write_report(report, path):
    """The bench's JSON beside its printed tables."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
    print(f"JSON: {path}")


def registers(fields, kind):
    """{register: {field: value}} from network_c_inits' {(register, field): value} (resets elsewhere)."""
    from npu_model.registers import aton_map
    unit = aton_map().units[kind]
    out = {r.name: r.split(r.reset) for r in unit.registers.values()}
    for (reg, name), value in fields.items():
        if name in out.get(reg, {}):
            out[reg][name] = value
    return out


def epochs(sample):
    """{epoch: {"convacc"|"arith"|"pool": {i: registers}, "init": network.c's structs,
    "routes": {(dest, port, context, source, frames)}}}."""
    from network_c_inits import expected_arith_fields, expected_convacc_fields, expected_pool_fields, network_c_epochs
    out = {}
    for epoch, d in network_c_epochs(os.path.join(REAL, "samples", sample, "network.c")).items():
        out[epoch] = {"convacc": {i: registers(expected_convacc_fields(c), "CONVACC") for i, c in d["convacc"].items()},
                      "arith": {i: registers(expected_arith_fields(c), "ARITH") for i, c in d["arith"].items()},
                      "pool": {i: registers(expected_pool_fields(c), "POOL") for i, c in d["pool"].items()},
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


_VECTOR = re.compile(r"\.([ABC])_vector = \{\(\(unsigned char \*\)"
                     r"\(ATON_LIB_PHYSICAL_TO_VIRTUAL_ADDR\(0x71000000UL \+ (\d+)\)")
_PRECISION = re.compile(r"\.vec_precision = \{(\d+), (\d+), (\d+)\}")
VECTOR_ENTRIES = {"ARITH_BCAST_CHAN": "fChannels", "ARITH_BCAST_HEIGHT": "fHeight", "ARITH_BCAST_WIDTH": "fWidth"}


def arith_vectors(sample):
    """{epoch: {unit: (vectors {"A": params offset}, precisions (A, B, C))}} of network.c."""
    from network_c_inits import _FUNCTION, _STRUCT
    with open(os.path.join(REAL, "samples", sample, "network.c")) as f:
        text = f.read()
    out = {}
    for epoch, body in _FUNCTION.findall(text):
        structs = {name: fields for _, name, fields in _STRUCT.findall(body)}
        for i, name in re.findall(r"LL_Arithacc_Init\((\d+), &(\w+)\)", body):
            fields = structs[name]
            out.setdefault(int(epoch), {})[int(i)] = (
                {k: int(v) for k, v in _VECTOR.findall(fields)},
                tuple(int(p) for p in _PRECISION.search(fields).groups()))
    return out


def coefficient_memory(init, vectors, precisions, raw):
    """The coefficient memory entries [(A | B << 16, C)] LL_Arithacc_Init writes (ll_aton.c's facts:
    one entry per channel, row or column of the broadcast; COMBINEBC splits a 32-bit C into B:C)."""
    count = init.get(VECTOR_ENTRIES.get(init.get("bcast"), ""), 1) if not init.get("scalar") else 1
    def vector(key, scalar, bits):
        if key not in vectors:
            return [scalar] * count
        dtype = {8: "<i1", 16: "<i2", 32: "<i4"}[bits]
        return np.frombuffer(raw, dtype=dtype, count=count, offset=vectors[key]).astype(np.int64).tolist()
    a = vector("A", init.get("A_scalar", 0), precisions[0])
    b = vector("B", init.get("B_scalar", 0), precisions[1])
    c = vector("C", init.get("C_scalar", 0), precisions[2])
    if init.get("combinebc"):
        b, c = [v >> 16 for v in c], [v & 0xFFFF for v in c]
    return [((x & 0xFFFF) | (y & 0xFFFF) << 16, z & 0xFFFF) for x, y, z in zip(a, b, c)]


def c_info(sample):
    with open(os.path.join(REAL, "samples", sample, "network_c_info.json")) as f:
        return json.load(f)


def buffer_at(info, address, epoch):
    """(buffer, its address) of the activation buffer (c_info.json) holding `address` during
    `epoch`; None outside any."""
    pools = {p["id"]: int(p["address"]) for p in info["memory_pools"]}
    for b in info["buffers"]:
        if b.get("is_param") or b["mpool_id"] not in pools:
            continue
        start = pools[b["mpool_id"]] + b["offset_start"]
        alive = b.get("epochs", {}).get("start", 0) <= epoch <= b.get("epochs", {}).get("end", 1 << 30)
        if alive and start <= address < start + b["size_bytes"]:
            return b, start
    return None


FLASH_PARAMS = 0x7100_0000          # network.c's flash pool: the params .raw at its absolute address
IMAGE_AT = 0x7200_0000              # the relocatable image beside it in the xSPI2 window


def installed(sample, mode="stop"):
    """ST's image of the sample (ST's flow on the test bed's install, test_real_install.st_flow)
    installed on the simulated board with the NPU model in `mode`, as `scons flash` leaves a board
    whose firmware reads the image at 0x72000000: the params .raw at the absolute flash address
    network.c reads them from (ST's flow leaves that pool absolute), the image beside it."""
    from n6board.firmware import DEFAULT_LAYOUT, InstalledModel
    from test_real_install import st_flow
    build, _ = st_flow(sample, "secure")
    with open(os.path.join(build, "network_rel.bin"), "rb") as f:
        return InstalledModel(f.read(), layout=dict(DEFAULT_LAYOUT, network=IMAGE_AT), npu_model=mode,
                              flash=[(FLASH_PARAMS, params(sample))])
