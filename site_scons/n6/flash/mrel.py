"""The multi-model header of ST Edge AI 3.x ("MREL" at 0x70FFF000): magic, number of models,
flags, then (network address, params address) per model. Field order from ST's 3.x firmware
sources; the exact bytes of ST's own header_copy.bin are not public (unverified)."""
import struct

MAGIC = 0x4C45524D      # "MREL"
MAX_MODELS = 4
FLAG_XIP, FLAG_EXT_EXEC, FLAG_CLEAR, FLAG_NO_OVERLAY = 1, 2, 4, 8


def build(pairs, flags):
    """pairs: [(network_addr, params_addr or 0 when the params are inside the image)]."""
    if not 1 <= len(pairs) <= MAX_MODELS:
        raise ValueError(f"{len(pairs)} models: the multi-model header holds 1 to {MAX_MODELS}")
    return struct.pack(f"<3I{2 * len(pairs)}I", MAGIC, len(pairs), flags, *[a for pair in pairs for a in pair])


def parse(data):
    magic, n, flags = struct.unpack_from("<3I", data)
    if magic != MAGIC or not 1 <= n <= MAX_MODELS:
        return None
    words = struct.unpack_from(f"<{2 * n}I", data, 12)
    return flags, list(zip(words[::2], words[1::2]))
