"""`<N>_c_info.json` (schema 2.0) and `<N>_generate_report.txt` of the simulated generate."""
import hashlib
import json

import numpy as np

FORMAT = {"int8": "STAI_FORMAT_S8", "uint8": "STAI_FORMAT_U8", "int32": "STAI_FORMAT_S32",
          "float32": "STAI_FORMAT_FLOAT"}


def _signature(data):
    return "0x" + hashlib.sha256(data).hexdigest()[:16]


def c_info(ctx, files):
    net, rel = ctx.net, ctx.release
    buffers = []
    for t in net.activations + net.params:
        entry = {"alignment": 8, "batch": 1, "channel_first": len(t.shape) != 4, "channel_last": len(t.shape) == 4,
                 "epochs": {"start": ctx.epoch_of.get(t.name, 0), "end": ctx.last_epoch_of.get(t.name, 0)},
                 "flags": "", "format": FORMAT[t.dtype], "id": t.id, "is_param": t.is_param,
                 "mpool_id": ctx.pool_id(t.pool), "name": t.name, "nbits": t.itemsize * 8,
                 "offset_start": t.offset, "qmn": {"m": 0, "n": 0, "sign": 1}, "shape": list(t.shape),
                 "shape_map": [], "size_bytes": t.nbytes}
        if rel.core >= "3":
            scales = np.atleast_1d(np.asarray(t.scale, np.float32)).tolist()
            entry["intq"] = {"axis": 0 if len(scales) > 1 else -1, "offsets": [t.zero_point] * len(scales),
                             "scales": scales}
        buffers.append(entry)
    pools = []
    for u in ctx.uses:
        p = u.pool
        pools.append({"address": str(p.offset), "alignment": 8,
                      "attributes": {"burst_max_length": p.burst_max_length, "burst_penalty": p.burst_penalty,
                                     "byte_width": p.byte_width,
                                     "freq_ratio": p.freq_ratio, "latency": p.latency, "read_power": p.read_power,
                                     "score": 50 if p.external else 94, "throughput": p.throughput,
                                     "use_for_initrs": True, "write_power": p.write_power},
                      "buffers": [t.id for t in u.tensors],
                      "cacheable": "CACHEABLE_ON" if p.cacheable
                      else ("CACHEABLE_OFF" if rel.core >= "3" else "CACHEABLE_UNDEF"),
                      "fname": f"{ctx.mpool.mem_file_prefix}.{p.fname}.raw", "id": u.index, "name": p.name,
                      "offset_start": 0, "persistent": True, "rights": p.rights,
                      "pipelined": "PIPELINED_ON" if p.pipelined else "PIPELINED_OFF",
                      "size_bytes": p.size, "used_size_bytes": u.used, "subpools": [], "user_allocated": False})
    nodes, edges = [], []
    producer = {layer.output.name: layer.epoch for layer in net.layers}
    for epoch, layers in ctx.epochs():
        ec = layers[0].attrs.get("ec")
        nodes.append({"id": epoch, "name": f"epoch_{epoch}", "mapping": "NODE_EC" if ec else "NODE_SW",
                      "macc": int(sum(layer.attrs.get("macc", 0) for layer in layers)),
                      "inputs": [t.id for t in layers[0].inputs], "outputs": [layers[-1].output.id],
                      "subgraph_nodes": [{"id": i, "name": layer.name, "description": f"Node kind={layer.label}"}
                                         for i, layer in enumerate(layers)],
                      "sw_functions": [] if ec else [layer.kind for layer in layers], "scratchs": [], "attributes": {}})
        for t in (t for layer in layers for t in layer.inputs):
            src = producer.get(t.name)
            if src is not None and src != epoch:
                edges.append({"id": len(edges) + 1, "name": f"epochdep_{src}_{epoch}", "edge_kind": "EDGE_FLOW",
                              "buffer": t.id, "start": {"node_id": src, "port": 0},
                              "end": {"node_id": epoch, "port": 0}})
    accesses, power = [], []
    for epoch, layers in ctx.epochs():
        macc = int(sum(layer.attrs.get("macc", 0) for layer in layers))
        for u in ctx.uses:
            reads = sum(t.nbytes for layer in layers for t in layer.inputs + layer.params if t.pool is u.pool)
            writes = sum(layer.output.nbytes for layer in layers if layer.output.pool is u.pool)
            if reads or writes:
                accesses.append({"mpool_id": u.index, "node_id": epoch, "reads": reads, "writes": writes,
                                 "read_cycles": reads // max(u.pool.byte_width, 1),
                                 "write_cycles": writes // max(u.pool.byte_width, 1)})
        power.append({"node_id": epoch, "ops": macc, "compute_cycles": macc, "max_cycles": macc,
                      "average_acc_power_mw": 0.0, "average_memory_power_mw": 0.0})
    weights = sum(u.used for u in ctx.uses if u.params)
    activations = sum(u.used for u in ctx.uses if not u.params)
    raw_sig = [{"name": f"{ctx.mpool.mem_file_prefix}.{u.pool.fname}.raw", "signature": _signature(u.image())}
               for u in ctx.uses]
    return {
        "buffers": buffers,
        "ec_blobs_info": [{"name": ctx.writer.blob_name(e), "epochs": [e]} for e, ls in ctx.epochs()
                          if ls[0].attrs.get("ec")],
        "environment": {
            "generated_model": {"generated_time": ctx.timestamp, "model_files": [
                {"name": f"{ctx.name}.c", "signature": _signature(files[f"{ctx.name}.c"].encode())}] + raw_sig,
                "n_params": 0, "name": ctx.sym, "size": 0, "type": ""},
            "network_signature": _signature(files[f"{ctx.name}.c"].encode()),
            "target": "", "test_name": "",
            "tools": [{"name": "ST.EdgeAI.Core", "version": f"{rel.core_full} (simulated)", "arguments": ctx.command,
                       "input_model": {"model_files": [{"name": ctx.model_file, "signature": ctx.model_signature}],
                                       "n_params": net.n_params, "name": net.model_name,
                                       "size": int(sum(t.nbytes for t in net.params)),
                                       "type": "tflite" if ctx.model_file.endswith(".tflite") else "onnx"}},
                      {"name": "ATONN Compiler", "version": f"{rel.atonn_str} (simulated)",
                       "arguments": ctx.atonn_arguments}],
        },
        "graphs": [{"id": 0, "name": net.model_name, "inputs": [t.id for t in net.inputs],
                    "outputs": [t.id for t in net.outputs],
                    "original_inputs": [_io(t) for t in net.inputs], "original_outputs": [_io(t) for t in net.outputs],
                    "nodes": nodes, "edges": edges}],
        "json_schema_version": "2.0",
        "memory_accesses": accesses,
        "memory_footprint": {"activations": activations, "io": [0, 0], "kernel_flash": None, "kernel_ram": None,
                             "series": "generic", "toolchain": None, "toolchain_flash": None, "toolchain_ram": None,
                             "weights": weights},
        "memory_pools": pools,
        "power_estimates": power,
    }


# numpy's kind of an I/O type → c_info's `data_format` `type`, as ST spells it
DATA_FORMAT_TYPES = {"i": "SIGNED", "u": "UNSIGNED", "f": "FLOAT", "b": "BOOL"}


def data_format(t):
    """c_info's `data_format` of an I/O tensor in ST's spelling: element size in bits, and for an
    integer tensor a UNIFORM quantizer with one-element scale and zero lists (empty for float)."""
    quantised = np.dtype(t.dtype).kind in "iu"
    return {"quantizer": "UNIFORM" if quantised else "NONE", "scale": [float(t.scale)] if quantised else [],
            "size": t.itemsize * 8, "type": DATA_FORMAT_TYPES[np.dtype(t.dtype).kind],
            "zero": [int(t.zero_point)] if quantised else []}


def _io(t):
    return {"name": t.name, "shape": list(t.shape), "shape_map": [], "c_shape_map": [], "data_format": data_format(t)}


def _kib(n):
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.3f} MB"
    return f"{n / 1024:.3f} kB" if n >= 1024 else f"{n} B"


def report(ctx):
    rel, net = ctx.release, ctx.net
    rule = "=" * 100
    L = [f"ST Edge AI Core v{rel.core_full} (simulated)", f"Created date          : {ctx.timestamp}",
         f"Parameters            : {ctx.command}", "", rule, "", f"Model name - {net.model_name}", "",
         f"{'m_id':<6}{'layer (original)':<36}{'oshape':<22}{'param/size':<16}{'macc':<12}"]
    for i, layer in enumerate(net.layers):
        size = sum(p.nbytes for p in layer.params)
        L.append(f"{i:<6}{(layer.name + ' (' + layer.label + ')')[:35]:<36}{str(list(layer.output.shape)):<22}"
                 f"{size:<16,}{layer.attrs.get('macc', 0):<12,}")
    weights = sum(p.nbytes for p in net.params)
    L += ["", f"model: macc={net.macc:,} weights={weights:,} activations=-- io=--", "", rule, "",
          "Compilation details", "-" * 19 if rel.core >= "3" else "",
          f"Compiler version: {rel.atonn_str}", f"Compiler arguments: {ctx.atonn_arguments}", "", rule, "",
          "Memory usage information  (input/output buffers are included in activations)"]
    for u in ctx.uses:
        p = u.pool
        w = sum(t.nbytes for t in u.params)
        pct = 100.0 * u.used / p.size if p.size else 0.0
        L.append(f"\t{p.name} [0x{p.offset:08X} - 0x{p.offset + p.size:08X}]: {_kib(u.used)} / {_kib(p.size)} "
                 f"({pct:.2f} % used) -- weights: {_kib(w)} activations: {_kib(u.used - w if u.used else 0)}")
    total = sum(u.used for u in ctx.uses)
    L += [f"\tTotal: {_kib(total)}", "", rule, "", "Used memory ranges"]
    for u in ctx.uses:
        if u.used:
            p = u.pool
            L.append(f"\t{p.name} [0x{p.offset:08X} - 0x{p.offset + p.size:08X}]: "
                     f"0x{p.offset:08X}-0x{p.offset + u.used:08X}")
    epochs = ctx.epochs()
    sw = sum(1 for _, ls in epochs if not ls[0].attrs.get("ec"))
    L += ["", rule, "", "Epochs details",
          f"Total number of epochs: {len(epochs)} of which {sw} implemented in software"]
    for e, ls in epochs:
        kind = "EC" if ls[0].attrs.get("ec") else f"-SW- ({'+'.join(layer.label for layer in ls)})"
        L.append(f"epoch {e:<4d} {kind}")
    return "\n".join(L) + "\n"


def quant_json(net):
    return json.dumps({t.name: {"scale": np.atleast_1d(np.asarray(t.scale, np.float32)).tolist(),
                                "zero_point": t.zero_point, "dtype": t.dtype}
                       for t in net.activations + net.params}, indent=1, sort_keys=True)
