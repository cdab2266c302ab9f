"""USART1 (0x4200_1000), the ST-LINK virtual COM port the validation firmware talks over, wired to
the host link (the simulated board's pty). Register facts (STM32 USART with FIFO):
  CR1 0x00 (UE 0, RE 2, TE 3, RXNEIE 5, TCIE 6, TXEIE 7, FIFOEN 29), ISR 0x1C, ICR 0x20,
  RQR 0x18 (RXFRQ 3 drops received data), RDR 0x24 (pops a host byte), TDR 0x28 (sends one);
  ISR: RXNE 5 while host bytes wait, TC 6 and TXE 7 always (the wire never backs up), TXFE 23,
  TEACK 21 / REACK 22 follow TE / RE of an enabled USART.
The interrupt (IRQ 159) is asserted while an enabled source holds.

Deterministic time: host bytes become visible only where the firmware waits for them, never at a
moment the host's timing picks. Inside the firmware's receive routine (`receiving()`: ST's
firmware polls ISR in HAL_UART_Receive) an ISR read with nothing received is a wait for the
host's next byte: the board takes what the host has sent right there, blocking until it sends
something, so the read costs the same emulated cycles whether the byte was already there or
came later (a host that sends its next message before the board asks for it, as ST's client
does between two input tensors, no longer shifts the inference by the polls it would wait).
Elsewhere a firmware that reads ISR IDLE_POLLS times with no byte sent or received is waiting
for the host (a point its own code decides): the USART ends the slice of emulation, and between
slices (`poll_host`) the board takes what the host has sent, blocking the same way. Emulated time
stands still meanwhile, so the cycles of a session depend only on the firmware and the bytes.
The firmware's own timeouts do not run while the host is silent. While booting (`block_for_host`
False) nothing blocks: no host is connected yet. A firmware driven by the RX interrupt instead
takes bytes at slice boundaries (there host timing shows)."""
from .device import Device

CR1, RQR, ISR, ICR, RDR, TDR = 0x00, 0x18, 0x1C, 0x20, 0x24, 0x28
UE, RE, TE, RXNEIE, TCIE, TXEIE, FIFOEN = 1, 1 << 2, 1 << 3, 1 << 5, 1 << 6, 1 << 7, 1 << 29
RXNE, TC, TXE, TEACK, REACK, TXFE = 1 << 5, 1 << 6, 1 << 7, 1 << 21, 1 << 22, 1 << 23
RXFRQ = 1 << 3
USART1_IRQ = 159
FIFO_DEPTH = 8
IDLE_POLLS = 64
FLUSH_AT = 4096


class Usart(Device):
    name = "USART1"
    size = 0x400

    def __init__(self, link, irq, end_slice, receiving=lambda: False, base=0x4200_1000):
        super().__init__(base)
        self.link = link
        self.irq = irq                      # irq(asserted): the interrupt line
        self.end_slice = end_slice          # ask the core to return to its loop soon
        self.receiving = receiving          # the access comes from the firmware's receive routine
        self.rx = bytearray()
        self.tx = bytearray()
        self.sent = bytearray()             # everything the firmware sent (boot banner checks)
        self.empty_polls = 0
        self.block_for_host = False         # a waiting firmware blocks until the host sends (serving)

    # -- host side -------------------------------------------------------------------------------
    @property
    def waiting_for_host(self):
        return not self.rx and self.empty_polls >= IDLE_POLLS

    def poll_host(self):
        """Between slices: flush what the firmware sent; where it waits for the host, take what
        the host sent (see the module's docstring)."""
        self.flush()
        if self.waiting_for_host:
            self._take(self.link.wait_for_bytes() if self.block_for_host else self.link.receive())
        elif self.interrupt_enabled():
            self._take(self.link.receive())

    def wait_for_host(self):
        """The firmware waits for the host (in its receive routine, or asleep with nothing timed
        ahead): only host bytes can go on."""
        self.flush()
        self._take(self.link.wait_for_bytes() if self.block_for_host else self.link.receive())

    def _take(self, data):
        if data:
            self.rx += data
            self.empty_polls = 0
            self._update_irq()

    def flush(self):
        if self.tx:
            self.link.send(bytes(self.tx))
            self.tx.clear()

    # -- registers -------------------------------------------------------------------------------
    def read(self, offset):
        if offset == ISR:
            if not self.rx and self.block_for_host and self.receiving():
                self.wait_for_host()
            if not self.rx:
                self._idle()
            return self._isr()
        if offset == RDR:
            if not self.rx:
                return 0
            byte = self.rx.pop(0)
            self._update_irq()
            return byte
        return super().read(offset)

    def write(self, offset, value):
        if offset == TDR:
            self.tx.append(value & 0xFF)
            self.sent.append(value & 0xFF)
            self.empty_polls = 0
            if len(self.tx) >= FLUSH_AT:
                self.flush()
            return
        if offset == RQR:
            if value & RXFRQ:
                del self.rx[:FIFO_DEPTH if self.stored(CR1) & FIFOEN else 1]
            return
        if offset == ICR:
            return
        super().write(offset, value)
        if offset == CR1:
            self._update_irq()

    def interrupt_enabled(self):
        """Host bytes would raise the interrupt (RXNEIE of an enabled USART)."""
        cr1 = self.stored(CR1)
        return bool(cr1 & UE and cr1 & RXNEIE)

    def _isr(self):
        cr1 = self.stored(CR1)
        value = TC | TXE | TXFE | (RXNE if self.rx else 0)
        if cr1 & UE:
            value |= (TEACK if cr1 & TE else 0) | (REACK if cr1 & RE else 0)
        return value

    def _idle(self):
        """An ISR read with nothing received: after IDLE_POLLS of them, let the board wait."""
        self.flush()
        self.empty_polls += 1
        if self.empty_polls >= IDLE_POLLS:
            self.end_slice()

    def _update_irq(self):
        cr1, isr = self.stored(CR1), self._isr()
        self.irq(bool(cr1 & UE and (cr1 & RXNEIE and isr & RXNE or cr1 & TCIE and isr & TC or
                                    cr1 & TXEIE and isr & TXE)))
