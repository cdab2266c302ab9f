"""The multi-model header of ST Edge AI 3.x ("MREL" at 0x70FFF000): magic, number of models,
flags, then (network address, params address) per model, little-endian words, as ST's 3.x
st_load_and_run.py writes it and its validation firmware reads it. The flags as that script sets
them: XIP for an XIP install, EXT_EXEC when the models' exec RAM is above the internal exec RAM
(the firmware then installs them in PSRAM), CLEAR and NO_OVERLAY on request."""
import struct
from collections.abc import Iterable, Sequence

MAGIC = 0x4C45524D      # "MREL"
MAX_MODELS = 4
FLAG_XIP, FLAG_EXT_EXEC, FLAG_CLEAR, FLAG_NO_OVERLAY = 1, 2, 4, 8
EXEC_ALIGN = 32         # the firmware rounds each model's exec RAM up to 32 bytes


def flags_for(flags: int, exec_sizes: Iterable[int], exec_ram: int) -> int:
    """`flags` (XIP, CLEAR, NO_OVERLAY: the install the build chose) with EXT_EXEC set as ST's
    script sets it: when the exec RAM the models need (each one's XIP or COPY size, rounded as the
    firmware rounds it; the largest, or their sum without overlay) is above `exec_ram`."""
    need = [-(-size // EXEC_ALIGN) * EXEC_ALIGN for size in exec_sizes]
    total = sum(need) if flags & FLAG_NO_OVERLAY else max(need, default=0)
    return flags & ~FLAG_EXT_EXEC | (FLAG_EXT_EXEC if total > exec_ram else 0)


def build(pairs: Sequence[tuple[int, ...]], flags: int) -> bytes:
    """pairs: [(network_addr, params_addr or 0 when the params are inside the image)]."""
    if not 1 <= len(pairs) <= MAX_MODELS:
        raise ValueError(f"{len(pairs)} models: the multi-model header holds 1 to {MAX_MODELS}")
    return struct.pack(f"<3I{2 * len(pairs)}I", MAGIC, len(pairs), flags, *[a for pair in pairs for a in pair])


def parse(data: bytes) -> tuple[int, list[tuple[int, int]]] | None:
    magic, n, flags = struct.unpack_from("<3I", data)
    if magic != MAGIC or not 1 <= n <= MAX_MODELS:
        return None
    words = struct.unpack_from(f"<{2 * n}I", data, 12)
    return flags, list(zip(words[::2], words[1::2]))
