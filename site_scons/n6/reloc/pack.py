"""Pack step: the code image + the params blob → `<name>_rel.bin` [+ `_rel_params.bin`].

The params are streamed from the `.raw` files (never held in memory) after the EC blobs; the
header gets the params offset (unless split) and rt_ctx the blob's size and CRC-32. No ELF is
read here, so a weight change costs a copy and a CRC."""
import struct
from dataclasses import dataclass

from ..atomic import atomic_open
from .image import CodeImage, Header
from .names import params_path
from .params import ParamsBlob


@dataclass
class Packed:
    """What the report needs from the pack step (the rest is in the image itself)."""
    bin_path: str
    params_path: str | None     # a split image's params file
    size: int
    params_size: int
    rel_entries: int
    got_entries: int
    ec_blob_size: int


def pack(code_path: str, params_desc: str, bin_path: str, split: bool = False) -> Packed:
    """Write the image; returns what the report and the checker need."""
    c = CodeImage.load(code_path)
    blob = ParamsBlob.load(params_desc)
    blob.verify()
    ec_blobs = c.ec_blobs
    code = bytearray(c.code)
    params_offset = len(code) if (blob.size or ec_blobs) and not split else 0
    struct.pack_into("<I", code, Header.offset_of("params_offset"), params_offset)
    params_size = len(ec_blobs) + blob.size if split or params_offset else 0
    crc = 0
    split_path = params_path(bin_path) if split else None
    if split:
        with atomic_open(split_path) as p:   # type: ignore[arg-type]  # a path when split
            p.write(ec_blobs)
            crc = blob.stream(p)
    with atomic_open(bin_path) as out:
        out.write(code)
        if params_offset:
            out.write(ec_blobs)
            crc = blob.stream(out)
        size = out.tell()
        out.seek(c.params_words_at)
        out.write(struct.pack("<2I", blob.size, crc))
    return Packed(bin_path, split_path, size, params_size, c.rel_entries, c.got_entries, len(ec_blobs))
