"""Check a .tflite flatbuffer as the flatbuffers verifier LiteRT runs first does: every table,
vtable, vector and string of the file lies inside it, aligned, strings end in a zero byte.

The schema is read from the `tflite` package's generated accessors (one method per field: the
vtable slot it reads and what it finds there), so every field of TFLite's schema is checked, read
by the importer or not."""
import functools
import importlib
import inspect
import re

import flatbuffers.number_types as N

SIZES = {name[:-5]: getattr(N, name).bytewidth for name in dir(N) if name.endswith("Flags")}
MAX_DEPTH = 64          # the verifier's default nesting limit
_SLOT = re.compile(r"Offset\((\d+)\)")
_CLASS = re.compile(r"from tflite\.(\w+) import")
_SCALAR = re.compile(r"number_types\.(\w+)Flags, (a|o) \+")


class Damaged(Exception):
    """Where the file leaves the flatbuffer format (becomes the reader's one-line error)."""


@functools.cache
def schema(name):
    """{slot: (kind, detail)} of table `name`: kind scalar (size), string, table (class), union
    (type slot), vector (element size), vector_string, vector_table (class)."""
    cls = getattr(importlib.import_module("tflite." + name), name)
    fields, union_types = {}, {}
    for attr, fn in vars(cls).items():
        if not callable(fn) or attr.startswith(("_", "Init", "GetRootAs")) or attr.endswith(
                ("Length", "AsNumpy", "IsNone", "BufferHasIdentifier")):
            continue
        src = inspect.getsource(fn)
        slot = _SLOT.search(src)
        if slot is None:
            continue
        slot = int(slot.group(1))
        target = _CLASS.search(src)
        scalar = _SCALAR.search(src)
        if "self._tab.Union(" in src:
            fields[slot] = ("union", attr)
        elif "self._tab.Vector(o)" in src:
            if target and "self._tab.Indirect(" in src:
                fields[slot] = ("vector_table", target.group(1))
            elif "self._tab.String(" in src:
                fields[slot] = ("vector_string", None)
            else:
                fields[slot] = ("vector", SIZES[scalar.group(1)])
        elif "self._tab.String(" in src:
            fields[slot] = ("string", None)
        elif target and "self._tab.Indirect(" in src:
            fields[slot] = ("table", target.group(1))
        elif scalar:
            fields[slot] = ("scalar", SIZES[scalar.group(1)])
            union_types[attr] = slot
    for slot, (kind, attr) in list(fields.items()):
        if kind == "union":
            fields[slot] = ("union", (union_types[attr + "Type"], attr))
    return fields


UNION_ENUMS = {"Details": "QuantizationDetails", "ArraySegments": "SparseIndexVector"}   # field → its union's name


@functools.cache
def union_members(field):
    """{type value: table name} of the union a field holds (BuiltinOptions, BuiltinOptions2, ...)."""
    union = UNION_ENUMS.get(field, field)
    enum = getattr(importlib.import_module("tflite." + union), union)
    return {v: k for k, v in vars(enum).items() if not k.startswith("_") and k != "NONE"}


class _Verifier:
    def __init__(self, buf):
        self.buf = buf
        self.end = len(buf)

    def need(self, pos, size, align, what):
        if pos < 0 or pos + size > self.end:
            raise Damaged(f"{what} at byte {pos} ends past the end of the file ({self.end} bytes)")
        if align > 1 and pos % align:
            raise Damaged(f"{what} at byte {pos} is not aligned to {align} bytes")

    def u(self, pos, size, what, signed=False):
        self.need(pos, size, min(size, 4) if size > 1 else 1, what)
        return int.from_bytes(self.buf[pos:pos + size], "little", signed=signed)

    def offset_target(self, pos, what):
        return pos + self.u(pos, 4, what)

    def vector(self, pos, elem, what):
        """Start of the elements and their count, after checking they lie in the file."""
        n = self.u(pos, 4, what + " length")
        self.need(pos + 4, n * elem, 1, what)
        return pos + 4, n

    def string(self, pos, what):
        start, n = self.vector(pos, 1, what)
        if self.u(start + n, 1, what + " terminator") != 0:
            raise Damaged(f"{what} at byte {pos} does not end in a zero byte")

    def table(self, pos, name, depth=0):
        if depth > MAX_DEPTH:
            raise Damaged(f"tables nested deeper than {MAX_DEPTH}")
        vtable = pos - self.u(pos, 4, f"{name} table", signed=True)
        vsize = self.u(vtable, 2, f"{name} vtable")
        if vsize % 2:
            raise Damaged(f"{name} vtable at byte {vtable} has size {vsize}")
        self.need(vtable, vsize, 2, f"{name} vtable")
        tsize = self.u(vtable + 2, 2, f"{name} vtable") if vsize >= 4 else 0
        self.need(pos, tsize, 1, f"{name} table")
        fields = schema(name)
        for slot in range(4, vsize, 2):
            field = self.u(vtable + slot, 2, f"{name} vtable")
            if not field or slot not in fields:
                continue
            at, (kind, detail), what = pos + field, fields[slot], f"{name} field {slot}"
            if kind == "scalar":
                self.need(at, detail, detail, what)
            elif kind == "union":
                type_slot, _ = detail
                tfield = self.u(vtable + type_slot, 2, f"{name} vtable") if type_slot < vsize else 0
                member = union_members(detail[1]).get(self.u(pos + tfield, 1, what)) if tfield else None
                if member:
                    self.table(self.offset_target(at, what), member, depth + 1)
            else:
                target = self.offset_target(at, what)
                if kind == "string":
                    self.string(target, what)
                elif kind == "table":
                    self.table(target, detail, depth + 1)
                elif kind == "vector":
                    self.vector(target, detail, what)
                else:
                    start, n = self.vector(target, 4, what)
                    for k in range(n):
                        elem = self.offset_target(start + 4 * k, what)
                        if kind == "vector_string":
                            self.string(elem, what)
                        else:
                            self.table(elem, detail, depth + 1)


def verify(buf):
    """Raises Damaged where `buf` is not a well-formed TFLite flatbuffer."""
    v = _Verifier(buf)
    v.table(v.offset_target(0, "root offset"), "Model")
