"""Epoch-controller blobs (sim/npu/npu_model/ecblob.py): decoding, encoding, ST's assembler text,
a register program merged into bursts as ST's optimiser does. The judges (opt-in,
N6_REAL_STEDGEAI): every blob of the test bed's ec-workspace (ST Edge AI 3.0, YOLOX nano) decodes
into ST's own disassembly of it (tracer_workspace/**/debug__ec_blob_*.s), command for command, and
encodes back into the same words; the LL_ATON program each was recorded from
(default_blob_trace.c), recorded and optimised by ours, gives ST's blob byte for byte."""
import os
import re
import struct

import pytest

from npu_model.ecblob import (BLOB_MAGIC, BURSTWRITE, BURSTWRITEINC, IRQ, LABEL, POLL, POLL_TIMEOUT, WRITE,
                              WRITEFIELD, BlobError, Command, blob_bytes, blob_words, decode, encode, optimise)

REAL = os.environ.get("N6_REAL_STEDGEAI", "")
WORKSPACE = os.path.join(REAL, "ec-workspace")

# A blob written from the format's facts: STRENG0 (block 5) CTRL write, CLKCTRL (block 0) BGATES
# (register 4) bit 18 set, a burst into STRENG0 registers 2..3, a poll of STRENG0 CTRL bit 31 for 0
# (timeout 100), a label and the closing irq.
WORDS = [5 << 26 | 0 << 16 | 31 << 10 | 0 << 5 | 0, 0x80104,
         0 << 26 | 4 << 21 | 1 << 13 | 18 << 5 | 1,
         5 << 26 | 2 << 16 | 2 << 5 | 3, 0x3410_0000, 0xA8C00,
         5 << 26 | 0 << 16 | 31 << 10 | 31 << 5 | 4, 100, 0,
         3 << 5 | 29,
         0 << 5 | 12]
TEXT = ["write 5 0 0x80104", "writefield 0 4 [18] 0x1", "burstwriteinc 5 2 0x34100000 0xa8c00",
        "poll 5 0 [31] 0x0 100", "label 0x3", "irq 0x0"]


def test_a_blob_written_from_the_format_decodes_to_its_commands_and_back():
    data = struct.pack(f"<II{len(WORDS)}I", BLOB_MAGIC, len(WORDS), *WORDS)
    commands = decode(blob_words(data))
    assert [c.text() for c in commands] == TEXT
    assert [c.op for c in commands] == [WRITE, WRITEFIELD, BURSTWRITEINC, POLL, LABEL, IRQ]
    assert encode(commands) == WORDS and blob_bytes(commands) == data
    assert commands[2].writes() == [(5, 2, 0x3410_0000), (5, 3, 0xA8C00)]
    assert commands[1].writes() == [(0, 4, (18, 1))]


def test_a_bad_blob_is_refused_in_one_line_naming_the_word():
    with pytest.raises(BlobError, match=r"^magic 0x00000000, expected 0xCA057A7A$"):
        blob_words(bytes(8))
    with pytest.raises(BlobError, match=r"^4 command words announced, 1 present$"):
        blob_words(struct.pack("<III", BLOB_MAGIC, 4, 0))
    with pytest.raises(BlobError, match=r"^word 2: opcode 7 \(0x00000007\) is not a command"):
        decode([7])
    with pytest.raises(BlobError, match=r"^word 2: the command needs 1 more words"):
        decode([WORDS[0]])
    with pytest.raises(BlobError, match=r"^word 2: writefield 0x00004001 sets bits"):
        decode([1 | 1 << 14])


def test_a_program_is_merged_into_bursts_as_st_optimiser_merges_it():
    """A unit's run of writes sorted by register: a register written twice a burstwrite,
    consecutive registers a burstwriteinc, the rest single writes; an arithmetic unit's
    TRANSLATEADDR (ARITH0 is block 23, the register 11) stays where it is, alone."""
    def w(unit, register, value):
        return Command(WRITE, unit, register, (value,))
    program = [w(5, 0, 0xA), w(5, 0, 0xB), w(5, 13, 0xC), w(5, 8, 0xD), w(5, 2, 0xE), w(5, 7, 0xF), w(5, 3, 0x10),
               w(5, 7, 0x11), w(5, 12, 0x12), w(5, 5, 0x13),
               Command(WRITEFIELD, 0, 4, (1,), 3, 3),
               w(23, 13, 0x20), w(23, 12, 0x21), w(23, 11, 1), w(23, 257, 0x22), w(23, 256, 0x23),
               Command(POLL, 5, 0, (0, POLL_TIMEOUT), 31, 31), Command(LABEL, number=4), Command(IRQ)]
    assert [c.text() for c in optimise(program)] == [
        "burstwrite 5 0 0xa 0xb", "burstwriteinc 5 2 0xe 0x10", "write 5 5 0x13", "burstwrite 5 7 0xf 0x11",
        "write 5 8 0xd", "burstwriteinc 5 12 0x12 0xc",
        "writefield 0 4 [3] 0x1",
        "burstwriteinc 23 12 0x21 0x20", "write 23 11 0x1", "burstwriteinc 23 256 0x23 0x22",
        "poll 5 0 [31] 0x0 100", "label 0x4", "irq 0x0"]
    assert [c.op for c in optimise(program)][:2] == [BURSTWRITE, BURSTWRITEINC]


