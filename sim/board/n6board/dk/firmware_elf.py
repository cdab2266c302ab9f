"""ST's validation firmware as the twin loads it: what gdb's `load` writes (the loadable
segments at their physical addresses), where `set $pc = Reset_Handler` points, the vector table
a reset would use, and the function symbols that name a PC in stop messages."""
import bisect
import os
import struct
from dataclasses import dataclass

from n6.errors import N6Error
from n6.reloc.elf import read_symbols
from n6.run.firmware_start import elf_load

STT_OBJECT, STT_FUNC = 1, 2


@dataclass
class FirmwareElf:
    path: str
    entry: int                       # Reset_Handler
    segments: list                   # [(address, bytes)]
    vector_table: int
    initial_sp: int
    functions: list                  # [(address, size, name)] sorted (IAR's ??local labels left out)
    objects: dict                    # data symbol name → address

    @classmethod
    def read(cls, path):
        entry, segments = elf_load(path)
        symbols = read_symbols(path)
        functions = sorted((s.value & ~1, s.size, s.name) for s in symbols
                           if s.type == STT_FUNC and s.name and not s.name.startswith("??"))
        objects = {s.name: s.value for s in symbols if s.type == STT_OBJECT and s.name}
        vectors = next((s.value for s in symbols if s.name in ("__vector_table", "__Vectors")), None)
        vector_table = vectors if vectors is not None else min(a for a, _ in segments)
        table = next((data[vector_table - a:vector_table - a + 8] for a, data in segments
                      if a <= vector_table < a + len(data)), None)
        if table is None or len(table) < 8:
            raise N6Error(path, "no vector table in the loaded segments", "use ST's validation firmware ELF")
        initial_sp, _ = struct.unpack("<II", table)
        return cls(path, entry, segments, vector_table, initial_sp, functions, objects)

    @property
    def name(self):
        return os.path.basename(self.path)

    def function_at(self, pc):
        """The function holding `pc`, or None (also outside the firmware's segments: a model's code)."""
        if not any(a <= pc < a + len(data) for a, data in self.segments):
            return None
        i = bisect.bisect_right(self.functions, (pc & ~1, float("inf"))) - 1
        return self.functions[i][2] if i >= 0 else None

    def spans_of(self, *names):
        """The [start, start + st_size) ranges of the functions `names` the firmware has (those it
        lacks, e.g. a helper the compiler inlined, have none)."""
        return tuple((a, a + size) for a, size, n in self.functions if n in names)

    def address_of(self, name):
        return next((a for a, _, n in self.functions if n == name), None)
