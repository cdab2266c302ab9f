"""aiValidation link framing (n6.aivalidation.framing): both sides of every size limit and the
varint's bounds, byte for byte. Written against the survivors of tools/mutate.py (target
`aivalidation`): each test fails on one of those mutants."""
import pytest

from n6.aivalidation import Framing, Link, LinkError
from n6.aivalidation.framing import read_varint, varint
from test_aivalidation import FakePort


@pytest.mark.parametrize("header, largest", [("2byte", 4094), ("1byte", 0x7F)])
def test_payload_size_limits(header, largest):
    assert Framing(header, largest).packet_size == largest + (2 if header == "2byte" else 1)
    with pytest.raises(ValueError, match="too large"):
        Framing(header, largest + 1)


@pytest.mark.parametrize("value, encoded", [
    (0, b"\x00"), (0x7F, b"\x7f"), (0x80, b"\x80\x01"), (300, b"\xac\x02"), (0x3FFF, b"\xff\x7f"),
    (0x4000, b"\x80\x80\x01"), (2**64 - 1, b"\xff" * 9 + b"\x01"),
])
def test_varint_both_ways(value, encoded):
    assert varint(value) == encoded
    assert read_varint(encoded + b"\x55") == (value, len(encoded))


def test_varint_length_bounds():
    assert read_varint(b"\xff" * 9) is None                  # 9 bytes, unfinished: wait for more
    with pytest.raises(LinkError, match="longer than 10 bytes"):
        read_varint(b"\xff" * 10)                           # 10 bytes, unfinished: no varint
    with pytest.raises(LinkError, match="longer than 10 bytes"):
        read_varint(b"\xff" * 10 + b"\x01")                 # an 11th byte does not count


def test_two_byte_header_length_uses_both_bytes():
    f = Framing("2byte", 4094)
    assert f.pack(b"x" * 0x0FFE)[:2] == b"\x0f\xfe"
    assert f.unpack_header(b"\x8f\xfe") == (True, 0x0FFE)
    assert f.unpack_header(b"\x01\x00") == (False, 0x100)
    with pytest.raises(LinkError):
        f.unpack_header(b"\x0f\xff")                         # 4095 > payload


@pytest.mark.parametrize("header", ["2byte", "1byte"])
def test_chunk_and_header_bounds(header):
    f = Framing(header)
    h = f.header_size
    assert len(f.pack(b"x" * 32)) == h + 32                   # n == payload
    with pytest.raises(ValueError):
        f.pack(b"x" * 33)                                    # payload + 1
    full = b"\x20" if header == "1byte" else b"\x00\x20"
    over = b"\x21" if header == "1byte" else b"\x00\x21"
    assert f.unpack_header(full) == (False, 32)
    with pytest.raises(LinkError):
        f.unpack_header(over)


def test_short_packet_before_the_end_is_a_link_error():
    f = Framing()
    port = FakePort(f.pack(b"abc") + f.pack(b"", eom=True))
    with pytest.raises(LinkError, match="non-final packet with 3 bytes"):
        Link(port, f).receive_message(1.0)


def test_board_packets_split_exactly():
    f = Framing("2byte", 4)
    assert f.board_packets(b"abcdefghi") == [b"\x00\x04abcd", b"\x00\x04efgh", b"\x80\x01i\0\0\0"]
    assert f.host_packets(b"abcdefg") == [b"\x00\x04\x07abc", b"\x00\x04defg"]


@pytest.mark.parametrize("size, acks", [(31, b""), (32, b"\xaa"), (63, b"\xaa"), (64, b"\xaa\xaa")])
def test_board_receive_waits_for_the_whole_message(size, acks):
    """31 bytes + its 1-byte length fill one 32-byte packet; one byte more needs a second."""
    message = bytes(range(size))
    port = FakePort(b"".join(Framing().host_packets(message)))
    assert Link(port).board_receive(None) == message
    assert bytes(port.tx) == acks and port.rx == b""


# ---- messages -------------------------------------------------------------------------------
from n6.aivalidation import n6_aivalidation_pb2 as pb  # noqa: E402
from n6.aivalidation.messages import (PERF_ONLY, EPOCH_KINDS, ModelInfo, Operator, format_dtype,  # noqa: E402
                                      tensor_format)


def test_perf_only_run_parameter():
    assert PERF_ONLY == 1 | 8 | 512                          # IO_ONLY | PERF | CONF_CONST_VALUE


