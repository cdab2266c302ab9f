"""Pack step: the code image + the params blob → `<name>_rel.bin` [+ `_rel_params.bin`].

The params are streamed from the `.raw` files (never held in memory) after the EC blobs; the
header gets the params offset (unless split) and rt_ctx the blob's size and CRC-32. No ELF is
read here, so a weight change costs a copy and a CRC. Every file is written in one pass and
hashed as it is written (an image holding its params takes their CRC-32 in a first pass, from the
page cache): the build does not read them back for their signature."""
import hashlib
import struct
import threading
from dataclasses import dataclass, field
from typing import IO

from ..atomic import atomic_open
from ..errors import N6Error
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
    """A file that hashes what is written to it (hash_name None: nothing). The hash runs on a
    second thread, one chunk behind the write (hashlib and zlib release the GIL on large
    buffers): a weight change's pack costs about its copy and CRC, not those plus a hash."""

    def __init__(self, f: IO[bytes], hash_name: str | None) -> None:
        self.f, self.hash = f, hashlib.new(hash_name) if hash_name else None
        self._pending: threading.Thread | None = None

    def write(self, data: bytes | bytearray) -> None:
        self.f.write(data)
        if self.hash:
            self._wait()
            self._pending = threading.Thread(target=self.hash.update, args=(bytes(data),))
            self._pending.start()

    def hexdigest(self) -> str | None:
        """The digest of everything written (None without a hash)."""
        self._wait()
        return self.hash.hexdigest() if self.hash else None

    def _wait(self) -> None:
        if self._pending:
            self._pending.join()
            self._pending = None


class _Nowhere:
    """A writer that keeps nothing: the params' CRC-32 before they are written."""

    def write(self, data: bytes) -> None:
        pass


_NOWHERE = _Nowhere()


def pack(code_path: str, params_desc: str, bin_path: str, split: bool = False,
         hash_name: str | None = None) -> Packed:
    """Write the image; returns what the report and the checker need, and the `hash_name`
    digests of the files written (hashed as they are written: never read back for them)."""
    c = CodeImage.load(code_path)
    blob = ParamsBlob.load(params_desc)
    blob.verify()
    ec_blobs = c.ec_blobs
    if blob.lead is not None and len(ec_blobs) > blob.lead:   # pools planned past the params would lie under them
        raise N6Error(code_path, f"the linked epoch-controller blobs take {len(ec_blobs)} bytes before the params, "
                      f"prepare reserved {blob.lead} ({params_desc})", "report this as a bug of the prepare step")
    code = bytearray(c.code)
    params_offset = len(code) if (blob.size or ec_blobs) and not split else 0
    struct.pack_into("<I", code, Header.offset_of("params_offset"), params_offset)
    params_size = len(ec_blobs) + blob.size if split or params_offset else 0
    crc, digests = 0, {}   # path → its _Hashing
    split_path = params_path(bin_path) if split else None
    if split_path is not None:
        with atomic_open(split_path, unlink_first=True) as p:
            out = _Hashing(p, hash_name)
            out.write(ec_blobs)
            crc = blob.stream(out)
        digests[split_path] = out
    if params_offset:   # the code holds the CRC-32 of the params after it: a first pass, from the page cache
        crc = blob.stream(_NOWHERE)
    struct.pack_into("<2I", code, c.params_words_at, blob.size, crc)
    with atomic_open(bin_path, unlink_first=True) as f:
        out = _Hashing(f, hash_name)
        out.write(code)
        if params_offset:
            out.write(ec_blobs)
            if blob.stream(out) != crc:
                raise N6Error(bin_path, "the params changed while they were being packed", "build again")
        digests[bin_path] = out
        size = f.seek(0, 2)
    return Packed(bin_path, split_path, size, params_size, c.rel_entries, c.got_entries, len(ec_blobs),
                  {path: d for path, out in digests.items() if (d := out.hexdigest())})
