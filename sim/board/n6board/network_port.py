"""The simulated board's serial port over the network, as a lab's exporter serves a board's UART
(ser2net): RFC 2217 (Telnet with the COM-PORT option), which pyserial opens as
`rfc2217://host:port`. One client at a time; the board's pty stays open between clients and
across the board's resets, as a real UART does."""
import contextlib
import socket
import threading
from collections.abc import Callable

import serial
import serial.rfc2217


class _Connection:
    """The client's socket, written whole message by whole message: by pyserial's PortManager
    (its Telnet answers) and by the thread passing on the board's bytes."""

    def __init__(self, sock):
        self.sock, self.lock = sock, threading.Lock()

    def write(self, data):
        with self.lock:
            self.sock.sendall(data)


class _Uart:
    """The pty as pyserial's PortManager drives a UART: a pty has no modem lines, so the lines
    read as a connected cable's and setting RTS, DTR or a break does nothing (the simulated
    board's UART has no flow control either); speed and framing go to the pty."""
    cts = dsr = cd = True
    ri = False

    def __init__(self, link):
        self.__dict__["link"] = link

    def __getattr__(self, name):
        return getattr(self.link, name)

    def __setattr__(self, name, value):
        if name not in ("rts", "dtr", "break_condition"):
            setattr(self.link, name, value)


def serve(device: str, host: str = "127.0.0.1", port: int = 0) -> tuple[str, Callable[[], None]]:
    """Serve the pty `device` on host:port (0: a free port) from a daemon thread; returns the
    URL a client opens and the call that stops serving (the listener, a client's connection and
    the pty closed, the thread ended)."""
    listener = socket.create_server((host, port))
    link = serial.serial_for_url(device, baudrate=921600, timeout=0.05)
    clients: list[socket.socket] = []       # the connected client's socket, while it is connected
    thread = threading.Thread(target=_accept, args=(listener, link, clients), daemon=True)
    thread.start()

    def close():
        for sock in [listener] + clients:   # wakes accept() and recv() in the thread
            with contextlib.suppress(OSError):  # a client gone meanwhile
                sock.shutdown(socket.SHUT_RDWR)
        thread.join()
        listener.close()
        link.close()
    return f"rfc2217://{host}:{listener.getsockname()[1]}", close


def _accept(listener, link, clients):
    while True:
        try:
            sock, _ = listener.accept()
        except OSError:                     # the listener shut: serving stops
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        clients.append(sock)
        connection = _Connection(sock)
        manager = serial.rfc2217.PortManager(_Uart(link), connection)
        done = threading.Event()
        to_client = threading.Thread(target=_board_to_client, args=(link, connection, manager, done), daemon=True)
        to_client.start()
        try:
            while True:
                data = sock.recv(4096)
                if not data:
                    break
                link.write(b"".join(manager.filter(data)))
        except OSError:
            pass
        done.set()
        to_client.join()
        clients.remove(sock)
        sock.close()


def _board_to_client(link, connection, manager, done):
    while not done.is_set():
        data = link.read(link.in_waiting or 1)
        if data:
            try:
                connection.write(b"".join(manager.escape(data)))
            except OSError:
                return