@pytest.mark.parametrize("dtype, word", [
    ("int8", 0x840440), ("uint8", 0x040440), ("int16", 0x840840), ("uint16", 0x040840), ("int32", 0x841040),
    ("uint32", 0x041040), ("float32", 0x821040), ("bool", 0x060440),
])
def test_tensor_format_words(dtype, word):
    """sign<<23 | type<<17 | bits<<7 | (fbits + 64) & 0x7F, the layout of ST's format word."""
    assert tensor_format(dtype) == word and format_dtype(word) == dtype
    assert tensor_format(dtype, fbits=-64) == word & ~0x7F and tensor_format(dtype, fbits=63) == word | 0x7F


def test_epoch_kinds():
    assert EPOCH_KINDS == {0: "HW", 1: "EXTRA", 2: "SW", 3: "HYBRID", 4: "EC"}
    op = Operator("x", 1 << 24 | 2, 0, 0.0, 0, [])
    assert op.kind == "SW" and op.is_epoch
    assert Operator("x", 1 << 24 | 0xF7, 0, 0.0, 0, []).kind == "7"
    assert not Operator("x", 2 << 24, 0, 0.0, 0, []).is_epoch


def test_model_info_versions():
    m = pb.aiModelInfoMsg(name="net", rtid=3, signature="", compile_datetime="d", runtime_version=0x0A0B0C0D,
                          tool_version=0x01FF0203, n_macc=0, n_nodes=5, n_inputs=0, n_outputs=0, n_activations=0,
                          n_params=0, runtime_desc="r")
    info = ModelInfo.from_pb(m)
    assert (info.runtime_version, info.tool_version, info.rtid, info.n_nodes) == ((10, 11, 12), (1, 255, 2), 3, 5)


@pytest.mark.parametrize("first, last, name", [
    (3, 0, "EpochBlock_3"), (3, 3, "EpochBlock_3"), (3, 7, "EpochBlock_3 -> 7"), (3, 0x8007, "EpochBlock_3"),
    (0xFFFF, 0x7FFF, "EpochBlock_65535 -> 32767"),
])
def test_epoch_operator_names(first, last, name):
    m = pb.aiOperatorMsg(name="", type=1 << 24, id=last << 16 | first, duration=1.5, counter_type=0, stack_used=0,
                         heap_used=0)
    op = Operator.from_pb(m)
    assert op.name == name and op.epoch_range == (first, last)
    assert Operator.from_pb(pb.aiOperatorMsg(name="", type=0, id=7, duration=0, counter_type=0, stack_used=0,
                                             heap_used=0)).name == ""


def test_counter_values_64_and_32_bit():
    c = [0xFFFFFFFF, 1, 5, 0x80000000]
    assert Operator("o", 0, 0, 0.0, 0 << 16, c).counter_values == [0x1FFFFFFFF, 0x8000000000000005]
    assert Operator("o", 0, 0, 0.0, 0 << 16, c[:3]).counter_values == [0x1FFFFFFFF]     # odd tail dropped
    assert Operator("o", 0, 0, 0.0, 1 << 16, c).counter_values == c


# ---- client ---------------------------------------------------------------------------------
from n6.aivalidation.client import BoardError, Client, Device, Timeouts  # noqa: E402
from n6.aivalidation.messages import TensorDesc  # noqa: E402


def resp(reqid, state, **payload):
    r = pb.respMsg(reqid=reqid, state=state)
    for k, v in payload.items():
        getattr(r, k).CopyFrom(v)
    return b"".join(Framing().board_packets(r.SerializeToString()))


def sent_requests(client):
    """The host's messages as the board decodes them."""
    board = Link(FakePort(bytes(client.link.port.tx)))
    out = []
    while board.port.rx:
        out.append(board.board_receive(0.1))
    return out


def board_with_models(version, n_models):
    minfo = dict(rtid=0, signature="", compile_datetime="", runtime_version=0, tool_version=0,
                              n_macc=0, n_nodes=0, n_inputs=0, n_outputs=0, n_activations=0, n_params=0,
                              runtime_desc="")
    rx = resp(1, pb.S_IDLE, sync=pb.syncMsg(version=version, capability=1, rtid=7))
    rx += resp(2, pb.S_IDLE, sinfo=pb.sysinfoMsg(devid=0x486, sclock=800, hclock=400, cache=3, com_param=0))
    for i in range(n_models):
        rx += resp(3 + i, pb.S_IDLE, minfo=pb.aiModelInfoMsg(name=f"m{i}", **minfo))
    rx += resp(3 + n_models, pb.S_ERROR, ack=pb.ackMsg(param=0, error=pb.E_INVALID_PARAM))
    return Client(FakePort(rx), timeouts=Timeouts(network_info=0.05), name="dk")


