"""The aiValidation protocol, board side (deploy-protocol.md §4.9 checklist): decode delimited
host requests, answer with bare `respMsg`s, wait for the host's ack after every log. Fault
injection for tests (N6_SIM_BOARD_FAULT): `silence`, `garbage`, `header` (the other header
variant), `disconnect:N` (drop the link during run N), `crash:N` (hang after N inferences),
`slow:S` (every reply S seconds late), `counters` (epoch counter blocks one value short),
`kill:N` (the board process killed during run N),
`wrong-output:NAME` (the model NAME's outputs sent with their first byte changed), `lsb-error:NAME:N`
(the first value of the model NAME's first output N LSB off).
PER_LAYER runs count instructions per epoch; with the BUSIF_RW_DATA counter option also reads and
writes per memory region, with the region's base and size (`s:sim:mem:` logs)."""
import os
import select
import signal
import time

import numpy as np

from n6.aivalidation import n6_aivalidation_pb2 as pb
from n6.aivalidation.framing import Framing, Link, LinkError, LinkTimeout
from n6.aivalidation.messages import (API_RELOC, CAP_OBSERVER, CONF_CONST_VALUE, COUNTER_32B, DEVID_N6,
                                      EPOCH_KINDS, OP_INTERNAL, OP_WITHOUT_TENSOR, PER_LAYER, PER_LAYER_WITH_DATA,
                                      PERF, RT_ATONN, TENSOR_IN_MEMPOOL, TENSOR_INPUT, TENSOR_INTERNAL, TENSOR_LAST,
                                      TENSOR_MEMPOOL, TENSOR_NO_DATA, TENSOR_OUTPUT, TOOLS_GCC, TensorDesc)
from n6.profiling.messages import BUSIF_RW_DATA
from google.protobuf.message import DecodeError

from .emulator import Fault, NotEmulated, NpuAccess, NpuStopped
from npu_model.npu import NPU_HZ, not_computed_line

from .firmware import MCU_HZ, NIC_HZ, NOC_HZ
from .npu_counters import log_lines

CACHE_WORD = 5 << 24 | 1 << 16 | 1 << 11 | 1 << 10        # N6, FPU, D$, I$


class BoardReset(Exception):
    """The programmer reset the board (-rst / -hardRst): its firmware starts again."""


class FdPort:
    """The pty master as a pyserial-like port; a read raises BoardReset once `reset_requested()`."""

    def __init__(self, fd, reset_requested=lambda: False):
        self.fd, self.timeout, self.reset_requested = fd, None, reset_requested

    def drain(self):
        """Drop what the host sent and nobody read (a board in reset receives nothing)."""
        while select.select([self.fd], [], [], 0)[0]:
            try:
                if not os.read(self.fd, 4096):
                    return
            except OSError:
                return

    def read(self, n):
        if self.reset_requested():
            raise BoardReset()
        r, _, _ = select.select([self.fd], [], [], self.timeout)
        if not r:
            return b""
        try:
            return os.read(self.fd, n)
        except OSError:       # host closed the port: nothing to read
            time.sleep(self.timeout or 0.05)
            return b""

    def write(self, data):
        view = memoryview(data)
        while view:
            _, w, _ = select.select([], [self.fd], [], 5)
            if not w:
                raise LinkTimeout("host does not read")
            view = view[os.write(self.fd, view):]


class Disconnect(Exception):
    pass


def lsb_error(model, fault_arg, dtype, out):
    """`lsb-error:NAME:N`: the model NAME's first output value N LSB off (N below it when N above
    would leave the integer type's range): a known, small board error for validate's figures."""
    name, _, n = fault_arg.rpartition(":")
    if name != model:
        return out
    values = np.frombuffer(out, dtype).copy()
    n = int(n)
    values[0] += n if int(values[0]) + n <= np.iinfo(dtype).max else -n
    return values.tobytes()


