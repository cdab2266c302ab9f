"""The aiValidation protocol, board side (deploy-protocol.md §4.9 checklist): decode delimited
host requests, answer with bare `respMsg`s, wait for the host's ack after every log. Fault
injection for tests (N6_SIM_BOARD_FAULT): `silence`, `garbage`, `header` (the other header
variant), `disconnect:N` (drop the link during run N), `crash:N` (hang after N inferences),
`slow:S` (every reply S seconds late), `counters` (epoch counter blocks one value short).
PER_LAYER runs count instructions per epoch; with the BUSIF_RW_DATA counter option also reads and
writes per memory region, with the region's base and size (`s:sim:mem:` logs)."""
import os
import select
import time

from n6.aivalidation import n6_aivalidation_pb2 as pb
from n6.aivalidation.framing import Framing, Link, LinkError, LinkTimeout
from n6.aivalidation.messages import (API_RELOC, CAP_OBSERVER, DEVID_N6, EPOCH_KINDS, OP_INTERNAL,
                                      OP_WITHOUT_TENSOR, PER_LAYER, RT_ATONN, TENSOR_IN_MEMPOOL, TENSOR_LAST,
                                      TENSOR_OUTPUT, TOOLS_GCC, TensorDesc)
from google.protobuf.message import DecodeError

from .emulator import Fault, NpuAccess
from .firmware import MCU_HZ, NIC_HZ, NOC_HZ, NPU_HZ

BUSIF_RW_DATA = 0x08                                    # counter option: bus read/write data
CACHE_WORD = 5 << 24 | 1 << 16 | 1 << 11 | 1 << 10        # N6, FPU, D$, I$


class FdPort:
    """The pty master as a pyserial-like port."""

    def __init__(self, fd):
        self.fd, self.timeout = fd, None

    def read(self, n):
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


class Board:
    def __init__(self, port, header, models, install_error=None, fault="", log=None):
        kind, _, arg = (fault or "").partition(":")
        self.fault, self.fault_arg = kind, float(arg) if arg else 0
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
        self.send(pb.S_WAITING if text.startswith("s:config") else pb.S_PROCESSING,
                  log=pb.logMsg(level=level, str=text))
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
        info = pb.aiModelInfoMsg(name=m.name, rtid=0x06010004 | API_RELOC << 8, signature=0, compile_datetime="",
                                 runtime_version=m.rt_ctx.rt_version, tool_version=m.rt_ctx.rt_version,
                                 n_macc=0, n_nodes=len(m.epochs), n_inputs=len(m.inputs), n_outputs=len(m.outputs),
                                 n_activations=1, n_params=1, runtime_desc=m.runtime_desc[:64])
        for b in m.inputs:
            self.describe(b, 1025).to_pb(info.inputs.add())
        for b in m.outputs:
            self.describe(b, 1026).to_pb(info.outputs.add())
        for size, what in ((m.rt_ctx.acts_sz, info.activations), (m.rt_ctx.params_sz, info.params)):
            TensorDesc("", "uint8", (size,), flags=8).to_pb(what.add())
        self.send(pb.S_IDLE, minfo=info)

    @staticmethod
    def describe(buf, flags):
        return TensorDesc(buf.name, buf.dtype, tuple(buf.mem_shape), buf.scale, buf.zero_point, buf.addr, flags)

    def run(self, req):
        model = next((m for m in self.models if m.name == req.name), None)
        if model is None:
            return self.error(pb.E_INVALID_PARAM, 4, f"no model named '{req.name}' is installed")
        data = []
        self.send(pb.S_WAITING, ack=pb.ackMsg(param=model.inputs[0].nbytes, error=pb.E_NONE))
        for i, buf in enumerate(model.inputs):
            msg = pb.aiDataMsg()
            msg.ParseFromString(self.link.board_receive(5.0))
            if len(msg.datas) != buf.nbytes:
                return self.error(pb.E_INVALID_SIZE, len(msg.datas))
            data.append(msg.datas)
            last = i == len(model.inputs) - 1
            self.send(pb.S_PROCESSING if last else pb.S_WAITING,
                      ack=pb.ackMsg(param=buf.nbytes if last else model.inputs[i + 1].nbytes, error=pb.E_NONE))
        pb.ackMsg().ParseFromString(self.link.board_receive(5.0))
        if self.fault == "disconnect" and self.runs + 1 >= max(self.fault_arg, 1):
            os.close(self.link.port.fd)
            raise Disconnect()
        per_layer = bool(req.param & PER_LAYER)
        model.cpu.set_counting(per_layer, per_layer and bool(req.opt >> 8 & BUSIF_RW_DATA))
        try:
            result = model.infer(data)
        except NpuAccess as e:
            ep = model.current_epoch
            return self.error(pb.E_GENERIC, 0, f"epoch {ep.first if ep else '?'} programs the NPU ({e}): hardware "
                              "epochs are not executable on the simulated board")
        except Fault as e:
            return self.error(pb.E_GENERIC, 0, f"HardFault: {e}")
        self.runs += 1
        totals = [0, 0, 0]
        for run in result.epochs:
            ep = run.epoch
            if per_layer:
                self.log_and_wait(f"s:node:evt_pre_start:0:{ep.first}:{ep.first}:{ep.last}:{ep.flags:08X}:"
                                  f"{ep.kind:08X}:{EPOCH_KINDS[ep.kind]}")
                self.log_and_wait(f"s:node:evt_post_end:0:{ep.first}:{ep.first}:{ep.last}:0")
                counts = [run.start.cycles, 0, run.end.cycles]
                self.log_and_wait("s:node:mcu_cycles:{}:{}:{}".format(*counts))
                self.log_and_wait(f"s:sim:instructions:{run.start.instructions}:{run.end.instructions}")
                for region, (reads, rbytes, writes, wbytes) in sorted(_memory(run).items()):
                    r = next(r for r in model.cpu.regions if r.name == region)   # where: the profile's pool
                    self.log_and_wait(f"s:sim:mem:{region}:{reads}:{rbytes}:{writes}:{wbytes}:{r.base:08X}:{r.size}")
                totals = [t + c for t, c in zip(totals, counts)]
                op = pb.aiOperatorMsg(name=f"EpochBlock_{ep.first}", type=(OP_INTERNAL | OP_WITHOUT_TENSOR) << 24 |
                                      ep.kind, id=ep.last << 16 | ep.first, duration=sum(counts) / MCU_HZ * 1000,
                                      counter_type=1 << 16, counters=counts[:2] if self.fault == "counters" else counts)
                self.send(pb.S_PROCESSING, op=op)
        cpu_all = result.cycles       # counted on every run: IO-only replies carry [0, 0, 0, total, 0]
        words = []
        for v in totals + [cpu_all, 0]:
            words += [v & 0xFFFFFFFF, v >> 32]
        self.send(pb.S_PROCESSING, op=pb.aiOperatorMsg(name=model.name, type=0, id=0,
                                                       duration=cpu_all / MCU_HZ * 1000, counter_type=0,
                                                       counters=words))
        for j, (buf, out) in enumerate(zip(model.outputs, result.outputs)):
            last = j == len(model.outputs) - 1
            t = pb.aiTensorMsg()
            self.describe(buf, TENSOR_OUTPUT | TENSOR_IN_MEMPOOL | (TENSOR_LAST if last else 0)).to_pb(t.desc)
            t.data.CopyFrom(pb.aiDataMsg(type=0, size=len(out), addr=buf.addr, datas=out))
            self.send(pb.S_DONE if last else pb.S_PROCESSING, tensor=t)


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
