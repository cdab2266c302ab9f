"""Pack step: the code image + the params blob → `<name>_rel.bin` [+ `_rel_params.bin`].

The params are streamed from the `.raw` files (never held in memory) after the EC blobs; the
header gets the params offset (unless split) and rt_ctx the blob's size and CRC-32. No ELF is
read here, so a weight change costs a copy and a CRC. Files written in one pass (a split image
and its params file) are also hashed as they are written: the build then does not read them back
for their signature."""
import hashlib
import struct
from dataclasses import dataclass, field
from typing import IO

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
    digests: dict[str, str] = field(default_factory=dict)   # path → hex digest of what was written (hash_name)


class _Hashing:
    """A file that hashes what is written to it (hash_name None: nothing)."""

    def __init__(self, f: IO[bytes], hash_name: str | None) -> None:
        self.f, self.hash = f, hashlib.new(hash_name) if hash_name else None

    def write(self, data: bytes | bytearray) -> None:
        self.f.write(data)
        if self.hash:
            self.hash.update(data)

    def flush(self) -> None:
        self.f.flush()


def pack(code_path: str, params_desc: str, bin_path: str, split: bool = False,
         hash_name: str | None = None) -> Packed:
    """Write the image; returns what the report and the checker need, and the `hash_name`
    digests of the files written in one pass."""
    c = CodeImage.load(code_path)
    blob = ParamsBlob.load(params_desc)
    blob.verify()
    ec_blobs = c.ec_blobs
    code = bytearray(c.code)
    params_offset = len(code) if (blob.size or ec_blobs) and not split else 0
    struct.pack_into("<I", code, Header.offset_of("params_offset"), params_offset)
    params_size = len(ec_blobs) + blob.size if split or params_offset else 0
    crc, digests = 0, {}
    split_path = params_path(bin_path) if split else None
    if split_path is not None:
        with atomic_open(split_path, unlink_first=True) as p:
            out = _Hashing(p, hash_name)
            out.write(ec_blobs)
            crc = blob.stream(out)
        digests[split_path] = out.hash
    with atomic_open(bin_path, unlink_first=True) as f:
        if params_offset:   # the CRC-32 is known once the params are written after the code: patched in
            f.write(code)
            f.write(ec_blobs)
            crc = blob.stream(f)
            f.seek(c.params_words_at)
            f.write(struct.pack("<2I", blob.size, crc))
        else:
            struct.pack_into("<2I", code, c.params_words_at, blob.size, crc)
            out = _Hashing(f, hash_name)
            out.write(code)
            digests[bin_path] = out.hash
        size = f.seek(0, 2)
    return Packed(bin_path, split_path, size, params_size, c.rel_entries, c.got_entries, len(ec_blobs),
                  {path: h.hexdigest() for path, h in digests.items() if h})
