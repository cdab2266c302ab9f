"""aiValidation link and message layers, byte for byte (deploy-protocol.md §4.3 worked example,
both header variants, 0xAA flow control, empty EOM packet), and the committed protobuf module
against what protoc makes of our .proto."""
import os
import shutil
import subprocess
import sys

import pytest

from n6.aivalidation import Framing, Link, LinkError, LinkTimeout
from n6.aivalidation import n6_aivalidation_pb2 as pb
from n6.aivalidation.messages import TensorDesc, format_dtype, tensor_format

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "site_scons", "n6", "aivalidation")


class FakePort:
    """A scripted serial port: `rx` is what the other side sent; `reads_at` records how many
    bytes had been written when each read happened."""

    def __init__(self, rx=b""):
        self.rx, self.tx, self.timeout, self.reads_at = bytearray(rx), bytearray(), None, []

    def read(self, n):
        self.reads_at.append(len(self.tx))
        data = bytes(self.rx[:n])
        del self.rx[:n]
        return data

    def write(self, data):
        self.tx += data


SYNC_REQ = pb.reqMsg(reqid=1, cmd=pb.CMD_SYNC, param=0, name="", opt=0)


def sync_resp():
    r = pb.respMsg(reqid=1, state=pb.S_IDLE)
    r.sync.version, r.sync.capability, r.sync.rtid = 0x301, 1, 0x10004
    return r


def test_worked_example_2byte_host_request():
    port = FakePort()
    Link(port).send_message(SYNC_REQ.SerializeToString())
    assert bytes(port.tx) == bytes.fromhex("000b 0a08011000180022002800") + bytes(21)
    assert len(port.tx) == 34 and port.reads_at == []      # one packet: no wait for 0xAA


def test_worked_example_board_reply_and_host_ack():
    port = FakePort()
    Link(port).board_send(sync_resp().SerializeToString())
    assert bytes(port.tx[:17]) == bytes.fromhex("800f 080110005209088106200128848004")
    assert len(port.tx) == 34
    port = FakePort()
    Link(port).send_message(pb.ackMsg(param=0, error=pb.E_NONE).SerializeToString())
    assert bytes(port.tx) == bytes.fromhex("0005 0408001000") + bytes(27)


def test_worked_example_1byte_variant():
    port = FakePort()
    Link(port, Framing("1byte")).send_message(SYNC_REQ.SerializeToString())
    assert bytes(port.tx) == bytes.fromhex("0b 0a08011000180022002800") + bytes(21)
    assert len(port.tx) == 33
    port = FakePort()
    Link(port, Framing("1byte")).board_send(sync_resp().SerializeToString())
    assert bytes(port.tx[:16]) == bytes.fromhex("8f 080110005209088106200128848004") and len(port.tx) == 33


@pytest.mark.parametrize("header,hsize", [("2byte", 2), ("1byte", 1)])
def test_multi_packet_host_message_waits_for_0xaa_before_each_later_packet(header, hsize):
    data = pb.aiDataMsg(type=0, size=192, addr=0, datas=bytes(range(192)))
    raw = data.SerializeToString()
    assert len(raw) == 202                                   # §4.3 sizing example
    port = FakePort(b"\xAA" * 6)
    Link(port, Framing(header)).send_message(raw)
    size = hsize + 32
    assert len(port.tx) == 7 * size                          # 6 full packets + one of 12 bytes
    assert port.reads_at == [size * k for k in range(1, 7)]  # a 0xAA read before packets 2..7
    assert port.tx[:hsize] == (b"\x00\x20" if hsize == 2 else b"\x20")
    last = port.tx[6 * size:]
    assert last[:hsize] == (b"\x00\x0c" if hsize == 2 else b"\x0c") and last[hsize + 12:] == bytes(20)
    assert port.tx[hsize:hsize + 2] == b"\xca\x01"           # varint 202


def test_host_stops_when_the_board_does_not_ack_a_packet():
    port = FakePort()
    link = Link(port)
    with pytest.raises(LinkTimeout):
        link.send_message(bytes(100), ack_timeout=0.05)
    assert len(port.tx) == 34                                # the first packet only