@pytest.mark.parametrize("version, ok", [(0x300, True), (0x301, True), (0x302, False), (0x201, False),
                                         (0x401, False)])
def test_protocol_versions(version, ok):
    client = board_with_models(version, 1)
    if ok:
        dev = client.connect()
        assert (dev.protocol, dev.devid, dev.sclock, dev.hclock, dev.cache, dev.rtid) == \
            ((3, version & 0xFF), 0x486, 800, 400, 3, 7)
    else:
        with pytest.raises(BoardError, match=f"COM Protocol is not supported: {version >> 8}.{version & 0xFF}"):
            client.connect()


def test_connect_reads_up_to_sixteen_models():
    assert len(board_with_models(0x301, 17).connect().models) == 16       # the client asks for 16 at most
    client = board_with_models(0x301, 15)
    assert [m.name for m in client.connect().models] == [f"m{i}" for i in range(15)]
    params = [pb.reqMsg.FromString(m).param for m in sent_requests(client)]
    assert params == [0, 0] + list(range(16))


def test_client_defaults_and_names():
    assert Client(FakePort()).link.framing == Framing("2byte", 32)
    assert Client(FakePort()).name == "board"
    port = FakePort()
    port.port = "/dev/ttyACM0"
    assert Client(port).name == "/dev/ttyACM0" and Client(port, name="dk").name == "dk"


def test_two_models_of_one_name():
    client = Client(FakePort())
    client.device = Device((3, 1), 0, 0, models=[ModelInfo("a", [], []), ModelInfo("a", [], [])])
    with pytest.raises(BoardError, match="2 models named 'a'"):
        client.model("a")


def run_client(acked, flags=2 | 256, first=False, counter_option=3):
    ins = [TensorDesc("x", "int8", (1, 4))]
    op = pb.aiOperatorMsg(name="net", type=0, id=0, duration=1.0, counter_type=0, counters=[0] * 10, stack_used=-1,
                          heap_used=-1)
    t = pb.aiTensorMsg()
    TensorDesc("y", "int8", (1, 2)).to_pb(t.desc)
    t.desc.flags = flags
    t.data.CopyFrom(pb.aiDataMsg(type=0, size=2, addr=0, datas=b"yz"))
    rx = resp(1, pb.S_WAITING, ack=pb.ackMsg(param=4, error=pb.E_NONE))
    rx += resp(1, pb.S_PROCESSING, ack=pb.ackMsg(param=acked, error=pb.E_NONE))
    rx += resp(1, pb.S_PROCESSING, op=op) + resp(1, pb.S_DONE, tensor=t)
    client = Client(FakePort(rx))
    client.device = Device((3, 1), 0, 0, models=[ModelInfo("net", ins, [])])
    return client, client.run("net", [b"abcd"], counter_option=counter_option, first=first)


def test_run_request_and_outputs():
    client, result = run_client(4)
    req = pb.reqMsg.FromString(sent_requests(client)[0])
    assert (req.param, req.name, req.opt) == (1, "net", 3 << 8 | 0)
    assert [d for _, d in result.outputs] == [b"yz"]
    assert [d for _, d in run_client(4, flags=2 | 256 | pb.TENSOR_FLAG_NO_DATA)[1].outputs] == [b""]


def test_board_that_took_fewer_input_bytes():
    with pytest.raises(BoardError, match=r"the board took 3 bytes of input 0 \(4 sent\)"):
        run_client(3)


def test_emulation_refusal_names_the_fix():
    log = pb.logMsg(level=1, str="NPU epoch not emulated")
    rx = resp(1, pb.S_PROCESSING, log=log) + resp(1, pb.S_ERROR, ack=pb.ackMsg(param=0, error=pb.E_GENERIC))
    client = Client(FakePort(rx))
    client.request(pb.CMD_SYNC)
    with pytest.raises(BoardError, match=r"\(fix: run it on a board \(PORT=\)\)"):
        client.receive(0.1, "x")


def test_log_acks_and_undecodable_replies():
    log = pb.logMsg(level=1, str="s:config:x:1")
    rx = resp(1, pb.S_PROCESSING, log=log) + b"".join(Framing().board_packets(b"\xff" * 20))
    client = Client(FakePort(rx))
    client.request(pb.CMD_SYNC)
    logs = []
    with pytest.raises(BoardError, match="x: undecodable message " + " ".join(["ff"] * 16) + "…"):
        client.receive(0.1, "x", logs)
    ack = pb.ackMsg.FromString(sent_requests(client)[1])
    assert (ack.param, ack.error, logs) == (0, pb.E_NONE, ["config:x:1"])


