"""Epoch-controller command blobs: the register programming of an epoch recorded as commands the
NPU's epoch controller executes. Decoding, encoding, the assembler text ST's tracer prints
(`write`, `writefield`, `burstwrite`, `burstwriteinc`, `poll`, `label`, `irq`) and the merging of
a register program's writes into bursts as ST's optimiser does (`optimise`) live here.

Format (facts of ec.h and of ST's blobs and their disassembly): 32-bit little-endian words; word
0 the blob magic, word 1 the number of command words after these two. A command's first word:
bits 31:26 the unit's block index ((address - ATON_BASE) >> 12), bits 4:0 the opcode, and

  write          0  register 25:16, field [msb 14:10 : lsb 9:5] = [31:0]; one value word follows
  writefield     1  register 25:21, bit 9:5, value bit 13 (single-bit fields)
  burstwrite     2  register 25:16, count 15:5; count values for the same register follow
  burstwriteinc  3  register 25:16, count 15:5; count values for consecutive registers follow
  poll           4  register 25:16, field [14:10 : 9:5]; a timeout word and the awaited value follow
  irq           12  number 31:5: the end of the blob, an interrupt to the CPU
  label         29  label number 31:5"""
import struct
from dataclasses import dataclass, replace

from .registers import aton_map

BLOB_MAGIC = 0xCA05_7A7A
POLL_TIMEOUT = 100                  # the timeout word of every poll ST's tracer records
MAX_BURST = (1 << 11) - 1           # values of one burst (its count field, bits 15:5)
PINNED = {("ARITH", "TRANSLATEADDR")}   # (unit, register) writes ST's optimiser never moves others across
WRITE, WRITEFIELD, BURSTWRITE, BURSTWRITEINC, POLL, IRQ, LABEL = 0, 1, 2, 3, 4, 12, 29
NAMES = {WRITE: "write", WRITEFIELD: "writefield", BURSTWRITE: "burstwrite", BURSTWRITEINC: "burstwriteinc",
         POLL: "poll", LABEL: "label", IRQ: "irq"}


class BlobError(ValueError):
    """Not a blob, or a command this decoder does not know (one line, with the word index)."""


@dataclass(frozen=True)
class Command:
    op: int
    unit: int = 0               # block index
    register: int = 0           # register index in the unit (offset / 4)
    values: tuple = ()          # write/burst values; writefield: (bit value,); poll: (awaited value, timeout)
    msb: int = 31
    lsb: int = 0
    number: int = 0             # label / irq number

    def text(self):
        """The command as ST's disassembly prints it."""
        name = NAMES[self.op]
        if self.op in (LABEL, IRQ):
            return f"{name} 0x{self.number:x}"
        head = f"{name} {self.unit} {self.register}"
        if self.op == WRITEFIELD:
            return f"{head} [{self.lsb}] 0x{self.values[0]:x}"
        if self.op == POLL:
            field = f"[{self.lsb}]" if self.msb == self.lsb else f"[{self.msb}:{self.lsb}]"
            return f"{head} {field} 0x{self.values[0]:x} {self.values[1]}"
        return head + "".join(f" 0x{v:x}" for v in self.values)

    def writes(self):
        """[(unit, register, value or (lsb, bit))] the command makes: one per register write."""
        if self.op == WRITE:
            return [(self.unit, self.register, self.values[0])]
        if self.op == WRITEFIELD:
            return [(self.unit, self.register, (self.lsb, self.values[0]))]
        if self.op == BURSTWRITE:
            return [(self.unit, self.register, v) for v in self.values]
        if self.op == BURSTWRITEINC:
            return [(self.unit, self.register + i, v) for i, v in enumerate(self.values)]
        return []


def blob_words(data):
    """The command words of a blob given as bytes (its magic and length checked)."""
    if len(data) < 8:
        raise BlobError("shorter than a blob header (8 bytes)")
    magic, size = struct.unpack_from("<II", data)
    if magic != BLOB_MAGIC:
        raise BlobError(f"magic 0x{magic:08X}, expected 0x{BLOB_MAGIC:08X}")
    if 8 + 4 * size > len(data):
        raise BlobError(f"{size} command words announced, {(len(data) - 8) // 4} present")
    return list(struct.unpack_from(f"<{size}I", data, 8))


