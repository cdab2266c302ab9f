"""aiValidation link layer: fixed-size packets with a 2-byte (default) or legacy 1-byte header,
the 0xAA flow-control byte, length-delimited host messages and bare board messages
(deploy-protocol.md §4.3). Works on any pyserial-like port: `read(n)`, `write(b)`, `timeout`."""
import time
from dataclasses import dataclass
from typing import Protocol

from ..serial_link import DEFAULT_HEADER, HEADERS
PACKET_SIZE = 32            # payload bytes per packet until a USB board negotiates more
EOM = 0x80                  # end-of-message bit in the first header byte (board → host only)
SYNC_BYTE = 0xAA            # the board's "send the next packet"
LARGE_PACKET_SIZE = 4094    # largest payload of the 2-byte variant


class LinkTimeout(Exception):
    """Nothing (or not enough) arrived before the deadline."""


class LinkError(Exception):
    """Bytes arrived that are no packet of this variant."""


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_varint(buf: bytearray | bytes) -> tuple[int, int] | None:
    """(value, length) of the varint at the start of `buf`, or None when `buf` ends inside it."""
    value = 0
    for i, b in enumerate(buf[:10]):
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return value, i + 1
    if len(buf) >= 10:
        raise LinkError("varint longer than 10 bytes")
    return None


@dataclass
class Framing:
    """One header variant and the current payload size P; a packet is always header + P bytes."""
    header: str = DEFAULT_HEADER
    payload: int = PACKET_SIZE

    def __post_init__(self) -> None:
        if self.header not in HEADERS:
            raise ValueError(f"header variant {self.header!r}: expected one of {HEADERS}")
        if self.header == "1byte" and self.payload > 0x7F or self.payload > LARGE_PACKET_SIZE:
            raise ValueError(f"payload size {self.payload} too large for the {self.header} header")

    @property
    def header_size(self) -> int:
        return 2 if self.header == "2byte" else 1

    @property
    def packet_size(self) -> int:
        return self.header_size + self.payload

    def pack(self, chunk: bytes, eom: bool = False, pad: bytes = b"\0") -> bytes:
        """One packet: header (EOM bit, chunk length), the chunk, padding up to P."""
        n = len(chunk)
        if n > self.payload:
            raise ValueError(f"chunk of {n} bytes exceeds the payload size {self.payload}")
        if self.header == "2byte":
            head = bytes(((EOM if eom else 0) | (n >> 8) & 0x7F, n & 0xFF))
        else:
            head = bytes(((EOM if eom else 0) | n,))
        return head + bytes(chunk) + (pad * self.payload)[:self.payload - n]

    def unpack_header(self, head: bytes) -> tuple[bool, int]:
        """(eom, length) of a packet header; LinkError when the length cannot fit the payload."""
        if self.header == "2byte":
            eom, n = bool(head[0] & EOM), (head[0] & 0x7F) << 8 | head[1]
        else:
            eom, n = bool(head[0] & EOM), head[0] & 0x7F
        if n > self.payload:
            raise LinkError(f"packet header {bytes(head).hex(' ')} announces {n} bytes, more than the "
                            f"{self.payload}-byte payload")
        return eom, n

    def host_packets(self, message: bytes) -> list[bytes]:
        """A host message: varint length + message, cut into P-byte chunks, EOM never set."""
        buf = varint(len(message)) + bytes(message)
        return [self.pack(buf[i:i + self.payload]) for i in range(0, len(buf), self.payload)]

    def board_packets(self, message: bytes, pad: bytes = b"\0") -> list[bytes]:
        """A board message: bare, full packets without EOM, then one EOM packet with the rest
        (empty when the message is a multiple of P)."""
        message = bytes(message)
        full = len(message) // self.payload * self.payload
        packets = [self.pack(message[i:i + self.payload], pad=pad) for i in range(0, full, self.payload)]
        return packets + [self.pack(message[full:], eom=True, pad=pad)]