def test_open_uses_st_baud_rate(monkeypatch):
    import serial
    seen = {}

    def fake(url, **kw):
        seen.update(kw, url=url)
        return FakePort()
    monkeypatch.setattr(serial, "serial_for_url", fake)
    assert Client.open("/dev/ttyACM0").name == "/dev/ttyACM0"
    assert (seen["baudrate"], seen["exclusive"]) == (921600, True)


def test_per_layer_run_reads_each_epochs_tensors():
    """An epoch operator is followed by its tensors up to TENSOR_FLAG_LAST, unless it has
    OPERATOR_FLAG_WITHOUT_TENSOR; then the model operator and the outputs."""
    def op(type_, id_):
        return pb.aiOperatorMsg(name="" if type_ >> 24 else "net", type=type_, id=id_, duration=1.0, counter_type=0,
                                counters=[], stack_used=-1, heap_used=-1)

    def tensor(data, flags):
        t = pb.aiTensorMsg()
        TensorDesc("t", "int8", (1, len(data))).to_pb(t.desc)
        t.desc.flags = flags
        t.data.CopyFrom(pb.aiDataMsg(type=0, size=len(data), addr=0, datas=data))
        return t
    rx = resp(1, pb.S_WAITING, ack=pb.ackMsg(param=4, error=pb.E_NONE))
    rx += resp(1, pb.S_PROCESSING, ack=pb.ackMsg(param=4, error=pb.E_NONE))
    rx += resp(1, pb.S_PROCESSING, op=op(1 << 24, 0x10001))
    rx += resp(1, pb.S_PROCESSING, tensor=tensor(b"ab", 4)) + resp(1, pb.S_PROCESSING, tensor=tensor(b"cd", 4 | 256))
    rx += resp(1, pb.S_PROCESSING, op=op((1 | 4) << 24, 0x20002))                      # without tensors
    rx += resp(1, pb.S_PROCESSING, op=op(0, 0)) + resp(1, pb.S_DONE, tensor=tensor(b"yz", 2 | 256))
    client = Client(FakePort(rx))
    client.device = Device((3, 1), 0, 0, models=[ModelInfo("net", [TensorDesc("x", "int8", (1, 4))], [])])
    result = client.run("net", [b"abcd"], mode=2)
    assert [(e.name, [d for _, d in e.tensors]) for e in result.epochs] == \
        [("EpochBlock_1", [b"ab", b"cd"]), ("EpochBlock_2", [])]
    assert result.model_op.name == "net" and [d for _, d in result.outputs] == [b"yz"]


def test_a_one_byte_header_board_answers_in_the_legacy_messages():
    """ST's 1-byte-header firmwares send sysinfoMsgLegacy (extra at field 5, no com_param): read as
    such, the extra words arrive whole and the packet size stays the framing's."""
    def legacy(reqid, state=pb.S_IDLE, **payload):
        r = pb.respMsgLegacy(reqid=reqid, state=state)
        for k, v in payload.items():
            getattr(r, k).CopyFrom(v)
        return b"".join(Framing("1byte").board_packets(r.SerializeToString()))
    rx = legacy(1, sync=pb.syncMsg(version=0x301, capability=1, rtid=7))
    rx += legacy(2, sinfo=pb.sysinfoMsgLegacy(devid=0x486, sclock=800, hclock=400, cache=3, extra=[5, 6, 64]))
    rx += legacy(3, pb.S_ERROR, ack=pb.ackMsg(param=0, error=pb.E_INVALID_PARAM))
    client = Client(FakePort(rx), Framing("1byte"), Timeouts(network_info=0.05), name="dk")
    dev = client.connect()
    assert (dev.devid, dev.extra, dev.models) == (0x486, [5, 6, 64], [])
    assert client.link.framing == Framing("1byte")


def test_the_host_acknowledges_each_input_with_param_0():
    client, _ = run_client(4)
    request, data, ack = sent_requests(client)
    assert pb.aiDataMsg.FromString(data).datas == b"abcd"
    assert (pb.ackMsg.FromString(ack).param, pb.ackMsg.FromString(ack).error) == (0, pb.E_NONE)


def test_a_run_with_another_number_of_inputs_is_refused_before_anything_is_sent():
    client = Client(FakePort())
    client.device = Device((3, 1), 0, 0, models=[ModelInfo("net", [TensorDesc("x", "int8", (1, 4))], [])])
    with pytest.raises(BoardError, match=r"2 inputs for 'net', which has 1"):
        client.run("net", [b"abcd", b"efgh"])
    assert sent_requests(client) == []
