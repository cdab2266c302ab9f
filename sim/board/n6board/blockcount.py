"""Exact counts at native speed: `blockcount.c`, built once with the host C compiler into
`__pycache__` (keyed by the source's hash), hooked into unicorn: instructions through a block hook
(a Python block hook costs 4-27x the emulation itself; this one a hash-table increment per block),
memory accesses per region through a memory hook (an increment per access, not a Python call)."""
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

from unicorn import UC_HOOK_BLOCK, UC_HOOK_MEM_READ, UC_HOOK_MEM_WRITE, UcError
from unicorn.unicorn_py3.unicorn import uclib, uc_hook_h

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "blockcount.c")


class CounterUnavailable(Exception):
    """No host C compiler to build the counting hook."""


def _library():
    with open(SOURCE, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    cache = os.path.join(HERE, "__pycache__")
    if not os.access(HERE, os.W_OK):
        cache = os.path.join(tempfile.gettempdir(), f"n6board-{os.getuid()}")
    path = os.path.join(cache, f"blockcount-{digest}.so")
    if not os.path.exists(path):
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if not cc:
            raise CounterUnavailable("the simulated board needs the host C compiler (cc) to count instructions: "
                                     "install gcc (tools/setup.sh does)")
        os.makedirs(cache, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=cache)
        os.close(fd)
        try:
            proc = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", tmp, SOURCE], capture_output=True, text=True)
            if proc.returncode:
                raise CounterUnavailable(f"building {SOURCE} failed: {(proc.stderr.strip().splitlines() or ['?'])[0]}")
            os.replace(tmp, path)        # another board process may race: both write the same bytes
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    lib = ctypes.CDLL(path)
    lib.bc_new.restype = ctypes.c_void_p
    lib.bc_free.argtypes = [ctypes.c_void_p]
    lib.bc_used.restype = ctypes.c_uint64
    lib.bc_used.argtypes = [ctypes.c_void_p]
    lib.bc_take.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.bc_clock.argtypes = [ctypes.c_void_p, INSNS_FN, DUE_FN]
    lib.bc_set_deadline.argtypes = [ctypes.c_void_p, ctypes.c_uint64]
    lib.bc_total.restype = ctypes.c_uint64
    lib.bc_total.argtypes = [ctypes.c_void_p]
    lib.bc_last.restype = ctypes.c_uint64
    lib.bc_last.argtypes = [ctypes.c_void_p]
    return lib


_LIB = None
INSNS_FN = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32)
DUE_FN = ctypes.CFUNCTYPE(None)


def _lib():
    global _LIB
    _LIB = _LIB or _library()
    return _LIB


def _add_hook(uc, kind, fn, data, begin, end):
    handle = uc_hook_h()
    status = uclib.uc_hook_add(uc._uch, ctypes.byref(handle), kind, ctypes.cast(fn, ctypes.c_void_p),
                               ctypes.c_void_p(data), ctypes.c_uint64(begin), ctypes.c_uint64(end))
    if status:
        raise UcError(status)
    return handle


class AccessCounter:
    """Counts reads and writes (accesses and bytes) to [begin, end] of `uc` while attached."""

    def __init__(self, uc, begin, end):
        self.values = (ctypes.c_uint64 * 4)()
        self.uc = uc
        self.handle = _add_hook(uc, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE, _lib().mc_hook,
                                ctypes.addressof(self.values), begin, end)

    def take(self):
        """(reads, read bytes, writes, write bytes) since the last take."""
        out = tuple(self.values)
        ctypes.memset(self.values, 0, ctypes.sizeof(self.values))
        return out

    def detach(self):
        uclib.uc_hook_del(self.uc._uch, self.handle)


class BlockCounter:
    """Counts executions of each (block address, block size) of `uc` from the moment it is made."""

    def __init__(self, uc):
        self.lib = _lib()
        self.table = self.lib.bc_new()
        if not self.table:
            raise MemoryError("block counter")
        self.uc, self.handle = uc, _add_hook(uc, UC_HOOK_BLOCK, self.lib.bc_hook, self.table, 1, 0)

    def detach(self):
        """Stop counting (the bench's uncounted baseline)."""
        uclib.uc_hook_del(self.uc._uch, self.handle)
        self.uc.ctl_flush_tb()

    def clock(self, insns_of, due):
        """Clock mode: also keep the running total of executed instructions (`insns_of(address,
        size)` counts a block's, asked once per block) and call `due()` once when the total
        reaches the deadline of `set_deadline`."""
        self._callbacks = INSNS_FN(insns_of), DUE_FN(due)      # kept alive as long as the hook
        self.lib.bc_clock(self.table, *self._callbacks)

    def set_deadline(self, total):
        self.lib.bc_set_deadline(self.table, min(total, 2 ** 64 - 1))

    @property
    def total(self):
        """Instructions executed since clock mode began (counted when their block starts)."""
        return self.lib.bc_total(self.table)

    def last_block(self):
        """(address, size) of the translated block that started last."""
        key = self.lib.bc_last(self.table)
        return key >> 16, key & 0xFFFF

    def take(self):
        """{(address, size): executions} since the last take."""
        n = self.lib.bc_used(self.table)
        keys, counts = (ctypes.c_uint64 * n)(), (ctypes.c_uint64 * n)()
        self.lib.bc_take(self.table, keys, counts)
        return {(k >> 16, k & 0xFFFF): c for k, c in zip(keys, counts)}

    def __del__(self):
        if getattr(self, "table", None):
            self.lib.bc_free(self.table)