class Board:
    def __init__(self, port, header, models, install_error=None, fault="", log=None):
        kind, _, arg = (fault or "").partition(":")
        self.fault, self.fault_arg = kind, arg if kind in ("wrong-output", "lsb-error") else float(arg) if arg else 0
        if self.fault == "header":
            header = "1byte" if header == "2byte" else "2byte"
        self.header = header
        self.link = Link(port, Framing(header))
        self.models, self.install_error = models, install_error
        self.reqid, self.runs = 0, 0
        self.log = log or (lambda text: None)

    def serve(self):
        while True:
            try:
                raw = self.link.board_receive(None)
            except (LinkError, LinkTimeout):
                continue
            req = pb.reqMsg()
            try:
                req.ParseFromString(raw)
            except DecodeError:
                continue                      # the firmware drops what it cannot decode
            if self.fault == "silence" or (self.fault == "crash" and self.runs >= self.fault_arg):
                continue
            if self.fault == "garbage":
                self.link.port.write(bytes(range(0x41, 0x41 + 2 * self.link.framing.packet_size)))
                continue
            self.reqid = req.reqid
            try:
                self.dispatch(req)
            except Disconnect:
                return
            except LinkTimeout:
                continue

    # -- replies --------------------------------------------------------------------------------
    def send(self, state, **payload):
        if self.fault == "slow":
            time.sleep(self.fault_arg)
        resp = (pb.respMsgLegacy if self.header == "1byte" else pb.respMsg)(reqid=self.reqid, state=state)
        for key, value in payload.items():
            if key == "sinfo" and self.header == "1byte":
                for f in ("devid", "sclock", "hclock", "cache"):
                    setattr(resp.sinfo, f, getattr(value, f))
                resp.sinfo.extra.extend(value.extra)
            else:
                getattr(resp, key).CopyFrom(value)
        self.link.board_send(resp.SerializeToString())

    def log_and_wait(self, text, level=1):
        """A log line, then the host's ack; ST's firmware sends every log in S_WAITING."""
        self.send(pb.S_WAITING, log=pb.logMsg(level=level, str=text))
        ack = pb.ackMsg()
        ack.ParseFromString(self.link.board_receive(5.0))

    def error(self, error, param=0, text=None):
        if text:
            self.log_and_wait(text, level=3)
        self.send(pb.S_ERROR, ack=pb.ackMsg(param=param, error=error))

    # -- commands -------------------------------------------------------------------------------
    def dispatch(self, req):
        if req.cmd == pb.CMD_SYNC:
            self.link.framing = Framing(self.header)
            self.send(pb.S_IDLE, sync=pb.syncMsg(version=0x0301, capability=CAP_OBSERVER,
                                                 rtid=RT_ATONN | API_RELOC << 8 | TOOLS_GCC << 16))
        elif req.cmd == pb.CMD_SYS_INFO:
            self.send(pb.S_IDLE, sinfo=pb.sysinfoMsg(devid=DEVID_N6, sclock=MCU_HZ, hclock=MCU_HZ // 2,
                                                     cache=CACHE_WORD, com_param=0, extra=[0, NPU_HZ, NIC_HZ, 0]))
        elif req.cmd == pb.CMD_NETWORK_INFO:
            self.network_info(req.param)
        elif req.cmd == pb.CMD_NETWORK_RUN:
            self.run(req)
        else:
            self.error(pb.E_INVALID_PARAM, 4)

    def network_info(self, idx):
        if idx >= len(self.models):
            if idx == 0 and self.install_error:
                return self.error(pb.E_GENERIC, 0, self.install_error)
            return self.error(pb.E_INVALID_PARAM, 4)
        for text in ("version:1.0", f"dev_id:0x{DEVID_N6:x}", f"mcu_freq:{MCU_HZ}", f"noc_freq:{NOC_HZ}",
                     f"npu_freq:{NPU_HZ}", f"nic_freq:{NIC_HZ}", "npu_cache:0"):
            self.log_and_wait("s:config:" + text)
        m = self.models[idx]
        info = pb.aiModelInfoMsg(name=m.name, rtid=0x06010004 | API_RELOC << 8, signature="", compile_datetime="",
                                 runtime_version=m.rt_ctx.rt_version, tool_version=m.rt_ctx.rt_version,
                                 n_macc=0, n_nodes=len(m.epochs), n_inputs=len(m.inputs), n_outputs=len(m.outputs),
                                 n_activations=1, n_params=1, runtime_desc=m.runtime_desc[:64])
        for b in m.inputs:
            self.describe(b, TENSOR_INPUT | TENSOR_IN_MEMPOOL).to_pb(info.inputs.add())
        for b in m.outputs:
            self.describe(b, TENSOR_OUTPUT | TENSOR_IN_MEMPOOL).to_pb(info.outputs.add())
        for size, what in ((m.rt_ctx.acts_sz, info.activations), (m.rt_ctx.params_sz, info.params)):
            TensorDesc("", "uint8", (size,), flags=TENSOR_MEMPOOL).to_pb(what.add())
        self.send(pb.S_IDLE, minfo=info)

    @staticmethod
    def describe(buf, flags):
        return TensorDesc(buf.name, buf.dtype, tuple(buf.mem_shape), buf.scale, buf.zero_point, buf.addr, flags)

    def run(self, req):
        """CMD_NETWORK_RUN as ST's aiValidation firmware serves it: an ack for the first input's
        size; per input, its data (one element with CONF_CONST_VALUE, broadcast over the buffer),
        an ack of the bytes received (S_WAITING, S_PROCESSING after the last) and the host's ack;
        the inference (per epoch with PER_LAYER: logs, an operator, the epoch's buffers); the
        model operator; the outputs (no data with PERF)."""
        model = next((m for m in self.models if m.name == req.name), None)
        if model is None:
            return self.error(pb.E_INVALID_PARAM, 4, f"no model named '{req.name}' is installed")
        const_value = bool(req.param & CONF_CONST_VALUE)
        data = []
        self.send(pb.S_WAITING, ack=pb.ackMsg(param=model.inputs[0].nbytes, error=pb.E_NONE))
        for i, buf in enumerate(model.inputs):
            msg = pb.aiDataMsg()
            msg.ParseFromString(self.link.board_receive(5.0))
            if len(msg.datas) != (buf.itemsize if const_value else buf.nbytes):
                return self.error(pb.E_INVALID_SIZE, len(msg.datas))
            data.append(msg.datas * (buf.nbytes // buf.itemsize) if const_value else msg.datas)
            last = i == len(model.inputs) - 1
            self.send(pb.S_PROCESSING if last else pb.S_WAITING, ack=pb.ackMsg(param=len(msg.datas), error=pb.E_NONE))
            pb.ackMsg().ParseFromString(self.link.board_receive(5.0))
        if self.fault == "disconnect" and self.runs + 1 >= max(self.fault_arg, 1):
            os.close(self.link.port.fd)
            raise Disconnect()
        if self.fault == "kill" and self.runs + 1 >= max(self.fault_arg, 1):
            os.kill(os.getpid(), signal.SIGKILL)
        observed = bool(req.param & (PER_LAYER | PER_LAYER_WITH_DATA))
        with_data = bool(req.param & PER_LAYER_WITH_DATA) and not req.param & PERF
        model.cpu.set_counting(observed, observed and bool(req.opt >> 8 & BUSIF_RW_DATA))
        try:
            result = model.infer(data, req.opt >> 8 if observed else 0)
        except NpuStopped as e:
            return self.error(pb.E_GENERIC, 0, str(e))
        except NpuAccess as e:
            ep = model.current_epoch
            return self.error(pb.E_GENERIC, 0, f"epoch {ep.first if ep else '?'} programs the NPU ({e}): hardware "
                              "epochs are not executable on the simulated board")
        except NotEmulated as e:
            ep = model.current_epoch
            return self.error(pb.E_GENERIC, 0, f"epoch {ep.first if ep else '?'} uses a {e}: not emulated by the "
                              "simulated board (a Helium form its executor does not carry out: run it on a board)")
        except Fault as e:
            return self.error(pb.E_GENERIC, 0, f"HardFault: {e}")
        self.runs += 1
        for entry in model.npu.not_computed:            # NPU_MODEL=control: the outputs not computed
            self.log_and_wait(not_computed_line(entry))
        totals = [0, 0, 0]
        for run in result.epochs:
            if observed:
                totals = [t + c for t, c in zip(totals, self.report_epoch(model, run, with_data, req.opt >> 8))]
        cpu_all = result.cycles       # counted on every run: IO-only replies carry [0, 0, 0, total, 0]
        words = []
        for v in totals + [cpu_all, 0]:
            words += [v & 0xFFFFFFFF, v >> 32]
        self.send(pb.S_PROCESSING, op=pb.aiOperatorMsg(name=model.name, type=0, id=0,
                                                       duration=cpu_all / MCU_HZ * 1000, counter_type=0,
                                                       counters=words, stack_used=-1, heap_used=-1))
        no_data = TENSOR_NO_DATA if req.param & PERF else 0
        for j, (buf, out) in enumerate(zip(model.outputs, result.outputs)):
            last = j == len(model.outputs) - 1
            if self.fault == "wrong-output" and model.name == self.fault_arg:
                out = bytes([out[0] ^ 0x40]) + out[1:]
            if self.fault == "lsb-error" and j == 0:
                out = lsb_error(model.name, self.fault_arg, buf.dtype, out)
            self.send_tensor(buf, TENSOR_OUTPUT | no_data | (TENSOR_LAST if last else 0), out,
                             pb.S_DONE if last else pb.S_PROCESSING)

    def report_epoch(self, model, run, with_data, option):
        """What the firmware's epoch callback sends for one epoch; returns its MCU cycle counters."""
        ep = run.epoch
        buffers = [b for b in model.internals + model.outputs if b.epoch == ep.first]
        self.log_and_wait(f"s:node:evt_pre_start:0:{ep.first}:{ep.first}:{ep.last}:{int(ep.flags):08X}:"
                          f"{(OP_INTERNAL | OP_WITHOUT_TENSOR) << 24 | ep.kind:08X}:{EPOCH_KINDS[ep.kind]}")
        self.log_and_wait(f"s:node:evt_post_end:0:{ep.first}:{ep.first}:{ep.last}:{len(buffers)}")
        counts = [run.start.cycles, run.wait_cycles, run.end.cycles]
        self.log_and_wait("s:node:mcu_cycles:{}:{}:{}".format(*counts))
        npu = [round(c * NPU_HZ / MCU_HZ) for c in counts]
        for text in log_lines(option, npu, run.trace, run.trace_counts):
            self.log_and_wait(text)
        self.log_and_wait(f"s:sim:instructions:{run.start.instructions}:{run.end.instructions}")
        for region, (reads, rbytes, writes, wbytes) in sorted(_memory(run).items()):
            r = next(r for r in model.cpu.regions if r.name == region)   # where: the profile's pool
            self.log_and_wait(f"s:sim:mem:{region}:{reads}:{rbytes}:{writes}:{wbytes}:{r.base:08X}:{r.size}")
        flags = OP_INTERNAL | (0 if buffers else OP_WITHOUT_TENSOR)
        self.send(pb.S_PROCESSING, op=pb.aiOperatorMsg(
            name="", type=flags << 24 | ep.kind, id=ep.last << 16 | ep.first, duration=sum(counts) / MCU_HZ * 1000,
            counter_type=COUNTER_32B << 16, counters=counts[:2] if self.fault == "counters" else counts,
            stack_used=-1, heap_used=-1))
        for k, buf in enumerate(buffers):
            flags = TENSOR_INTERNAL | (0 if with_data else TENSOR_NO_DATA) | (TENSOR_LAST if k == len(buffers) - 1
                                                                             else 0)
            self.send_tensor(buf, flags, model.cpu.read(buf.addr, buf.nbytes), pb.S_PROCESSING)
        return counts

    def send_tensor(self, buf, flags, data, state):
        t = pb.aiTensorMsg()
        self.describe(buf, flags).to_pb(t.desc)
        data = b"" if flags & TENSOR_NO_DATA else data
        t.data.CopyFrom(pb.aiDataMsg(type=0, size=len(data), addr=buf.addr, datas=data))
        self.send(state, tensor=t)


def _memory(run):
    """region → (reads, read bytes, writes, write bytes) over the epoch's start and end."""
    out = {}
    for c in (run.start, run.end):
        for table, at in ((c.reads, 0), (c.writes, 2)):
            for region, (n, size) in table.items():
                entry = out.setdefault(region, [0, 0, 0, 0])
                entry[at] += n
                entry[at + 1] += size
    return out
