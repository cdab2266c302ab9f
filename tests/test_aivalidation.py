"""aiValidation link and message layers, byte for byte (deploy-protocol.md §4.3 worked example,
both header variants, 0xAA flow control, empty EOM packet), and the committed protobuf module
against what protoc makes of our .proto."""
import os
import shutil
import subprocess
import sys
import threading

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


# -- a run as ST's firmware serves it (aiValidation_ATON.c, protocol 3.1) ---------------------------
# Facts of ST's firmware: an ack (S_WAITING) with the first input's size; per input, the data, then
# the board's ack of the bytes it took (S_WAITING, S_PROCESSING after the last input), then the
# host's ack; with CONF_CONST_VALUE each input is one element; the model operator (64-bit counters,
# stack and heap -1); the outputs (S_PROCESSING, S_DONE with TENSOR_FLAG_LAST on the last one).

class StRunScript(threading.Thread):
    """The board side of one CMD_NETWORK_RUN, scripted from ST's firmware; records what it got."""

    def __init__(self, fd, inputs, outputs, const_value):
        super().__init__(daemon=True)
        self.link = Link(_FdPort(fd))
        self.inputs, self.outputs, self.const_value = inputs, outputs, const_value
        self.got, self.error = [], None

    def send(self, state, **payload):
        r = pb.respMsg(reqid=1, state=state)
        for k, v in payload.items():
            getattr(r, k).CopyFrom(v)
        self.link.board_send(r.SerializeToString())

    def receive(self, cls):
        m = cls()
        m.ParseFromString(self.link.board_receive(5.0))
        self.got.append(m)
        return m

    def run(self):
        try:
            self.receive(pb.reqMsg)
            self.send(pb.S_WAITING, ack=pb.ackMsg(param=self.inputs[0].nbytes, error=pb.E_NONE))
            for i in range(len(self.inputs)):
                data = self.receive(pb.aiDataMsg)
                last = i == len(self.inputs) - 1
                self.send(pb.S_PROCESSING if last else pb.S_WAITING,
                          ack=pb.ackMsg(param=len(data.datas), error=pb.E_NONE))
                self.receive(pb.ackMsg)
            self.send(pb.S_PROCESSING, op=pb.aiOperatorMsg(name="net", type=0, id=0, duration=1.0, counter_type=0,
                                                          counters=[0] * 10, stack_used=-1, heap_used=-1))
            for j, (desc, data) in enumerate(self.outputs):
                last = j == len(self.outputs) - 1
                t = pb.aiTensorMsg()
                desc.to_pb(t.desc)
                t.desc.flags = 2 | (256 if last else 0)
                t.data.CopyFrom(pb.aiDataMsg(type=0, size=len(data), addr=0, datas=data))
                self.send(pb.S_DONE if last else pb.S_PROCESSING, tensor=t)
        except Exception as e:        # reported by the test
            self.error = e


class _FdPort:
    def __init__(self, fd):
        self.fd, self.timeout = fd, None

    def read(self, n):
        import select
        r, _, _ = select.select([self.fd], [], [], self.timeout)
        return os.read(self.fd, n) if r else b""

    def write(self, data):
        os.write(self.fd, data)


@pytest.mark.parametrize("const_value", [False, True])
def test_two_input_run_follows_st_firmware_acks(const_value):
    from n6.aivalidation import Client, IO_ONLY
    from n6.aivalidation.client import Device
    from n6.aivalidation.messages import CONF_CONST_VALUE, ModelInfo
    ins = [TensorDesc("audio", "int8", (1, 40), 0.1, 0), TensorDesc("motion", "int16", (1, 24), 0.1, 0)]
    outs = [(TensorDesc("event", "int8", (1, 6)), bytes(range(6))), (TensorDesc("position", "int8", (1, 3)), b"abc")]
    master, slave = os.openpty()
    import tty
    tty.setraw(slave)
    board = StRunScript(master, ins, outs, const_value)
    board.start()
    client = Client.open(os.ttyname(slave))
    client.device = Device((3, 1), 1, 0, models=[ModelInfo("net", ins, [d for d, _ in outs], 0, 0, (1, 1, 1), "",
                                                          (1, 1, 1), 0, 0)])
    mode = IO_ONLY | (CONF_CONST_VALUE if const_value else 0)
    result = client.run("net", [bytes(range(40)), bytes(range(48))], mode=mode)
    board.join(5)
    client.close()
    assert board.error is None
    kinds = [type(m).__name__ for m in board.got]
    assert kinds == ["reqMsg", "aiDataMsg", "ackMsg", "aiDataMsg", "ackMsg"]      # the host acks each input
    assert board.got[0].param == mode
    sizes = [len(m.datas) for m in board.got if isinstance(m, pb.aiDataMsg)]
    assert sizes == ([1, 2] if const_value else [40, 48])                         # one element per input
    assert [data for _, data in result.outputs] == [d for _, d in outs]


