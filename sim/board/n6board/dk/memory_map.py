"""The STM32N6570-DK's memories as the twin maps them: each internal memory at its secure
address and at its non-secure alias (the same bytes, 0x1000_0000 lower), the xSPI2 NOR flash
holding what `scons flash` wrote to the simulated board, and the xSPI1 PSRAM. Peripheral space
and the private peripheral bus are not memory: the bus (bus.py) serves them."""
import ctypes
import mmap
from dataclasses import dataclass

from unicorn import UC_PROT_ALL

NON_SECURE_OFFSET = 0x1000_0000
NOR_BASE, NOR_SIZE = 0x7000_0000, 128 << 20       # MX66UW1G45G behind xSPI2, memory-mapped
ERASED = 0xFF
ERASED_SPAN = 32 << 20     # reads as erased (0xFF) at least this far: boot area, images and params slots


@dataclass(frozen=True)
class Memory:
    """One memory: `base` is its secure address; `aliased` memories also answer at base - 0x1000_0000."""
    name: str
    base: int
    size: int
    aliased: bool = True


DK_MEMORIES = (
    Memory("ITCM", 0x1000_0000, 256 << 10),
    Memory("DTCM", 0x3000_0000, 256 << 10),
    Memory("AXISRAM1-6, VENCRAM", 0x3400_0000, 0x42_0000),   # AXISRAM1/2 1 MB each, 3..6 448 KB each, VENCRAM
    Memory("AHBSRAM1-2", 0x3800_0000, 32 << 10),
    Memory("BKPSRAM", 0x3C00_0000, 8 << 10),
    Memory("xSPI2 NOR flash", NOR_BASE, NOR_SIZE, aliased=False),
    Memory("xSPI1 PSRAM", 0x9000_0000, 32 << 20, aliased=False),
)


class MemoryMap:
    """The memories of `memories` mapped into `uc`, each backed by one host buffer that its
    aliases share (a write through one address is read through the other)."""

    def __init__(self, uc, memories=DK_MEMORIES):
        self.memories = memories
        self._buffers = []
        for m in memories:
            buf = mmap.mmap(-1, m.size)
            ptr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
            uc.mem_map_ptr(m.base, m.size, UC_PROT_ALL, ptr)
            if m.aliased:
                uc.mem_map_ptr(m.base - NON_SECURE_OFFSET, m.size, UC_PROT_ALL, ptr)
            self._buffers.append((m, buf))

    def memory_at(self, addr):
        """(Memory, offset) holding `addr` (either alias), or (None, None)."""
        for m, _ in self._buffers:
            for base in (m.base, m.base - NON_SECURE_OFFSET) if m.aliased else (m.base,):
                if base <= addr < base + m.size:
                    return m, addr - base
        return None, None

    def load(self, addr, data):
        """Write `data` at `addr` (ELF segments, flash sectors) without going through the CPU."""
        m, off = self.memory_at(addr)
        if m is None or off + len(data) > m.size:
            raise ValueError(f"0x{addr:08X}+{len(data)} is outside the board's memories")
        buf = next(b for mm, b in self._buffers if mm is m)
        buf[off:off + len(data)] = data

    def fill(self, addr, size, byte):
        self.load(addr, bytes([byte]) * size)


@dataclass
class NorContent:
    """What the NOR flash holds, whatever the CPU wrote over its memory-mapped window since:
    the programmed sectors, erased (0xFF) up to `erased_end`, 0 beyond."""
    sectors: dict            # sector address → its bytes
    sector_size: int
    erased_end: int = NOR_BASE

    def read(self, address, n):
        """`n` bytes at `address`, within one sector."""
        sector = address - (address - NOR_BASE) % self.sector_size
        data = self.sectors.get(sector)
        if data is not None:
            return data[address - sector:address - sector + n]
        return bytes([ERASED if address < self.erased_end else 0]) * n


def load_nor_flash(memory, state_dir):
    """Put the simulated board's flash (the sectors the simulated programmer wrote, in
    `state_dir`) into the mapped NOR: written sectors as they are, the rest as erased (0xFF) up
    to ERASED_SPAN or the last written sector (the bytes beyond read 0: not worth 128 MB of
    host memory). Returns the NorContent loaded."""
    from programmer_sim.board_state import BoardState
    flash = BoardState(state_dir)
    sectors = flash.sectors()
    erased = max(ERASED_SPAN, sectors[-1] + flash.sector_size - NOR_BASE if sectors else 0)
    memory.fill(NOR_BASE, erased, ERASED)
    content = NorContent({sector: flash.read_sector(sector) for sector in sectors}, flash.sector_size,
                         NOR_BASE + erased)
    for sector, data in content.sectors.items():
        memory.load(sector, data)
    return content
