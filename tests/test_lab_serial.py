"""A board's serial port over the network, as a lab serves it (RFC 2217: the simulated board's
sim/board/n6board/network_port.py), with the host's client (n6.aivalidation): every byte value
crosses it both ways, and a session renegotiates the port's settings only when it opens, also with
pyserial's own RFC 2217 client, which assigning a timeout makes renegotiate."""
import os
import threading
import tty

import pytest
import serial
import serial.rfc2217
import serial.urlhandler.protocol_rfc2217

from n6.aivalidation.client import Client
from n6.aivalidation.framing import Framing, Link, LinkTimeout
from n6board import network_port
from n6board.server import FdPort

# messages a board and its host exchange: every byte value, IAC (0xFF) alone, doubled and starting
# what Telnet would read as commands (SB ... SE, WILL, DO), across packet boundaries
MESSAGES = [bytes(range(256)) * 2, b"\xff" * 97, bytes([0xFF, 0xFA, 0x2C, 0x01, 0xFF, 0xF0]) * 11,
            b"\xff\xff\xfb\x01\xff\xfd\x03", b"\xaa\xff" * 40, bytes(range(255, -1, -1))]


class PyserialRfc2217(serial.rfc2217.Serial):
    """pyserial 3.5's own RFC 2217 client, which a fresh install of requirements.txt leaves (its
    files over those of labgrid's fork, pyserial-labgrid): assigning the timeout of an open port
    renegotiates the remote port's settings (SerialBase's setter, which the fork overrides).
    Counts the renegotiations."""
    timeout = serial.SerialBase.timeout
    renegotiations = 0

    def _reconfigure_port(self):
        self.renegotiations += 1
        super()._reconfigure_port()


@pytest.fixture
def board_url():
    """The URL of a board's port served over RFC 2217; the board sends every message back."""
    master, slave = os.openpty()
    tty.setraw(slave)
    tty.setraw(master)
    url, close = network_port.serve(os.ttyname(slave))
    board, stop = Link(FdPort(master), Framing()), threading.Event()

    def echo():
        while not stop.is_set():
            try:
                board.board_send(board.board_receive(0.2))
            except LinkTimeout:
                pass

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()
    yield url
    stop.set()
    thread.join()
    close()
    os.close(slave)
    os.close(master)


@pytest.mark.parametrize("client_class", [serial.rfc2217.Serial, PyserialRfc2217],
                         ids=["installed", "pyserial's own"])
def test_every_byte_value_crosses_the_rfc2217_port_both_ways(board_url, client_class, monkeypatch):
    monkeypatch.setattr(serial.urlhandler.protocol_rfc2217, "Serial", client_class)
    with Client.open(board_url) as client:
        for message in MESSAGES:
            client.link.send_message(message)
            assert client.link.receive_message(5.0) == message


def test_a_session_renegotiates_the_rfc2217_port_settings_only_when_it_opens(board_url, monkeypatch):
    """Assigning an open port's timeout makes pyserial's own client renegotiate the port's settings
    (at least 0.1 s): a session assigns it once, when it opens, not on every read of a packet."""
    monkeypatch.setattr(serial.urlhandler.protocol_rfc2217, "Serial", PyserialRfc2217)
    with Client.open(board_url) as client:
        for message in MESSAGES:
            client.link.send_message(message)
            client.link.receive_message(5.0)
        assert client.link.port.renegotiations == 1
