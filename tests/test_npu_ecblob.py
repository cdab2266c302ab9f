"""Epoch-controller blobs (sim/npu/npu_model/ecblob.py): decoding, encoding, ST's assembler text.
The judge (opt-in, N6_REAL_STEDGEAI): every blob of the test bed's ec-workspace (ST Edge AI 3.0,
YOLOX nano) decodes into ST's own disassembly of it (tracer_workspace/**/debug__ec_blob_*.s),
command for command, and encodes back into the same words."""
import os
import re
import struct

import pytest

from npu_model.ecblob import (BLOB_MAGIC, BURSTWRITEINC, IRQ, LABEL, POLL, WRITE, WRITEFIELD, BlobError, blob_bytes,
                              blob_words, decode, encode)

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
