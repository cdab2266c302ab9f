"""Place every tensor in a memory pool: constants packed from offset 0 of the params pool,
activations first-fit by lifetime in the read/write pools."""
from dataclasses import dataclass, field

from n6.errors import N6Error
from n6.placement import activation_pools, params_pool

from . import layers as L
from .ir import Tensor

ALIGN = 8
EC_KINDS = ("conv2d", "dense", "maxpool", "avgpool")   # what the epoch-controller blobs encode


def _align(n, a=ALIGN):
    return (n + a - 1) // a * a


@dataclass
class PoolUse:
    pool: object
    index: int                    # 1-based, mpool order
    tensors: list = field(default_factory=list)

    @property
    def used(self):
        """Highest end − lowest start over the pool's buffers (0 when empty)."""
        if not self.tensors:
            return 0
        return max(t.offset + t.nbytes for t in self.tensors) - min(t.offset for t in self.tensors)

    @property
    def params(self):
        return [t for t in self.tensors if t.is_param]

    @property
    def params_size(self):
        return max((t.offset + t.nbytes for t in self.params), default=0)

    def image(self):
        """The pool's initial content as the `.raw` file holds it: constants at their offsets."""
        buf = bytearray(self.used)
        for t in self.params:
            buf[t.offset:t.offset + t.nbytes] = t.data.astype(t.data.dtype.newbyteorder("<")).tobytes()
        return bytes(buf)


def _boundary_types(tensors, wanted, option):
    """The edge tensors to convert for `wanted`: the int8 ones. One already of another type (a
    model's own uint8 / float32 edge) stays as the model has it only if that is what is asked."""
    for t in tensors:
        if t.dtype not in ("int8", wanted):
            raise N6Error(None, f"'{t.name}' is {t.dtype} in the model; {option} {wanted} cannot change it",
                          f"drop {option} or give {option} {t.dtype}")
    return [t for t in tensors if t.dtype == "int8"]


def add_io_conversions(net, input_type, output_type):
    """`--input-data-type` / `--output-data-type`: convert epochs at the graph boundary."""
    if input_type not in (None, "int8"):
        new = []
        convert = _boundary_types(net.inputs, input_type, "--input-data-type")
        for t in net.inputs:
            if t not in convert:
                new.append(t)
                continue
            src = Tensor(t.name + "_" + input_type, t.shape, input_type, t.scale,
                         t.zero_point + 128 if input_type == "uint8" else 0)
            net.layers.insert(0, L.convert("input_conversion", src, t, f"{input_type}_to_int8"))
            new.append(src)
        net.inputs = new
    if output_type not in (None, "int8"):
        new = []
        convert = _boundary_types(net.outputs, output_type, "--output-data-type")
        for t in net.outputs:
            if t not in convert:
                new.append(t)
                continue
            dst = Tensor(t.name + "_" + output_type, t.shape, output_type, t.scale,
                         t.zero_point + 128 if output_type == "uint8" else 0)
            net.layers.append(L.convert("output_conversion", t, dst, f"int8_to_{output_type}"))
            new.append(dst)
        net.outputs = new


def allocate(net, mpool):
    uses = [PoolUse(p, i + 1) for i, p in enumerate(mpool.pools)]
    by_pool = {id(u.pool): u for u in uses}

    params = net.params
    cpool = params_pool(mpool)
    reserved = 0
    if params:
        if cpool is None:
            raise N6Error(mpool.path, "no memory pool can hold the weights", "add a pool with constants_preferred")
        offset = 0
        for t in params:
            t.pool, t.offset = cpool, offset
            offset = _align(offset + t.nbytes)
        total = params[-1].offset + params[-1].nbytes
        if total > cpool.size:
            raise N6Error(mpool.path, f"pool '{cpool.fname}' ({cpool.size} bytes) is too small for the weights "
                          f"({total} bytes)", f"enlarge '{cpool.fname}' or mark a bigger pool constants_preferred")
        by_pool[id(cpool)].tensors.extend(params)
        reserved = _align(total)

    # lifetimes in layer steps; graph inputs are born before step 0, outputs live to the end
    acts = net.activations
    last = len(net.layers)
    born = {t.name: -1 for t in net.inputs}
    dies = {t.name: last for t in net.outputs}
    for i, layer in enumerate(net.layers):
        born.setdefault(layer.output.name, i)
        for x in layer.inputs:
            dies[x.name] = max(dies.get(x.name, i), i)
    placed = []   # (pool, start, end, born, dies)
    pools = activation_pools(mpool)
    for t in acts:
        b, d = born[t.name], dies.get(t.name, born[t.name])
        for pool in pools:
            start = reserved if pool is cpool else 0
            busy = sorted((s, e) for p, s, e, pb, pd in placed if p is pool and not (pd < b or d < pb))
            for s, e in busy:
                if start + t.nbytes <= s:
                    break
                start = max(start, _align(e))
            if start + t.nbytes <= pool.size:
                t.pool, t.offset = pool, start
                placed.append((pool, start, start + t.nbytes, b, d))
                by_pool[id(pool)].tensors.append(t)
                break
        else:
            names = ", ".join(p.fname for p in pools) or "none"
            raise N6Error(mpool.path, f"activation '{t.name}' ({t.nbytes} bytes) does not fit in the "
                          f"read/write pools ({names})", "enlarge a read/write pool or add one")
    for i, t in enumerate(acts + params):
        t.id = i + 1
    return uses


def assign_epochs(net, epoch_controller):
    """One epoch per layer; with the epoch controller, runs of NPU-capable layers share one blob epoch."""
    epoch, prev_hw = 0, False
    for layer in net.layers:
        hw = epoch_controller and layer.kind in EC_KINDS
        if not (hw and prev_hw):
            epoch += 1
        layer.epoch, prev_hw = epoch, hw
        layer.attrs["ec"] = hw
    return epoch
