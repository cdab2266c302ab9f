"""The twin's bus for everything that is not memory: the peripheral space at both security
aliases (non-secure 0x4000_0000.., secure 0x5000_0000..: one device answers both) and the private
peripheral bus (0xE000_0000..), served through unicorn's MMIO callbacks. Addresses no model
claims behave as plain registers; `untouched()` lists them for whoever writes the next model."""
from collections import Counter

PERIPHERALS = (0x4000_0000, 0x2000_0000)
SECURE_OFFSET = 0x1000_0000
PPB = (0xE000_0000, 0x10_0000)
GRANULE = 10                    # devices start and end on 1 KB boundaries



def lane(word_value, addr, size):
    """The `size` bytes at `addr` of the 32-bit register value holding them (a narrow read)."""
    return word_value >> (addr & 3) * 8 & ((1 << 8 * size) - 1)


def merge_lanes(old, value, addr, size):
    """A narrow write of `size` bytes at `addr` merged into the register's stored value `old`."""
    shift, mask = (addr & 3) * 8, (1 << 8 * size) - 1
    return old & ~(mask << shift) | (value & mask) << shift

class Bus:
    def __init__(self, uc):
        self._devices = {}      # 1 KB granule → device
        self.plain = {}         # address → value of the registers no model claims
        self.plain_accesses = Counter()
        self.trace = None       # trace(kind "r"/"w", address, value): every access, for whoever debugs a model
        for base, size in (PERIPHERALS, PPB):
            uc.mmio_map(base, size, self._read, base, self._write, base)

    def attach(self, device):
        for granule in range(device.base >> GRANULE, (device.base + device.size) >> GRANULE):
            if granule in self._devices:
                raise ValueError(f"{device.name} overlaps {self._devices[granule].name} at 0x{granule << GRANULE:08X}")
            self._devices[granule] = device
        return device

    @staticmethod
    def canonical(addr):
        """The non-secure address of a peripheral register (PPB addresses are their own)."""
        return addr - SECURE_OFFSET if 0x5000_0000 <= addr < 0x6000_0000 else addr

    def read(self, addr, size=4):
        addr = self.canonical(addr)
        word = addr & ~3
        dev = self._devices.get(word >> GRANULE)
        value = dev.read(word - dev.base) if dev else self._plain_read(word)
        if self.trace:
            self.trace("r", word, value)
        return lane(value, addr, size)

    def write(self, addr, value, size=4):
        addr = self.canonical(addr)
        word = addr & ~3
        dev = self._devices.get(word >> GRANULE)
        if size < 4:             # merge the lanes into the register as stored
            value = merge_lanes(dev.stored(word - dev.base) if dev else self.plain.get(word, 0), value, addr, size)
        if self.trace:
            self.trace("w", word, value & 0xFFFFFFFF)
        if dev:
            dev.write(word - dev.base, value & 0xFFFFFFFF)
        else:
            self.plain_accesses[word, "w"] += 1
            self.plain[word] = value & 0xFFFFFFFF

    def _plain_read(self, word):
        self.plain_accesses[word, "r"] += 1
        return self.plain.get(word, 0)

    def _read(self, uc, offset, size, base):
        return self.read(base + offset, size)

    def _write(self, uc, offset, size, value, base):
        self.write(base + offset, value, size)

    def untouched(self):
        """[(address, reads, writes)] of the registers no model claims, by address."""
        out = {}
        for (addr, kind), n in self.plain_accesses.items():
            out.setdefault(addr, [0, 0])[kind == "w"] += n
        return [(a, r, w) for a, (r, w) in sorted(out.items())]