@pytest.mark.parametrize("header", ["2byte", "1byte"])
def test_board_message_of_exact_packet_multiple_ends_with_an_empty_eom_packet(header):
    f = Framing(header)
    packets = f.board_packets(bytes(range(64)))
    assert len(packets) == 3
    assert packets[0][:f.header_size] == (b"\x00\x20" if header == "2byte" else b"\x20")
    assert packets[2][:f.header_size] == (b"\x80\x00" if header == "2byte" else b"\x80")
    port = FakePort(b"".join(packets))
    assert Link(port, f).receive_message(1.0) == bytes(range(64))
    # 40 bytes: one full packet, then an EOM packet of 8 (the rest of its slot is padding)
    port = FakePort(b"".join(f.board_packets(bytes(range(40)), pad=b"\xEE")))
    assert Link(port, f).receive_message(1.0) == bytes(range(40))


@pytest.mark.parametrize("header", ["2byte", "1byte"])
def test_board_decodes_delimited_messages_with_flow_control(header):
    f = Framing(header)
    msg = bytes(range(100))
    second = pb.ackMsg(param=7, error=pb.E_NONE).SerializeToString()
    port = FakePort(b"".join(f.host_packets(msg)) + b"".join(f.host_packets(second)))
    link = Link(port, f)
    assert link.board_receive(1.0) == msg
    assert bytes(port.tx) == b"\xAA" * 3                    # 102 bytes = 4 packets: 3 sync bytes
    assert link.board_receive(1.0) == second


def test_headers_that_do_not_fit_are_link_errors():
    with pytest.raises(LinkError):
        Framing("2byte").unpack_header(b"\x00\x21")
    with pytest.raises(LinkError):
        Framing("1byte").unpack_header(b"\x7f")
    # a 2-byte board talking to a 1-byte host: the header `80 0f` reads as 0 bytes + EOM, then a
    # payload byte 0x0f ... the message cannot be what was sent
    port = FakePort(b"".join(Framing("2byte").board_packets(sync_resp().SerializeToString())))
    got = Link(port, Framing("1byte")).receive_message(1.0)
    assert got == b""   # the first header already reads as an empty end of message


def test_reads_time_out():
    with pytest.raises(LinkTimeout):
        Link(FakePort(b"\x00\x05abc")).receive_message(0.05)


def test_tensor_formats():
    assert tensor_format("int8") == 0x840440 == 8651840
    assert tensor_format("uint8") == 0x040440 == 263232
    assert tensor_format("int32") == 0x841040
    assert tensor_format("float32") == 0x821040 == 8523840
    for name in ("int8", "uint8", "int16", "int32", "float32"):
        assert format_dtype(tensor_format(name)) == name
    d = TensorDesc("in", "int8", (1, 49, 10, 1), 0.2, -5, 0x342E0000, 1025)
    m = d.to_pb(pb.aiTensorDescMsg())
    assert (m.size, m.n_dims, list(m.dims), m.flags) == (490, 4, [1, 49, 10, 1], 1025)
    assert TensorDesc.from_pb(m).shape == (1, 49, 10, 1) and TensorDesc.from_pb(m).nbytes == 490


def test_generated_module_is_what_protoc_makes_of_the_proto(tmp_path):
    shutil.copy(os.path.join(HERE, "n6_aivalidation.proto"), tmp_path)
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp_path}", f"--python_out={tmp_path}",
                    "n6_aivalidation.proto"], check=True, cwd=tmp_path)
    with open(os.path.join(HERE, "n6_aivalidation_pb2.py")) as a, open(tmp_path / "n6_aivalidation_pb2.py") as b:
        assert a.read() == b.read()


def test_a_port_whose_other_side_vanished_is_a_lost_connection():
    """A flush (tcdrain) on a pty whose board end closed raises termios.error, not an OSError."""
    termios = pytest.importorskip("termios")
    from n6.aivalidation.client import BoardError, Client

    class VanishedPort(FakePort):
        def flush(self):
            raise termios.error(5, "Input/output error")
    with pytest.raises(BoardError, match=r"board: connection lost \(Input/output error\)"):
        Client(VanishedPort(), name="board").send(SYNC_REQ, "sync")
