"""The NOR flash as the CPU sees it through xSPI2's memory-mapped window. ST's validation firmware
sets the window up with a write command (page program) but never a write enable, so the NOR
ignores what the CPU writes there: such a write lives only in the D-cache, until the line is
invalidated (DCIMVAC, DCCIMVAC, or a set/way invalidation), after which the line reads the
flash's bytes again. ST's loader does write there: an absolute params pool in the flash (ST's flow
builds one) is a COPY descriptor whose destination is the image itself, followed by a
clean-and-invalidate of the range. The twin keeps each line's flash bytes at its first write and
puts them back at its invalidation; a set/way invalidation puts back every line."""
from unicorn import UC_HOOK_MEM_WRITE

LINE = 32                                        # the Cortex-M55 D-cache line
DCIMVAC, DCISW, DCCIMVAC, DCCISW = 0xF5C, 0xF60, 0xF70, 0xF74     # SCB offsets of the invalidations
BY_ADDRESS = {DCIMVAC, DCCIMVAC}
INVALIDATIONS = BY_ADDRESS | {DCISW, DCCISW}


class NorWindow:
    def __init__(self, uc, base, size):
        self.uc = uc
        self.flash_lines = {}                    # line address → the flash's bytes under the CPU's writes
        uc.hook_add(UC_HOOK_MEM_WRITE, self._on_write, begin=base, end=base + size - 1)

    def _on_write(self, uc, access, address, size, value, data):
        for line in range(address & ~(LINE - 1), address + size, LINE):
            if line not in self.flash_lines:
                self.flash_lines[line] = bytes(uc.mem_read(line, LINE))

    def invalidate(self, offset, value):
        """An SCB D-cache invalidation (`offset` among INVALIDATIONS) written with `value`."""
        lines = [value & ~(LINE - 1)] if offset in BY_ADDRESS else list(self.flash_lines)
        for line in lines:
            flash = self.flash_lines.pop(line, None)
            if flash is not None:
                self.uc.mem_write(line, flash)