class Port(Protocol):
    """What a link needs of its port: pyserial's, or the simulated board's end of a pty."""
    timeout: float | None

    def read(self, size: int = ...) -> bytes: ...
    def write(self, data: bytes, /) -> int | None: ...
    def close(self) -> None: ...


READ_SLICE = 0.1           # s: a port's read timeout; a link looks at its own deadlines this often


def set_read_slice(port: Port) -> None:
    """Give `port` the read timeout READ_SLICE unless it has it already: pyserial 3.5's own RFC 2217
    client renegotiates the remote port's settings on every assignment (at least 0.1 s, waited for;
    labgrid's fork of it, pyserial-labgrid, does not)."""
    if port.timeout != READ_SLICE:
        port.timeout = READ_SLICE


class Link:
    """A port plus a framing; every read has a deadline."""

    def __init__(self, port: Port, framing: Framing | None = None) -> None:
        self.port = port
        self.framing = framing or Framing()

    def read_exact(self, n: int, timeout: float) -> bytes:
        """`n` bytes within `timeout` s, the deadline looked at after every READ_SLICE."""
        deadline = time.monotonic() + timeout
        set_read_slice(self.port)
        buf = bytearray(self.port.read(n))
        while len(buf) < n:
            if time.monotonic() >= deadline:
                raise LinkTimeout(f"{len(buf)} of {n} bytes within {timeout:g} s")
            buf += self.port.read(n - len(buf))
        return bytes(buf)

    # -- host side ------------------------------------------------------------------------------
    def send_message(self, message: bytes, ack_timeout: float = 5.0) -> None:
        """Send a host message; before every packet after the first wait for the board's byte."""
        for i, packet in enumerate(self.framing.host_packets(message)):
            if i:
                self.read_exact(1, ack_timeout)
            self.port.write(packet)
        flush = getattr(self.port, "flush", None)
        if flush:
            flush()

    def receive_message(self, timeout: float) -> bytes:
        """Read packets until the EOM packet; returns the bare message bytes."""
        deadline = time.monotonic() + timeout
        out = bytearray()
        while True:
            packet = self.read_exact(self.framing.packet_size, max(deadline - time.monotonic(), 0.001))
            eom, n = self.framing.unpack_header(packet)
            if not eom and n != self.framing.payload:
                header = packet[:self.framing.header_size].hex(' ')
                raise LinkError(f"non-final packet with {n} bytes (header {header})")
            out += packet[self.framing.header_size:self.framing.header_size + n]
            if eom:
                return bytes(out)

    # -- board side -----------------------------------------------------------------------------
    def board_receive(self, timeout: float | None = None) -> bytes:
        """Decode one delimited host message, writing 0xAA each time another packet is needed;
        the rest of the last packet is dropped. `timeout=None` waits for the first packet forever."""
        packet = self._board_packet(timeout)
        data = bytearray(packet)
        while True:
            head = read_varint(data)
            if head is not None and len(data) >= head[0] + head[1]:
                return bytes(data[head[1]:head[1] + head[0]])
            self.port.write(bytes((SYNC_BYTE,)))
            data += self._board_packet(5.0)

    def _board_packet(self, timeout: float | None) -> bytes:
        h = self.framing.header_size
        if timeout is None:
            first = b""
            set_read_slice(self.port)
            while not first:
                first = self.port.read(1)
            rest = self.read_exact(self.framing.packet_size - 1, 5.0)
            packet = first + rest
        else:
            packet = self.read_exact(self.framing.packet_size, timeout)
        _, n = self.framing.unpack_header(packet)
        return packet[h:h + n]

    def board_send(self, message: bytes, pad: bytes = b"\0") -> None:
        for packet in self.framing.board_packets(message, pad):
            self.port.write(packet)
        flush = getattr(self.port, "flush", None)
        if flush:
            flush()
