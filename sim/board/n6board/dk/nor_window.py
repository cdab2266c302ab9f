"""The NOR flash as the CPU sees it through xSPI2's memory-mapped window. ST's validation firmware
sets the window up with a write command (page program) but never a write enable, so the NOR
ignores what the CPU writes there: such a write lives only in the D-cache, until the line is
invalidated, after which the line reads the flash's bytes again. ST's loader does write there: an
absolute params pool in the flash (ST's flow builds one) is a COPY descriptor whose destination
is the image itself, followed by a clean-and-invalidate of the range by address.

The twin lets the CPU's writes land in the mapped NOR (the cache's part) and puts the flash's
bytes back at each invalidation by address (DCIMVAC, DCCIMVAC) of a line of the window.
Invalidations by set/way do not restore the window: they name no address, and tracking every
write to it would cost every store of the firmware (a unicorn write hook takes them all off the
fast path: 18.0 s of host CPU per BlazeFace inference instead of 12.2 s)."""

LINE = 32                                        # the Cortex-M55 D-cache line
DCIMVAC, DCCIMVAC = 0xF5C, 0xF70                 # SCB offsets of the invalidations by address
INVALIDATIONS = (DCIMVAC, DCCIMVAC)


class NorWindow:
    """`flash(address, n)`: the bytes the NOR holds (memory_map.NorContent.read)."""

    def __init__(self, uc, flash, base, size):
        self.uc, self.flash, self.base, self.size = uc, flash, base, size

    def invalidate(self, offset, value):
        """An SCB D-cache invalidation by address (`offset` among INVALIDATIONS) of `value`."""
        line = value & ~(LINE - 1)
        if self.base <= line < self.base + self.size:
            flash = self.flash(line, LINE)
            if bytes(self.uc.mem_read(line, LINE)) != flash:
                self.uc.mem_write(line, flash)
