"""aiValidation host: connect (sync, sys-info, network-info), run inferences, with the host's
timeout on every read and an ack for every log (deploy-protocol.md §4.4, §4.7). Every failure
is a BoardError: one line naming the port, the step and the likely fix."""
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

from google.protobuf.message import DecodeError, Message

from ..errors import N6Error
from ..serial_link import BAUDRATE, DEFAULT_HEADER
from . import n6_aivalidation_pb2 as pb
from .framing import READ_SLICE, Framing, Link, LinkError, LinkTimeout, Port
from .messages import (CONF_CONST_VALUE, ERROR_NAMES, IO_ONLY, OP_WITHOUT_TENSOR, PROTOCOL_VERSION, STATE_NAMES,
                       TENSOR_LAST, TENSOR_NO_DATA, ModelInfo, Operator, TensorDesc)

T = TypeVar("T")
FIX_FIRMWARE = "reset the board; check that the validation firmware runs and that the board file's " \
               "[validation] header matches it"


class BoardError(N6Error):
    """A failure talking to the board (port, protocol, firmware refusal)."""


@dataclass
class Timeouts:
    """The host's limits in seconds (ST's host values by default)."""
    sync: float = 0.5
    sys_info: float = 0.5
    network_info: float = 5.0
    run_ack: float = 1.0
    operator: float = 50.0
    tensor: float = 0.1
    packet_ack: float = 5.0


@dataclass
class Device:
    protocol: tuple[int, int]
    capabilities: int
    rtid: int
    devid: int = 0
    sclock: int = 0
    hclock: int = 0
    cache: int = 0
    extra: list[int] = field(default_factory=list)
    config: dict[str, str] = field(default_factory=dict)     # from the `s:config:` logs
    models: list[ModelInfo] = field(default_factory=list)


@dataclass
class RunResult:
    """One inference: outputs (description, raw little-endian bytes), the epoch operators of a
    PER_LAYER run, the final model operator (5 × u64 counters), every `s:` log string."""
    outputs: list[tuple[TensorDesc, bytes]]
    epochs: list[Operator]
    model_op: Operator
    logs: list[str]
    host_seconds: float = 0.0


def _link_errors() -> tuple[type[Exception], ...]:
    """What a port raises when the board goes away: pyserial's errors, OSError, and on POSIX
    termios.error (a flush/tcdrain on a port whose other side vanished)."""
    import serial
    try:
        import termios
        return serial.SerialException, OSError, termios.error
    except ImportError:
        return serial.SerialException, OSError