def workspace_blobs():
    """{name: blob bytes} of the ec-workspace's default_ecblobs.h."""
    return header_blobs(os.path.join(WORKSPACE, "default_ecblobs.h"))


def header_blobs(path):
    """{name: blob bytes} of an ecblobs header (`_ec_blob_<name>` uint64 arrays, little-endian)."""
    with open(path) as f:
        text = f.read()
    out = {}
    for name, body in re.findall(r"static const uint64_t _ec_blob_(\w+) ?\[\d*\] =\s*\{(.*?)\};", text, re.S):
        values = [int(x, 16) for x in re.findall(r"0x([0-9a-fA-F]+)UL", body)]
        out[name] = struct.pack(f"<{len(values)}Q", *values)
    return out


@pytest.mark.skipif(not os.path.isdir(WORKSPACE), reason="no ec-workspace in the test bed (set N6_REAL_STEDGEAI)")
def test_every_blob_of_the_ec_workspace_decodes_into_st_disassembly_command_for_command():
    blobs = workspace_blobs()
    assert sorted(blobs) == ["default_1", "default_115", "default_133"]
    counts = {}
    for name, data in blobs.items():
        words = blob_words(data)
        commands = decode(words)
        with open(os.path.join(WORKSPACE, "tracer_workspace", "working_dir", f"debug__ec_blob_{name}.s")) as f:
            theirs = [line.strip() for line in f if line.strip() and not line.startswith(";;")]
        assert [c.text() for c in commands] == theirs, name
        assert encode(commands) == words, name
        counts[name] = len(commands)
    assert counts == {"default_1": 11962, "default_115": 1742, "default_133": 10089}


# -- blobs against the LL_ATON program they were recorded from -------------------------------------

TRACER = os.path.join(WORKSPACE, "tracer_workspace")
RECORDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "ec_trace", "recorder.c")


def traced_programs(tmp_path):
    """{blob name: [access]} of the workspace's default_blob_trace.c (ST's LL_ATON calls of each
    blob's epochs), built for the host with ST's trace-mode LL_ATON and our recorder
    (fixtures/ec_trace/recorder.c) in place of ST's tracer; an access is ("w", unit, register,
    value), ("f", unit, register, lsb, bits, value), ("p", unit, register, lsb, bits, value) or
    ("e", epoch) where an epoch starts."""
    import shutil
    import subprocess
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no host C compiler (cc)")
    exe = tmp_path / "trace_prog"
    subprocess.run([cc, "-O0", "-w", "-o", str(exe), "-I", os.path.join(TRACER, "ectracer", "include"),
                    os.path.join(WORKSPACE, "default_blob_trace.c"), os.path.join(TRACER, "working_dir", "ll_aton.c"),
                    os.path.join(TRACER, "working_dir", "ll_aton_util.c"), RECORDER], check=True, timeout=600)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True, timeout=600).stdout
    programs, current = {}, None
    for line in out.splitlines():
        kind, *fields = line.split()
        if kind == "blob":
            current = programs.setdefault(fields[0].removeprefix("_ec_blob_"), [])
        elif kind in ("w", "f", "p", "epoch"):
            current.append((kind[0], *(int(v, 0) for v in fields)))
        else:
            raise AssertionError(line)            # ("x": a register read the trace cannot record)
    return programs


def recorded(program):
    """A traced program as the commands ST's tracer records before optimising (its `_initial.s`):
    an epoch's label, each write, single-bit field write and poll, the closing irq."""
    out = []
    for kind, *f in program:
        if kind == "e":
            out.append(Command(LABEL, number=f[0]))
        elif kind == "w":
            out.append(Command(WRITE, f[0], f[1], (f[2],)))
        else:
            (unit, register, lsb, bits, value), msb = f, f[2] + f[3] - 1
            assert kind == "p" or bits == 1, f"a {bits}-bit field write"
            out.append(Command(WRITEFIELD, unit, register, (value,), lsb, lsb) if kind == "f" else
                       Command(POLL, unit, register, (value, POLL_TIMEOUT), msb, lsb))
    return out + [Command(IRQ)]


def disassembly(name):
    """ST's disassembly of a blob (`name` with `_initial` before its optimiser), comments dropped."""
    with open(os.path.join(TRACER, "working_dir", f"debug__ec_blob_{name}.s")) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith(";;")]


