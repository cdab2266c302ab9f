"""Per-board records of the bytes last written and verified at each address, and the sector diff
against them. A record lives in `<root>/<probe serial>/<ADDRESS>.bin` (+ `.json`: size, sha256);
`pending.json` lists the sectors of a flash that did not finish: they always count as changed."""
import hashlib
import json
import os
from collections.abc import Collection, Iterable

from ..atomic import write_bytes, write_text
from ..paths import StrPath


class RecordStore:
    def __init__(self, root: StrPath) -> None:
        self.root = str(root)

    def _dir(self, serial: str) -> str:
        return os.path.join(self.root, "".join(c if c.isalnum() or c in "-_" else "_" for c in serial))

    def _paths(self, serial: str, address: int) -> tuple[str, str]:
        d = self._dir(serial)
        return os.path.join(d, f"{address:08X}.bin"), os.path.join(d, f"{address:08X}.json")

    def load(self, serial: str, address: int) -> tuple[bytes, None] | tuple[None, str]:
        """(bytes, None) or (None, why not usable)."""
        bin_path, meta_path = self._paths(serial, address)
        try:
            with open(meta_path, encoding="utf-8") as f:
                meta = json.load(f)
            with open(bin_path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None, "no record for this board"
        except (OSError, ValueError):
            return None, "damaged record"
        if not isinstance(meta, dict) or meta.get("size") != len(data) or \
                meta.get("sha256") != hashlib.sha256(data).hexdigest():
            return None, "damaged record"
        return data, None

    def save(self, serial: str, address: int, data: bytes, source: str) -> None:
        """Record `data` at `address`; records of other addresses it overwrote are dropped."""
        bin_path, meta_path = self._paths(serial, address)
        os.makedirs(os.path.dirname(bin_path), exist_ok=True)
        for name in os.listdir(os.path.dirname(bin_path)):
            if name.endswith(".bin") and len(name) == 12 and int(name[:8], 16) != address:
                other = int(name[:8], 16)
                if other < address + len(data) and address < other + os.path.getsize(
                        os.path.join(os.path.dirname(bin_path), name)):
                    for path in self._paths(serial, other):
                        os.unlink(path)
        write_bytes(bin_path, data)
        write_text(meta_path, json.dumps({"address": f"0x{address:08X}", "size": len(data), "source": source,
                                          "sha256": hashlib.sha256(data).hexdigest()}, indent=1) + "\n")

    def _pending_path(self, serial: str) -> str:
        return os.path.join(self._dir(serial), "pending.json")

    def pending(self, serial: str) -> set[int] | None:
        try:
            with open(self._pending_path(serial), encoding="utf-8") as f:
                return {int(s, 16) for s in json.load(f)["sectors"]}
        except FileNotFoundError:
            return set()
        except (OSError, ValueError, KeyError, TypeError):
            return None          # unreadable: every sector counts as changed

    def set_pending(self, serial: str, sectors: Collection[int]) -> None:
        path = self._pending_path(serial)
        if not sectors:
            if os.path.exists(path):
                os.unlink(path)
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_text(path, json.dumps({"sectors": [f"0x{s:08X}" for s in sorted(sectors)]}, indent=1) + "\n")


def sectors_of(address: int, size: int, sector_size: int) -> list[int]:
    first = address - address % sector_size
    return list(range(first, address + max(size, 1), sector_size))


def changed_sectors(address: int, new: bytes, old: bytes, sector_size: int,
                    pending: Collection[int] = frozenset()) -> list[int]:
    """Sectors of the image at `address` whose bytes differ from the record `old` (or are pending)."""
    out = []
    for s in sectors_of(address, len(new), sector_size):
        lo, hi = max(s, address) - address, min(s + sector_size, address + len(new)) - address
        if s in pending or new[lo:hi] != old[lo:hi]:
            out.append(s)
    return out


def runs(sectors: Iterable[int], sector_size: int) -> list[tuple[int, int]]:
    """Contiguous runs of sector addresses → [(first, end)]."""
    out: list[tuple[int, int]] = []
    for s in sorted(sectors):
        if out and out[-1][1] == s:
            out[-1] = (out[-1][0], s + sector_size)
        else:
            out.append((s, s + sector_size))
    return out