def test_schema_facts_of_st_messages():
    """ST's stm32msg.proto 3.1, field by field: (number, type, required) of the fields a board and a
    host exchange; a schema that differs is not ST's on the wire."""
    from google.protobuf.descriptor import FieldDescriptor as F
    req, opt, rep = F.LABEL_REQUIRED, F.LABEL_OPTIONAL, F.LABEL_REPEATED
    u32, i32, u64, f32, s, b = F.TYPE_UINT32, F.TYPE_INT32, F.TYPE_UINT64, F.TYPE_FLOAT, F.TYPE_STRING, F.TYPE_BYTES
    facts = {
        "aiModelInfoMsg": {"name": (1, s, req), "rtid": (2, u32, req), "signature": (3, s, req),
                           "compile_datetime": (4, s, req), "runtime_version": (5, u32, req),
                           "tool_version": (6, u32, req), "n_macc": (7, u64, req), "n_nodes": (8, u32, req),
                           "n_inputs": (10, u32, req), "inputs": (11, F.TYPE_MESSAGE, rep),
                           "n_outputs": (12, u32, req), "outputs": (13, F.TYPE_MESSAGE, rep),
                           "n_activations": (14, u32, req), "activations": (15, F.TYPE_MESSAGE, rep),
                           "n_params": (16, u32, req), "params": (17, F.TYPE_MESSAGE, rep),
                           "runtime_desc": (20, s, req)},
        "aiOperatorMsg": {"name": (1, s, req), "type": (2, u32, req), "id": (3, u32, req), "duration": (4, f32, req),
                          "counter_type": (5, u32, req), "counters": (6, u32, rep), "stack_used": (7, i32, req),
                          "heap_used": (8, i32, req)},
        "aiTensorDescMsg": {"name": (1, s, req), "format": (2, u32, req), "size": (3, u32, req),
                            "n_dims": (4, u32, req), "dims": (5, u32, rep), "scale": (6, f32, req),
                            "zeropoint": (7, i32, req), "addr": (8, u32, req), "flags": (9, u32, req)},
        "aiDataMsg": {"type": (1, u32, req), "size": (2, u32, req), "addr": (3, u32, req), "datas": (4, b, req)},
        "sysinfoMsg": {"devid": (1, u32, req), "sclock": (2, u32, req), "hclock": (3, u32, req),
                       "cache": (4, u32, req), "com_param": (5, u32, req), "extra": (6, u32, rep)},
        "reqMsg": {"reqid": (1, u32, req), "cmd": (2, F.TYPE_ENUM, req), "param": (3, u32, req),
                   "name": (4, s, req), "opt": (5, u32, req)},
    }
    for msg, fields in facts.items():
        d = pb.DESCRIPTOR.message_types_by_name[msg]
        assert {f.name: (f.number, f.type, req if f.is_required else rep if f.is_repeated else opt)
                for f in d.fields} == fields, msg
    assert pb.aiTensorDescMsg.DESCRIPTOR.fields_by_name["n_dims"].default_value == 1
    assert (pb.P_RUN_MODE_PERF, pb.P_RUN_CONF_CONST_VALUE, pb.TENSOR_FLAG_NO_DATA, pb.OPERATOR_FLAG_POS) == \
        (8, 512, 512, 24)
    # an operator message as ST's firmware encodes it: every required field, stack and heap -1
    op = pb.aiOperatorMsg(name="", type=0x05000002, id=0x00010001, duration=0.5, counter_type=1 << 16,
                          counters=[1, 0, 2], stack_used=-1, heap_used=-1)
    assert op.SerializeToString().hex() == ("0a00" "1082808028" "18818004" "250000003f" "28808004"
                                            "300130003002"       # proto2: a repeated scalar is not packed
                                            "38ffffffffffffffffff01" "40ffffffffffffffffff01")