class Client:
    def __init__(self, port: Port, framing: Framing | None = None, timeouts: Timeouts | None = None,
                 name: str | None = None) -> None:
        self.link = Link(port, framing or Framing())
        self.timeouts = timeouts or Timeouts()
        self.name = name or getattr(port, "port", None) or "board"
        self.reqid = 0
        self.device: Device | None = None
        self.board_logs: list[str] = []       # log strings that are not `s:` records (firmware messages)

    @classmethod
    def open(cls, url: str, baudrate: int = BAUDRATE, header: str = DEFAULT_HEADER,
             timeouts: Timeouts | None = None) -> Self:
        import serial
        try:
            port = serial.serial_for_url(url, baudrate=baudrate, timeout=READ_SLICE, exclusive=True)
        except (serial.SerialException, OSError, ValueError) as e:
            raise BoardError(url, f"cannot open the serial port: {getattr(e, 'strerror', None) or e}",
                             "connect the board, or give its port (PORT= or the board file's [validation] port)") \
                from None
        client = cls(port, Framing(header), timeouts, url)
        client._drain()
        return client

    def close(self) -> None:
        try:
            self.link.port.close()
        except Exception:
            pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _drain(self) -> None:
        """Drop a boot banner or stale bytes: read until READ_SLICE (the port's timeout since open)
        passes without any."""
        port = self.link.port
        for _ in range(1000):
            if not self._io(port.read, 4096):
                break

    # -- transport ------------------------------------------------------------------------------
    def _io(self, fn: Callable[..., T], *args: object) -> T:
        try:
            return fn(*args)
        except _link_errors() as e:
            why = getattr(e, "strerror", None) or (e.args[1] if len(e.args) == 2 else e)
            raise BoardError(self.name, f"connection lost ({why})", "check the cable; reset the board") from None

    def send(self, message: Message, what: str) -> None:
        try:
            self._io(self.link.send_message, message.SerializeToString(), self.timeouts.packet_ack)
        except LinkTimeout:
            raise BoardError(self.name, f"{what}: the board stopped acknowledging packets", FIX_FIRMWARE) from None

    def request(self, cmd: int, param: int = 0, name: str = "", opt: int = 0) -> int:
        self.reqid += 1
        self.send(pb.reqMsg(reqid=self.reqid, cmd=cmd, param=param, name=name, opt=opt), pb.EnumCmd.Name(cmd))
        return self.reqid

    def receive(self, timeout: float, what: str, logs: list[str] | None = None) -> pb.respMsg:
        """The next non-log message of the current transaction; logs are acked and collected."""
        while True:
            try:
                raw = self._io(self.link.receive_message, timeout)
            except LinkTimeout:
                raise BoardError(self.name, f"no answer to {what} within {timeout:g} s", FIX_FIRMWARE) from None
            except LinkError as e:
                raise BoardError(self.name, f"{what}: not an aiValidation packet ({e})", FIX_FIRMWARE) from None
            resp = (pb.respMsgLegacy if self.link.framing.header == "1byte" else pb.respMsg)()
            try:
                resp.ParseFromString(raw)
            except DecodeError:
                raise BoardError(self.name, f"{what}: undecodable message {raw[:16].hex(' ')}…", FIX_FIRMWARE) \
                    from None
            if resp.reqid != self.reqid:
                raise BoardError(self.name, f"{what}: SeqID is not valid - {resp.reqid} instead {self.reqid}",
                                 "reset the board (stale bytes on the link)")
            if resp.WhichOneof("payload") == "log":
                text = resp.log.str
                self.send(pb.ackMsg(param=0, error=pb.E_NONE), f"ack of a log during {what}")
                if text.startswith("s:"):
                    if logs is not None:
                        logs.append(text[2:])
                else:
                    self.board_logs.append(text)
                continue
            if resp.state == pb.S_ERROR:
                detail = f": {self.board_logs[-1]}" if self.board_logs else ""
                err = ERROR_NAMES.get(resp.ack.error, resp.ack.error) if resp.HasField("ack") else "no ack"
                crashed = any(k in detail for k in ("HardFault", "not executable"))
                raise BoardError(self.name, f"{what} refused by the board ({err}){detail}",
                                 "run it on a board (PORT=)"
                                 if "not emulated" in detail or "not modelled" in detail else
                                 "rebuild the image and check it (./n6 check)" if crashed else
                                 "check that the model was flashed and installed (scons flash)")
            return resp

    def expect(self, resp: pb.respMsg, payload: str, states: Sequence[int], what: str) -> Any:
        kind = resp.WhichOneof("payload")
        if kind != payload:
            raise BoardError(self.name, f"{what}: received '{kind}' instead of '{payload}'", FIX_FIRMWARE)
        if resp.state not in states:
            raise BoardError(self.name, f"{what}: invalid state {STATE_NAMES.get(resp.state, resp.state)}",
                             FIX_FIRMWARE)
        return getattr(resp, payload)

    # -- connect --------------------------------------------------------------------------------
    def connect(self) -> Device:
        """SYNC, SYS_INFO, then NETWORK_INFO for every model the board holds."""
        self.request(pb.CMD_SYNC)
        sync = self.expect(self.receive(self.timeouts.sync, "SYNC"), "sync", (pb.S_IDLE,), "SYNC")
        major, minor = sync.version >> 8, sync.version & 0xFF
        if major != PROTOCOL_VERSION[0] or minor > PROTOCOL_VERSION[1]:
            raise BoardError(self.name, f"COM Protocol is not supported: {major}.{minor}, expected 3.1",
                             "use a validation firmware of the same ST Edge AI release")
        self.request(pb.CMD_SYS_INFO)
        si = self.expect(self.receive(self.timeouts.sys_info, "SYS_INFO"), "sinfo", (pb.S_IDLE,), "SYS_INFO")
        dev = Device((major, minor), sync.capability, sync.rtid, si.devid, si.sclock, si.hclock, si.cache,
                     list(si.extra))
        if getattr(si, "com_param", 0):      # 2-byte releases only: a USB board's larger packets
            self.link.framing = Framing(self.link.framing.header, si.com_param)
        for idx in range(16):
            logs: list[str] = []
            self.request(pb.CMD_NETWORK_INFO, param=idx)
            try:
                resp = self.receive(self.timeouts.network_info, f"NETWORK_INFO({idx})", logs)
            except BoardError as e:
                if "E_INVALID_PARAM" in e.problem:   # past the last model
                    break
                raise
            for text in logs:
                if text.startswith("config:"):
                    key, _, value = text[len("config:"):].partition(":")
                    dev.config[key] = value
            dev.models.append(ModelInfo.from_pb(self.expect(resp, "minfo", (pb.S_IDLE,), "NETWORK_INFO")))
        self.device = dev
        return dev

    def model(self, name: str | None = None) -> ModelInfo:
        models = self.device.models if self.device else []
        found = [m for m in models if name in (None, m.name)]
        if len(found) > 1:
            raise BoardError(self.name, f"{len(found)} models named '{name}' are on the board",
                             "give each model its own c-name (model.json \"name\", stedgeai -n)")
        if found:
            return found[0]
        have = ", ".join(m.name for m in models) or "none"
        raise BoardError(self.name, f"model '{name}' is not on the board (the board has: {have})",
                         "flash it first (scons flash)")

    # -- run ------------------------------------------------------------------------------------
    def run(self, name: str, inputs: Sequence[bytes], mode: int = IO_ONLY, counter_option: int = 0,
            first: bool = True) -> RunResult:
        """One inference of model `name` with `inputs` (raw bytes per input, in order), as ST's
        host runs it: with CONF_CONST_VALUE in `mode` only each input's first element is sent
        (the board fills the buffer with it); every input is acknowledged by the board (the bytes
        it took), then by the host. Epoch tensors of a PER_LAYER run come with their operator."""
        t0 = time.monotonic()
        model = self.model(name)
        if len(inputs) != len(model.inputs):
            raise BoardError(self.name, f"{len(inputs)} inputs for '{name}', which has {len(model.inputs)}",
                             "give one array per model input")
        sent = []
        for i, (data, desc) in enumerate(zip(inputs, model.inputs)):
            if len(data) != desc.nbytes:
                raise BoardError(self.name, f"input {i} of '{name}' is {len(data)} bytes, the board expects "
                                 f"{desc.nbytes}", "give inputs of the model's shape and type")
            sent.append(bytes(data[:desc.itemsize]) if mode & CONF_CONST_VALUE else bytes(data))
        self.request(pb.CMD_NETWORK_RUN, param=mode, name=name, opt=counter_option << 8 | int(first))
        self.expect(self.receive(self.timeouts.run_ack, "NETWORK_RUN"), "ack", (pb.S_WAITING,), "NETWORK_RUN")
        for i, data in enumerate(sent):
            self.send(pb.aiDataMsg(type=0, size=len(data), addr=0, datas=data), f"input {i}")
            last = i == len(sent) - 1
            ack = self.expect(self.receive(self.timeouts.run_ack, f"input {i}"), "ack",
                              (pb.S_PROCESSING,) if last else (pb.S_WAITING,), f"input {i}")
            if ack.param != len(data):
                raise BoardError(self.name, f"the board took {ack.param} bytes of input {i} ({len(data)} sent)",
                                 FIX_FIRMWARE)
            self.send(pb.ackMsg(param=0, error=pb.E_NONE), f"ack of input {i}")
        logs: list[str]
        pending: list[str]
        epochs: list[Operator]
        logs, pending, epochs = [], [], []
        while True:
            resp = self.receive(self.timeouts.operator, "the inference", pending)
            op_msg = self.expect(resp, "op", (pb.S_PROCESSING,), "the inference")
            op = Operator.from_pb(op_msg, pending)
            logs += pending
            pending = []
            if not op.is_epoch:
                break
            epochs.append(op)
            while not op.type >> 24 & OP_WITHOUT_TENSOR:
                t = self.expect(self.receive(self.timeouts.tensor, "an epoch tensor"), "tensor",
                                (pb.S_PROCESSING,), "an epoch tensor")
                op.tensors.append((TensorDesc.from_pb(t.desc),
                                   None if t.desc.flags & TENSOR_NO_DATA else bytes(t.data.datas)))
                if t.desc.flags & TENSOR_LAST:
                    break
        outputs = []
        while True:
            resp = self.receive(self.timeouts.run_ack, "an output tensor")
            t = self.expect(resp, "tensor", (pb.S_PROCESSING, pb.S_DONE), "an output tensor")
            data = b"" if t.desc.flags & TENSOR_NO_DATA else bytes(t.data.datas)
            outputs.append((TensorDesc.from_pb(t.desc), data))
            if resp.state == pb.S_DONE:
                break
        return RunResult(outputs, epochs, op, logs, time.monotonic() - t0)
