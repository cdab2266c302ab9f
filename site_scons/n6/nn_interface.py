"""ST's LL_ATON C interface, as generated code, runtime, loader and firmware exchange it
(`ll_aton_NN_interface.h`, ST Edge AI 2.2 / LL_ATON 1.1.x): the data-type and channel-position
codes, the epoch-block flags, and the layouts of the epoch-block item and the buffer info as
arm-none-eabi-gcc lays them out for the Cortex-M55 (AAPCS, short enums), with and without
LL_ATON_EB_DBG_INFO. The one definition of these numbers: the simulated install's header is
checked against it, and against ST's header where a test bed is at hand; the simulated board
decodes images with it."""
import struct
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from functools import cached_property


class DataType(IntEnum):
    """Buffer_DataType_TypeDef."""
    UNDEFINED = 0
    FLOAT = 1
    UINT2 = 2
    INT2 = 3
    UINT4 = 4
    INT4 = 5
    UINT8 = 6
    INT8 = 7
    UINT16 = 8
    INT16 = 9
    INT32 = 10
    INT64 = 11
    STRING = 12
    BOOL = 13
    FLOAT16 = 14
    DOUBLE = 15
    UINT32 = 16
    UINT64 = 17
    COMPLEX64 = 18
    COMPLEX128 = 19
    BFLOAT16 = 20
    FXP = 100          # Neural-ART fixed point: Qm.Qn, signedness from Qunsigned


class ChPos(IntEnum):
    """Buffer_CHPos_TypeDef: where the channels are in `mem_shape`."""
    UNDEFINED = 0      # no channel axis
    FIRST = 1          # ... B C H W
    LAST = 2           # ... B H W C
    MIXED = 3          # ... B C/b H W b


class EpochFlag(IntFlag):
    """EpochBlock_Flags_t."""
    NONE = 0
    EPOCH_START = 1 << 0
    EPOCH_END = 1 << 1
    BLOB = 1 << 2
    LAST_EB = 1 << 3
    PURE_HW = 1 << 4
    PURE_SW = 1 << 5
    HYBRID = 1 << 6
    INTERNAL = 1 << 7
    BLOB_ENCRYPTED = 1 << 8


# numpy dtype names of the plain data types (FXP maps through nbits and Qunsigned)
NUMPY_DTYPES = {DataType.FLOAT: "float32", DataType.UINT8: "uint8", DataType.INT8: "int8",
                DataType.UINT16: "uint16", DataType.INT16: "int16", DataType.INT32: "int32",
                DataType.INT64: "int64", DataType.BOOL: "bool", DataType.FLOAT16: "float16",
                DataType.DOUBLE: "float64", DataType.UINT32: "uint32", DataType.UINT64: "uint64"}
DATA_TYPES = {v: k for k, v in NUMPY_DTYPES.items()}
ReadMemory = Callable[[int, int], bytes]   # read(address, n): n bytes of the target's memory

# C field types: (size = alignment, struct code). Enums are short on arm-none-eabi: every code
# above fits one unsigned byte.
_CTYPES = {"ptr": (4, "I"), "u8": (1, "B"), "i8": (1, "b"), "u16": (2, "H"), "i16": (2, "h"),
           "u32": (4, "I"), "u64": (8, "Q"), "enum": (1, "B")}


@dataclass(frozen=True)
class Layout:
    """A C struct: its fields in order with their C types; offsets and size by the AAPCS rules."""
    c_name: str
    fields: tuple[tuple[str, str], ...]   # ((field, ctype), ...)

    @cached_property
    def offsets(self) -> dict[str, int]:
        out, at = {}, 0
        for name, ctype in self.fields:
            size = _CTYPES[ctype][0]
            at = (at + size - 1) // size * size
            out[name] = at
            at += size
        return out

    @cached_property
    def align(self) -> int:
        return max(_CTYPES[c][0] for _, c in self.fields)

    @cached_property
    def size(self) -> int:
        name, ctype = self.fields[-1]
        end = self.offsets[name] + _CTYPES[ctype][0]
        return (end + self.align - 1) // self.align * self.align

    @cached_property
    def _format(self) -> str:
        fmt, at = "<", 0
        for name, ctype in self.fields:
            pad = self.offsets[name] - at
            fmt += f"{pad}x" * bool(pad) + _CTYPES[ctype][1]
            at = self.offsets[name] + _CTYPES[ctype][0]
        return fmt

    def unpack(self, raw: bytes) -> dict[str, int]:
        """{field: value} of one struct at the start of `raw`."""
        return dict(zip((n for n, _ in self.fields), struct.unpack_from(self._format, raw)))


