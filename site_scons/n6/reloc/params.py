"""The params blob: the `.raw` files of the pools that carry parameters, in pool order, each
zero-padded to 8 bytes, and the bytes of epoch-controller blobs that lead it in the params region
(--ecblob-in-params). Prepare describes it in `<name>_reloc_params.json`; pack streams it from the
`.raw` files straight into the image, so new weights cost one copy and one CRC-32."""
import json
import os
import zlib
from dataclasses import dataclass
from typing import Protocol, Self

from ..atomic import write_text
from ..errors import N6Error
from ..jsonfile import read_json
from .image import align8

CHUNK = 1 << 20
VERSION = 2
REGENERATE = "use the .raw files written by the same stedgeai run as network.c"


class Writer(Protocol):
    """Where a blob is streamed to: a binary file, or one that also hashes what it is given."""

    def write(self, data: bytes, /) -> object: ...


@dataclass(frozen=True)
class ParamsPart:
    pool: str
    path: str
    size: int


@dataclass
class ParamsBlob:
    parts: list[ParamsPart]
    lead: int | None = None   # the bytes reserved before the blob for the epoch-controller blobs (prepare.params_lead;
    #                           None: no pool was planned past the params region, nothing to reserve)

    @property
    def size(self) -> int:
        return sum(align8(p.size) for p in self.parts)

    @property
    def region_size(self) -> int:
        """The bytes reserved for the params region, a bound: the blobs' lead prepare counted and the
        params blob (a split image's params file; what a pool moved past it must clear). The bytes
        written there are pack's Packed.params_size."""
        return (self.lead or 0) + self.size

    def save(self, path: str) -> None:
        """Paths are stored relative to the description's folder ("" is the current one)."""
        folder = os.path.dirname(path)
        parts = [{"pool": p.pool, "path": os.path.relpath(p.path, folder), "size": p.size} for p in self.parts]
        doc = {"version": VERSION, "size": self.size, "lead": self.lead, "parts": parts}
        write_text(path, json.dumps(doc, indent=1) + "\n")

    @classmethod
    def load(cls, path: str) -> Self:
        doc = read_json(path, "params description", lenient=False)
        if not isinstance(doc, dict) or doc.get("version") != VERSION:
            raise N6Error(path, f"not a params description of version {VERSION}", "rebuild: the prepare step writes it")
        lead = doc.get("lead")
        if lead is not None and (not isinstance(lead, int) or isinstance(lead, bool)):
            raise N6Error(path, f"lead {lead!r} is not a byte count", "rebuild: the prepare step writes it")
        folder = os.path.dirname(path)
        return cls([ParamsPart(p["pool"], os.path.normpath(os.path.join(folder, p["path"])), p["size"])
                    for p in doc["parts"]], lead)

    def verify(self) -> None:
        """Every part is there with the size the network was generated for (before any copy)."""
        for p in self.parts:
            try:
                size = os.path.getsize(p.path)
            except OSError:
                raise N6Error(p.path, f"missing: pool '{p.pool}' holds parameters", REGENERATE) from None
            if size != p.size:
                raise N6Error(p.path, f"is {size} bytes but pool '{p.pool}' uses {p.size} bytes", REGENERATE)

    def stream(self, out: Writer, crc: int = 0) -> int:
        """Write the blob to `out`; returns its CRC-32."""
        for p in self.parts:
            with open(p.path, "rb") as f:
                left = p.size
                while left and (chunk := f.read(min(CHUNK, left))):
                    out.write(chunk)
                    crc = zlib.crc32(chunk, crc)
                    left -= len(chunk)
            if left:
                raise N6Error(p.path, "shrank while it was being packed", "rebuild")
            pad = bytes(align8(p.size) - p.size)
            out.write(pad)
            crc = zlib.crc32(pad, crc)
        return crc