def decode(words):
    """[Command] of a blob's command words."""
    out, i = [], 0
    while i < len(words):
        w = words[i]
        op, unit = w & 0x1F, w >> 26
        need = lambda n, i=i: words[i + 1:i + 1 + n] if i + n < len(words) else _short(i, n)
        if op == WRITE:
            out.append(Command(WRITE, unit, w >> 16 & 0x3FF, tuple(need(1)), w >> 10 & 0x1F, w >> 5 & 0x1F))
            i += 2
        elif op == WRITEFIELD:
            if w & 0x1FDC00:
                raise BlobError(f"word {i + 2}: writefield 0x{w:08X} sets bits this decoder does not know")
            out.append(Command(WRITEFIELD, unit, w >> 21 & 0x1F, (w >> 13 & 1,), w >> 5 & 0x1F, w >> 5 & 0x1F))
            i += 1
        elif op in (BURSTWRITE, BURSTWRITEINC):
            count = w >> 5 & 0x7FF
            out.append(Command(op, unit, w >> 16 & 0x3FF, tuple(need(count))))
            i += 1 + count
        elif op == POLL:
            timeout, value = need(2)
            out.append(Command(POLL, unit, w >> 16 & 0x3FF, (value, timeout), w >> 10 & 0x1F, w >> 5 & 0x1F))
            i += 3
        elif op in (LABEL, IRQ):
            out.append(Command(op, number=w >> 5))
            i += 1
        else:
            raise BlobError(f"word {i + 2}: opcode {op} (0x{w:08X}) is not a command this decoder knows")
    return out


def encode(commands):
    """The command words of `commands` (decode's inverse)."""
    words = []
    for c in commands:
        head = c.unit << 26 | c.op
        if c.op == WRITE:
            words += [head | c.register << 16 | c.msb << 10 | c.lsb << 5, c.values[0]]
        elif c.op == WRITEFIELD:
            words.append(head | c.register << 21 | c.values[0] << 13 | c.lsb << 5)
        elif c.op in (BURSTWRITE, BURSTWRITEINC):
            words += [head | c.register << 16 | len(c.values) << 5, *c.values]
        elif c.op == POLL:
            words += [head | c.register << 16 | c.msb << 10 | c.lsb << 5, c.values[1], c.values[0]]
        else:
            words.append(c.number << 5 | c.op)
    return words


def blob_bytes(commands):
    words = encode(commands)
    return struct.pack(f"<II{len(words)}I", BLOB_MAGIC, len(words), *words)


def blob_u64(commands):
    """A blob as the 64-bit words of an `_ecblobs.h` array (its bytes padded with zeros)."""
    data = blob_bytes(commands)
    data += bytes(-len(data) % 8)
    return struct.unpack(f"<{len(data) // 8}Q", data)


def optimise(program):
    """A register program (write, writefield, poll, label and irq commands in program order, as
    ST's tracer records them before optimising: its `_initial.s`) with its writes merged into
    bursts as ST's optimiser merges them (its `.s` after: every blob of the test bed's
    ec-workspace, command for command). Each run of whole-register writes to one unit, between
    two other commands, is sorted by register (one register's values keep their order) and cut
    into bursts: a register written again and again becomes a burstwrite, consecutive registers
    written once each a burstwriteinc, the rest stay single writes. A write of an arithmetic
    unit's TRANSLATEADDR (which places the coefficient memory written after it) is never moved:
    it stands alone between the run before and the run after."""
    out, run = [], []
    for c in program:
        if run and not (_mergeable(c) and c.unit == run[-1].unit and not _pinned(c) and not _pinned(run[-1])):
            out += _bursts(sorted(run, key=lambda w: w.register))
            run = []
        (run if _mergeable(c) else out).append(c)
    return out + _bursts(sorted(run, key=lambda w: w.register))


def _mergeable(c):
    return c.op == WRITE and (c.msb, c.lsb) == (31, 0)


def _pinned(c):
    unit, _, register = aton_map().locate(c.unit << 12 | c.register << 2)
    return unit is not None and register is not None and (unit.name, register.name) in PINNED


def _bursts(run):
    """Sorted writes to one unit as write, burstwrite and burstwriteinc commands."""
    out, k = [], 0
    while k < len(run):
        first, m = run[k], k + 1
        while m < len(run) and m - k < MAX_BURST and run[m].register == first.register:
            m += 1
        op = BURSTWRITE
        if m == k + 1:               # a register written once: a run of consecutive ones, each once
            op = BURSTWRITEINC
            while (m < len(run) and m - k < MAX_BURST and run[m].register == run[m - 1].register + 1
                   and (m + 1 == len(run) or run[m + 1].register != run[m].register)):
                m += 1
        values = tuple(w.values[0] for w in run[k:m])
        out.append(first if m == k + 1 else replace(first, op=op, values=values))
        k = m
    return out


def _short(i, n):
    raise BlobError(f"word {i + 2}: the command needs {n} more words than the blob holds")
