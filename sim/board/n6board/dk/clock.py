"""Deterministic time for the twin: one cycle per executed instruction (the stated model of the
simulated board), counted natively per translated block, plus the cycles a WFI/WFE sleeps. Timed
events (SysTick) are scheduled in cycles; the emulation stops when the next one is due. Nothing
depends on the host's wall clock, so a run is the same every time for the same host bytes."""
import heapq
import itertools

from ..blockcount import BlockCounter
from ..emulator import thumb_instructions


class CycleClock:
    def __init__(self, uc):
        self.uc = uc
        self.counter = BlockCounter(uc)
        self.counter.clock(self._insns_of, self._due)
        self.slept = 0                   # cycles spent in WFI/WFE, not executing
        self.due_stop = False            # the emulation was stopped for a due event
        self._soon = False               # stop at the next block (stop_soon)
        self._events = []                # heap of (cycle, sequence, callback)
        self._sequence = itertools.count()

    def stop_soon(self):
        """Stop the emulation at the start of the next translated block. (unicorn's emu_stop
        from a memory callback would re-execute the access on resume; a block boundary is clean.)"""
        self._soon = True
        self._arm()

    @property
    def instructions(self):
        return self.counter.total

    def now(self):
        """The current cycle."""
        return self.counter.total + self.slept

    def at(self, cycle, callback):
        """Call `callback()` once the clock reaches `cycle`; returns a handle for `cancel`."""
        entry = [cycle, next(self._sequence), callback]
        heapq.heappush(self._events, entry)
        self._arm()
        return entry

    @staticmethod
    def cancel(handle):
        handle[2] = None

    def next_event(self):
        """The cycle of the next pending event, or None."""
        while self._events and self._events[0][2] is None:
            heapq.heappop(self._events)
        return self._events[0][0] if self._events else None

    def sleep_until_next_event(self):
        """Advance to the next event without executing (WFI/WFE with nothing pending): False when
        no event is scheduled (the core would sleep forever)."""
        cycle = self.next_event()
        if cycle is None:
            return False
        self.slept += max(0, cycle - self.now())
        return True

    def sleep(self, cycles):
        """Let `cycles` pass without executing (a modelled wait)."""
        self.slept += cycles
        self._arm()

    def run_due(self):
        """Call the callbacks of every event due by now, in time order."""
        while True:
            cycle = self.next_event()
            if cycle is None or cycle > self.now():
                break
            callback = heapq.heappop(self._events)[2]
            callback()
        self.due_stop = self._soon = False
        self._arm()

    def _arm(self):
        cycle = self.next_event()
        deadline = 2 ** 64 - 1 if cycle is None else max(0, cycle - self.slept)
        self.counter.set_deadline(min(deadline, self.counter.total) if self._soon else deadline)

    def _insns_of(self, address, size):
        return thumb_instructions(bytes(self.uc.mem_read(address, size)))

    def _due(self):
        self.due_stop = True
        self.uc.emu_stop()