EPOCH_BLOCK_FIELDS = (("start_epoch_block", "ptr"), ("end_epoch_block", "ptr"), ("blob_address", "ptr"),
                      ("wait_mask", "u32"), ("flags", "u16"))
EPOCH_BLOCK_DBG_FIELDS = (("epoch_num", "i16"), ("last_epoch_num", "i16"), ("in_streng_mask", "u32"),
                          ("out_streng_mask", "u32"), ("estimated_npu_cycles", "u64"),
                          ("estimated_tot_cycles", "u64"))
EPOCH_BLOCK = {False: Layout("EpochBlock_ItemTypeDef", EPOCH_BLOCK_FIELDS),
               True: Layout("EpochBlock_ItemTypeDef", EPOCH_BLOCK_FIELDS + EPOCH_BLOCK_DBG_FIELDS)}
BUFFER_INFO = Layout("LL_Buffer_InfoTypeDef", (
    ("name", "ptr"), ("addr_base", "ptr"), ("offset_start", "u32"), ("offset_end", "u32"), ("offset_limit", "u32"),
    ("is_user_allocated", "u8"), ("is_param", "u8"), ("epoch", "u16"), ("batch", "u32"), ("mem_shape", "ptr"),
    ("mem_ndims", "u16"), ("chpos", "enum"), ("type", "enum"), ("Qm", "i8"), ("Qn", "i8"), ("Qunsigned", "u8"),
    ("ndims", "u8"), ("nbits", "u8"), ("per_channel", "u8"), ("shape", "ptr"), ("scale", "ptr"),
    ("offset", "ptr")))
# NN_Instance_TypeDef: the network, then its execution state (only the head a debugger reads)
NN_INSTANCE = Layout("NN_Instance_TypeDef", (("network", "ptr"), ("current_epoch_block", "ptr"),
                                            ("first_epoch_block", "ptr"), ("next_epoch_block", "ptr")))
# NN_Interface_TypeDef: the network name, then one function pointer per entry, in this order
NN_INTERFACE_ENTRIES = ("ec_network_init", "ec_inference_init", "input_setter", "input_getter", "output_setter",
                        "output_getter", "epoch_block_items", "output_buffers_info", "input_buffers_info",
                        "internal_buffers_info")
ENCRYPTION_ENTRIES = ("blob_encryption_info", "weight_encryption_info")


def nn_interface(encryption_info: bool = False) -> Layout:
    """NN_Interface_TypeDef's layout: 3.x (LL_ATON 1.1.3) adds the two encryption-info getters,
    blob then weight, between the input and the internal buffer infos."""
    entries: tuple[str, ...] = NN_INTERFACE_ENTRIES
    if encryption_info:
        entries = entries[:-1] + ENCRYPTION_ENTRIES + entries[-1:]
    return Layout("NN_Interface_TypeDef", (("network_name", "ptr"),) + tuple((e, "ptr") for e in entries))


def struct_sizes_word(dbg_info: bool) -> int:
    """rt_ctx's `rt_c_struct_sizes`, which ST's loader compares with its own build: the epoch-block
    item's size in bits 15-8, the buffer info's in bits 7-0."""
    return EPOCH_BLOCK[dbg_info].size << 8 | BUFFER_INFO.size


@dataclass(frozen=True)
class EpochBlock:
    """One EpochBlock_ItemTypeDef as an image holds it (debug fields None without debug info)."""
    address: int
    start_epoch_block: int
    end_epoch_block: int
    blob_address: int
    wait_mask: int
    flags: EpochFlag
    epoch_num: int | None = None
    last_epoch_num: int | None = None
    in_streng_mask: int | None = None
    out_streng_mask: int | None = None
    estimated_npu_cycles: int | None = None
    estimated_tot_cycles: int | None = None

    @property
    def is_last(self) -> bool:
        return EpochFlag.LAST_EB in self.flags