@pytest.mark.skipif(not os.path.isdir(TRACER), reason="no ec-workspace in the test bed (set N6_REAL_STEDGEAI)")
def test_the_program_of_every_blob_encodes_into_st_blob_byte_for_byte(tmp_path):
    """default_blob_trace.c (ST's LL_ATON calls of each blob's epochs, built for the host with our
    recorder) recorded as commands is ST's disassembly before its optimiser, line for line;
    optimised and encoded by ecblob.py it is ST's blob, byte for byte (the header's array pads
    the words to 64 bits with zeros)."""
    traced, sizes = traced_programs(tmp_path), {}
    for name, theirs in workspace_blobs().items():
        program = recorded(traced[name])
        assert first_difference([c.text() for c in program], disassembly(f"{name}_initial")) is None, name
        ours = blob_bytes(optimise(program))
        assert first_difference([c.text() for c in optimise(program)], disassembly(name)) is None, name
        assert ours == theirs[:len(ours)] and not theirs[len(ours):].strip(b"\0") and len(theirs) - len(ours) < 8
        sizes[name] = (len(program), len(decode(blob_words(ours))), len(ours))
    assert sizes == {"default_1": (31632, 11962, 172628), "default_115": (4675, 1742, 25420),
                     "default_133": (26986, 10089, 146784)}


def write_stream(run):
    """[(offset, register value after the write) or ("poll", offset, msb, lsb, value)] of
    `run(npu, polled)` through a fresh NPU model: every write the model takes, in order."""
    from npu_model.npu import Npu
    npu = Npu(lambda address, data: None, mode="control")
    stream, write = [], npu.write

    def recorded(offset, value):
        write(offset, value)
        stream.append((offset, npu.regs.get(offset)))
    npu.write = recorded
    run(npu, lambda offset, msb, lsb, value: stream.append(("poll", offset, msb, lsb, value)))
    return stream, npu.programs


def run_traced(program):
    def run(npu, polled):
        for kind, unit, register, *rest in (access for access in program if access[0] != "e"):
            offset = unit << 12 | register << 2
            if kind == "w":
                npu.write(offset, rest[0])
                continue
            lsb, bits, value = rest
            if kind == "f":
                mask = ((1 << bits) - 1) << lsb
                npu.write(offset, npu.regs.get(offset, 0) & ~mask | value << lsb & mask)
            else:
                polled(offset, lsb + bits - 1, lsb, value)
    return write_stream(run)


def run_blob(data):
    def run(npu, polled):
        for c in decode(blob_words(data)):
            npu._execute(c, "blob")
            if c.op == POLL:
                polled(c.unit << 12 | c.register << 2, c.msb, c.lsb, c.values[0])
    return write_stream(run)


def between_polls(stream):
    """The stream cut at its polls: [(sorted writes before the poll, the poll)]."""
    out, writes = [], []
    for item in stream:
        if item[0] == "poll":
            out.append((sorted(writes), item))
            writes = []
        else:
            writes.append(item)
    return out + [(sorted(writes), None)]


def first_difference(ours, theirs):
    """None, or (index, ours, theirs) at the first place two lists differ (a short failure line)."""
    return next(((i, a, b) for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)


def per_register(stream):
    out = {}
    for item in stream:
        if item[0] != "poll":
            out.setdefault(item[0], []).append(item[1])
    return out


@pytest.mark.skipif(not os.path.isdir(TRACER), reason="no ec-workspace in the test bed (set N6_REAL_STEDGEAI)")
def test_every_blob_makes_the_writes_of_the_ll_aton_program_it_was_recorded_from(tmp_path):
    """Each blob executed through the NPU model, and ST's LL_ATON program it was recorded from
    (default_blob_trace.c, built for the host) run through a fresh model: the same register
    writes, write for write. ST's optimiser reorders writes between two polls and merges them
    into bursts, so the order is compared where it is kept: the same polls in the same order, the
    same writes between two polls, every register given the same values in the same order, and
    every chain started with the same program."""
    traced = traced_programs(tmp_path)
    counts = {}
    for name, data in workspace_blobs().items():
        (theirs, their_chains), (ours, our_chains) = run_traced(traced[name]), run_blob(data)
        assert len(ours) == len(theirs), name
        assert first_difference(between_polls(ours), between_polls(theirs)) is None, name
        mine, program = per_register(ours), per_register(theirs)
        assert first_difference(sorted(mine.items()), sorted(program.items())) is None, name
        assert first_difference(our_chains, their_chains) is None, name
        counts[name] = (len(ours) - sum(item[0] == "poll" for item in ours), len(our_chains))
    assert counts == {"default_1": (29450, 115), "default_115": (4358, 17), "default_133": (25172, 111)}
