"""What the NPU compiler wrote in `c_info.json` (schema 2.0) about each epoch block: mapping,
operations, compute/max cycles and the memory accesses per pool."""
from dataclasses import dataclass, field

from ..errors import N6Error
from ..jsonfile import read_json
from ..paths import StrPath
from .measurement import PoolTraffic


@dataclass
class CompilerEpoch:
    number: int                  # N of the node named `epoch_N`
    name: str
    mapping: str                 # NODE_SW | NODE_HW | ...
    ops: int = 0
    compute_cycles: int = 0
    max_cycles: int = 0
    memory: dict = field(default_factory=dict)   # pool name → PoolTraffic (bytes), pools with accesses only
    runs: bool = True            # False: a node with no outputs, which no epoch block runs (ST's params
                                 # node, a layout change folded away, the final return)


@dataclass
class CompilerInfo:
    path: str
    epochs: dict[int, CompilerEpoch]   # number → CompilerEpoch, in the compiler's order
    pools: list[str]             # pool names in id order
    addresses: dict[int, str] = field(default_factory=dict)   # base address → name of each real (not virtual) pool
    pool_sizes: dict[int, int] = field(default_factory=dict)  # base address → bytes of each real pool
    # (first address, end, "buffer in pool") of each placed buffer
    buffers: list[tuple[int, int, str]] = field(default_factory=list)

    def name_at(self, address: int) -> str | None:
        """The buffer (else the real pool) holding `address`, or None."""
        for first, end, name in self.buffers:
            if first <= address < end:
                return name
        return next((name for base, name in self.addresses.items()
                     if base <= address < base + self.pool_sizes.get(base, 0)), None)


def read_c_info(path: StrPath) -> CompilerInfo:
    data = read_json(path, "c_info.json", lenient=False)
    fix = "use the c_info.json stedgeai generate wrote with this model"
    if not isinstance(data, dict) or data.get("json_schema_version") != "2.0":
        schema = data.get("json_schema_version") if isinstance(data, dict) else None
        raise N6Error(path, f"c_info.json schema {schema!r}, expected '2.0'", fix)
    try:
        nodes = data["graphs"][0]["nodes"]
        pools = {p["id"]: p["name"] for p in data["memory_pools"]}
        addresses = {int(p["address"]): p["name"] for p in data["memory_pools"] if not p.get("subpools")}
        # where pools and buffers lie (names for addresses; optional: not every c_info.json has them)
        sizes = {int(p["address"]): int(p.get("size_bytes", 0)) for p in data["memory_pools"] if not p.get("subpools")}
        bases = {p["id"]: int(p["address"]) for p in data["memory_pools"]}
        buffers = [(bases[b["mpool_id"]] + int(b["offset_start"]),
                    bases[b["mpool_id"]] + int(b["offset_start"]) + int(b["size_bytes"]),
                    f"{b['name']} in {pools[b['mpool_id']]}")
                   for b in data.get("buffers", []) if b.get("mpool_id") in bases and "size_bytes" in b
                   and "offset_start" in b]
        epochs, by_id = {}, {}
        for node in nodes:
            prefix, _, number = node["name"].rpartition("_")
            if prefix != "epoch" or not number.isdigit():
                raise N6Error(path, f"graph node {node['name']!r} is not named epoch_<N>", fix)
            e = CompilerEpoch(int(number), node["name"], node.get("mapping", ""),
                              runs=bool(node["outputs"]) if "outputs" in node else True)
            epochs[e.number] = by_id[node["id"]] = e
        for pe in data["power_estimates"]:
            e = by_id[pe["node_id"]]
            e.ops, e.compute_cycles, e.max_cycles = int(pe["ops"]), int(pe["compute_cycles"]), int(pe["max_cycles"])
        for ma in data["memory_accesses"]:
            if ma["mpool_id"] not in pools or not (ma["reads"] or ma["writes"]):
                continue
            e, pool = by_id[ma["node_id"]], pools[ma["mpool_id"]]
            e.memory[pool] = e.memory.get(pool, PoolTraffic(0, 0)) + PoolTraffic(int(ma["reads"]), int(ma["writes"]))
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise N6Error(path, f"c_info.json lacks the epoch information ({type(e).__name__}: {e})", fix) from None
    return CompilerInfo(str(path), epochs, [pools[k] for k in sorted(pools)], addresses, sizes, buffers)