def read_epoch_blocks(read: ReadMemory, address: int, dbg_info: bool, limit: int = 1 << 16) -> list[EpochBlock]:
    """The epoch blocks of the array at `address`, up to (not including) the one flagged last;
    read(addr, n) -> bytes reads the target's memory."""
    out: list[EpochBlock]
    layout, out = EPOCH_BLOCK[dbg_info], []
    for _ in range(limit):
        values = layout.unpack(read(address, layout.size))
        values["flags"] = EpochFlag(values["flags"])
        eb = EpochBlock(address, **values)   # type: ignore[arg-type]  # "flags" is made an EpochFlag above
        if eb.is_last:
            return out
        out.append(eb)
        address += layout.size
    raise ValueError(f"the epoch-block table has no last epoch block within {limit} items")


@dataclass(frozen=True)
class BufferInfo:
    """One LL_Buffer_InfoTypeDef with its arrays and name read."""
    name: str
    addr_base: int
    offset_start: int
    offset_end: int
    offset_limit: int
    is_user_allocated: int
    is_param: int
    epoch: int
    batch: int
    mem_shape: tuple[int, ...]
    chpos: ChPos
    type: DataType
    Qm: int
    Qn: int
    Qunsigned: int
    nbits: int
    per_channel: int
    shape: tuple[int, ...]
    scale: tuple[float, ...]   # () when the buffer has no scale (NULL: float data)
    offset: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return self.offset_end - self.offset_start

    @property
    def dtype(self) -> str | None:
        """numpy dtype name: plain types by code, FXP by its width and sign; None for the rest."""
        if self.type == DataType.FXP:
            return f"{'u' if self.Qunsigned else ''}int{self.nbits}" if self.nbits in (8, 16, 32) else None
        return NUMPY_DTYPES.get(self.type)

    @property
    def n_scales(self) -> int:
        """Entries of `scale`/`offset`: one per channel when quantised per channel (the first
        axis of `shape`, as ST writes parameter tensors), else one."""
        return self.shape[0] if self.per_channel and self.shape else 1


def read_buffer_infos(read: ReadMemory, c_string: Callable[[int], str], address: int,
                      limit: int = 1 << 16) -> list[BufferInfo]:
    """The buffer infos of the table at `address`, up to the entry whose name is NULL. The start
    address of a buffer is addr_base + offset_start (user-allocated buffers hold a pointer at
    addr_base instead, which is what the caller sees in `addr_base`)."""
    out: list[BufferInfo] = []
    for _ in range(limit if address else 0):      # a NULL table (no internal buffers): none
        v = BUFFER_INFO.unpack(read(address, BUFFER_INFO.size))
        if not v["name"]:
            return out
        mem_shape = struct.unpack(f"<{v['mem_ndims']}I", read(v["mem_shape"], 4 * v["mem_ndims"])) \
            if v["mem_shape"] and v["mem_ndims"] else ()
        shape = struct.unpack(f"<{v['ndims']}I", read(v["shape"], 4 * v["ndims"])) if v["shape"] and v["ndims"] else ()
        n = shape[0] if v["per_channel"] and shape else 1
        scale = struct.unpack(f"<{n}f", read(v["scale"], 4 * n)) if v["scale"] else ()
        offset = struct.unpack(f"<{n}h", read(v["offset"], 2 * n)) if v["offset"] else ()
        out.append(BufferInfo(c_string(v["name"]), v["addr_base"], v["offset_start"], v["offset_end"],
                              v["offset_limit"], v["is_user_allocated"], v["is_param"], v["epoch"], v["batch"],
                              mem_shape, ChPos(v["chpos"]), DataType(v["type"]), v["Qm"], v["Qn"], v["Qunsigned"],
                              v["nbits"], v["per_channel"], shape, scale, offset))
        address += BUFFER_INFO.size
    if not address:
        return out
    raise ValueError(f"the buffer table has no end within {limit} entries")
