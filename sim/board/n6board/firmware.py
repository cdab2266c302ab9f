"""The firmware side of the simulated board: ST's aiValidation reloc firmware's role. Boot reads
the image from the simulated flash, installs it with the project's loader model (checks in
order, ST's error names, XIP or COPY, GOT and REL relocation) into the emulated memory, then
plays the LL_ATON runtime: calls the image's entry table and epoch functions with r9 = the
image's RAM base, and serves the image's calls through the callback table."""
import struct
from dataclasses import dataclass, field

from n6.nn_interface import EpochFlag, read_buffer_infos, read_epoch_blocks
from n6.releases import release
from n6.reloc import callbacks
from n6.reloc.check import MODE_CLEAR, MODE_COPY, MODE_XIP, Config, Firmware, install
from n6.reloc.image import Image, RtCtx, off
from npu_model.npu import NPU_HZ, Npu

from . import library_ops
from .emulator import Counters, Cpu, Fault, NpuStopped, Region
from .npu_counters import EpochCounters

FIRMWARE_BASE = 0x34000000          # the validation firmware's SRAM (callback table, stubs, stack)
MCU_HZ, NOC_HZ, NIC_HZ = 800_000_000, 400_000_000, 900_000_000

# The STM32N6570-DK memory map (deploy-protocol.md §2); a board file may give other values.
DEFAULT_LAYOUT = {
    "network": 0x7100_0000, "params": 0x7180_0000,
    "exec_ram": (0x3406_0000, 640 << 10), "external_ram": (0x9010_0000, 27 << 20),
    "regions": [("firmware", 0x3400_0000, 0x6_0000), ("exec RAM", 0x3406_0000, 640 << 10),
                ("AXISRAM2", 0x3410_0000, 1 << 20), ("npuRAM3", 0x3420_0000, 0x7_0000),
                ("npuRAM4", 0x3427_0000, 0x7_0000), ("npuRAM5", 0x342E_0000, 0x7_0000),
                ("npuRAM6", 0x3435_0000, 0x7_0000), ("xSPI1 PSRAM", 0x9000_0000, 32 << 20)],
}


def layout_from_board(board):
    """DEFAULT_LAYOUT with the addresses of a board file (n6.board.Board)."""
    regions = [("firmware", FIRMWARE_BASE, board.memory.exec_ram.base - FIRMWARE_BASE),
               ("exec RAM", board.memory.exec_ram.base, board.memory.exec_ram.size),
               ("AXISRAM2", 0x3410_0000, 1 << 20)]
    regions += [(r.name, r.base, r.size) for r in board.memory.npu_ram]
    ext, device = board.memory.external_ram, board.memory.external_ram_span   # the loader's part, the whole RAM
    regions.append(("xSPI1 PSRAM", device.base, device.size))
    return {"network": board.images.network, "params": board.images.params,
            "exec_ram": (board.memory.exec_ram.base, board.memory.exec_ram.size),
            "external_ram": (ext.base, ext.size), "regions": regions}


@dataclass
class Buffer:
    name: str
    addr: int
    nbytes: int
    dtype: str
    shape: tuple
    mem_shape: tuple
    scale: float
    zero_point: int
    epoch: int = 0
    itemsize: int = 1     # bytes of one element (nbits / 8)


@dataclass
class Epoch:
    addr: int
    start: int
    end: int
    flags: EpochFlag
    first: int
    last: int
    wait_mask: int = 0      # the stream engines whose end the runtime waits for (a blob's: its controller)
    blob_address: int = 0   # a blob epoch's command blob
    in_streng_mask: int = 0     # the stream engines it reads and writes through (debug info; else 0)
    out_streng_mask: int = 0

    @property
    def kind(self):
        """0 HW, 1 EXTRA, 2 SW, 3 HYBRID, 4 EC (the `aiOperatorMsg.type` low bits), tested in the
        order ST's firmware tests the flags."""
        for flag, kind in ((EpochFlag.BLOB, 4), (EpochFlag.PURE_SW, 2), (EpochFlag.HYBRID, 3),
                           (EpochFlag.INTERNAL, 1)):
            if flag in self.flags:
                return kind
        return 0


@dataclass
class EpochRun:
    epoch: Epoch
    start: Counters
    end: Counters
    npu_cycles: int = 0     # the NPU model's, simulated
    trace: EpochCounters = EpochCounters()      # the NPU's trace counters read around it
    trace_counts: tuple = ()                     # what they counted (simulated)

    @property
    def wait_cycles(self):
        """MCU cycles the runtime waits for the epoch's chains between start and end."""
        return self.npu_cycles * MCU_HZ // NPU_HZ


@dataclass
class Inference:
    outputs: list
    epochs: list = field(default_factory=list)

    @property
    def cycles(self):
        return sum(e.start.cycles + e.wait_cycles + e.end.cycles for e in self.epochs)


class InstalledModel:
    """An image installed by the loader model and ready to run in the emulated CPU."""

    def __init__(self, data, params=None, layout=None, core="2.2", mode="COPY", count=False, board_firmware=None,
                 npu_model="stop", flash=()):
        """`flash`: [(address, bytes)] more of the memory-mapped flash the image reads (its
        absolute flash pools, where `scons flash` put them)."""
        layout = layout or DEFAULT_LAYOUT
        rel = release(core)
        self.img = Image.parse(data, params=params)
        # ST's prebuilt firmware of the release (secure, dbg info, async), or the board file's [firmware]
        fw = board_firmware or Firmware(rel.core)
        exec_ram, ext_ram = layout["exec_ram"], layout["external_ram"]
        split = self.img.header.params_offset == 0
        cfg = Config(exec_ram[0], exec_ram[1], ext_ram[0], ext_ram[1], layout["params"] if split else 0,
                     (MODE_XIP if mode == "XIP" else MODE_COPY) | MODE_CLEAR)
        # the loader does not check the params CRC-32 (only our image checker does)
        self.installed = install(data, layout["network"], cfg, fw, params if split else None, verify_params=False)
        self.mode = mode
        files = [Region("xSPI2 flash", layout["network"], len(data))]
        if split and params is not None:
            files.append(Region("xSPI2 flash (params)", layout["params"], len(params)))
        flash = [(at, raw) for at, raw in flash     # where the image lies, the flash holds the image
                 if not any(at < r.base + r.size and r.base < at + len(raw) for r in files)]
        regions = [Region(*r) for r in layout["regions"]] + files + \
            [Region("xSPI2 flash (absolute pool)", at, len(raw)) for at, raw in flash]
        self.table = callbacks.table(core)
        services = [(name, self._service(name)) for name in self.table]
        self.current_epoch = None
        self.npu = Npu(mode=npu_model)
        self.npu.epoch_label = lambda: f"epoch {self.current_epoch.first}" if self.current_epoch else "initialisation"
        self.cpu = Cpu(regions, FIRMWARE_BASE, services, count, npu=self.npu)
        self.npu.write_memory, self.npu.read_memory = self.cpu.write, self.cpu.read
        for base, buf in self.installed.memory.regions:
            self.cpu.write(base, buf)
        for at, raw in flash:
            self.cpu.write(at, raw)
        self.cpu.emulate_long_shifts(self.installed.ro_base, off(self.img.header.data_data))
        self.r9 = self.installed.ram_base
        rt = self.r9 + off(self.img.header.rt_ctx)
        self.cpu.write(rt + 4 * 4, struct.pack("<I", self.cpu.table))            # cbs
        self.cpu.write(rt + 4 * 15, struct.pack("<I", FIRMWARE_BASE + 0x80))     # ll_instance
        self.rt_ctx = RtCtx.parse(self.cpu.read(rt, RtCtx.SIZE), 0)
        self.name = self.cpu.c_string(self.installed.ro_base + off(self.img.rt_ctx.c_name))
        self.runtime_desc = self.cpu.c_string(self.installed.ro_base + off(self.img.rt_ctx.rt_version_desc))
        self.entry = lambda name: self.installed.ro_base + off(self.img.header.words[name])
        self.cpu.call(self.entry("ec_network_init"), r9=self.r9)
        self.inputs = self._buffers("get_input_buffers_info")
        self.outputs = self._buffers("get_output_buffers_info")
        self.internals = self._buffers("get_internal_buffers_info")
        self.epochs = self._epochs()
        self.npu.locate = self.buffer_at

    def _service(self, name):
        if name == "assert_func":
            def assert_func(cpu, file, line, func, expr):
                raise Fault(f"assert failed: {cpu.c_string(file)}:{line} {cpu.c_string(func)}: "
                            f"{cpu.c_string(expr)}", 0)
            return assert_func
        if name == "ll_lib_error":
            return lambda cpu, code, line, func: _raise(Fault(f"LL_ATON lib error {code} in "
                                                              f"{cpu.c_string(func)}:{line}", 0))
        if name in callbacks.CACHE_OPS:
            return lambda cpu, *args: None      # no caches in the emulated memory system
        if name in library_ops.OPS:
            return library_ops.OPS[name]
        if name.startswith("ll_aton_lib_"):
            return lambda cpu, *args: self._library_op(name)
        return lambda cpu, *args: _raise(Fault(f"firmware service {name} is not provided by the simulated board",
                                               0))

    def _library_op(self, name):
        """An LL_ATON library operation the firmware carries out (its DMA forms program stream
        engines): not modelled here. It stops the run in one line, or in control mode returns OK
        with its output left as it was, listed as not computed."""
        label = self.npu.epoch_label()
        if self.npu.mode != "control":
            raise NpuStopped(f"{label}: {name} (a runtime library operation) is not modelled "
                             "(NPU_MODEL=control runs on with its outputs not computed)", 0)
        self.npu.not_computed.append({"epoch": label, "units": [name], "engine": None, "first": None, "end": None,
                                      "bytes": None, "location": "its output buffer, left as it was"})
        return 0

    def _buffers(self, entry):
        """The input or output buffers of the image's table (parameter buffers are listed only
        with debug info: skipped), where the firmware finds them: LL_Buffer_addr_start."""
        out = []
        for info in read_buffer_infos(self.cpu.read, self.cpu.c_string,
                                      self.cpu.call(self.entry(entry), r9=self.r9)):
            if info.is_param:
                continue
            base = struct.unpack("<I", self.cpu.read(info.addr_base, 4))[0] if info.is_user_allocated \
                else info.addr_base
            out.append(Buffer(info.name, base + info.offset_start, info.nbytes, info.dtype or "uint8", info.shape,
                              info.mem_shape, info.scale[0] if info.scale else 0.0,
                              info.offset[0] if info.offset else 0, info.epoch, max(info.nbits // 8, 1)))
        return out

    def _epochs(self):
        blocks = read_epoch_blocks(self.cpu.read, self.cpu.call(self.entry("get_epoch_items"), r9=self.r9),
                                   self.img.flags.dbg_info)
        return [Epoch(eb.address, eb.start_epoch_block, eb.end_epoch_block, eb.flags,
                      i + 1 if eb.epoch_num is None else eb.epoch_num,
                      i + 1 if eb.last_epoch_num is None else eb.last_epoch_num, eb.wait_mask, eb.blob_address,
                      eb.in_streng_mask or 0, eb.out_streng_mask or 0)
                for i, eb in enumerate(blocks)]

    def buffer_at(self, address):
        """The name of the buffer (input, output, internal) or memory region holding `address`."""
        for b in self.inputs + self.outputs + self.internals:
            if b.addr <= address < b.addr + b.nbytes:
                return b.name
        return next((r.name for r in self.cpu.regions if r.base <= address < r.base + r.size), None)

    def _wait_for_npu(self, ep):
        """What the runtime does between an epoch's start and end: a blob epoch's controller is
        given its blob and enabled, its interrupt awaited and the controller cleared; otherwise
        the end-of-frame interrupts of the stream engines in its wait mask are awaited. Both are
        acknowledged."""
        if EpochFlag.BLOB in ep.flags:       # wait_mask: the epoch controller's number
            self._run_blob(ep)
            return
        if not ep.wait_mask:
            return
        ends = ep.wait_mask << self.npu.aton.irqs["STRENG0"]
        missing = ends & ~self.npu.intreg
        if missing:
            engines = ", ".join(f"STRENG{i}" for i in range(32) if missing >> i & 1)
            raise NpuStopped(f"epoch {ep.first}: {engines} never ended: no closed chain of enabled units feeds "
                             "it (the NPU model starts a chain when every unit it connects is enabled), or its "
                             "EVENT register does not enable its end interrupt (EN_OFLOW_FRM)", 0)
        self.npu.acknowledge(ends)

    def _run_blob(self, ep):
        unit = self.npu.aton.units["EPOCHCTRL"]
        ctrl, addr = unit.registers["CTRL"], unit.registers["ADDR"]
        base = unit.instance_base(ep.wait_mask)
        for offset, value in ((ctrl.offset, ctrl.reset), (addr.offset, ep.blob_address),
                              (ctrl.offset, ctrl.field("EN").put(ctrl.reset, 1))):
            self.npu.write(base + offset, value)
            if self.npu.stopped:
                raise NpuStopped(self.npu.stopped, 0)
        bit = 1 << self.npu.aton.irqs[f"EPOCHCTRL{ep.wait_mask}"]
        if not self.npu.intreg & bit:
            raise NpuStopped(f"epoch {ep.first}: the epoch controller's blob never raised its interrupt", 0)
        self.npu.acknowledge(bit)
        for name in ("CLR", "CONFCLR"):
            self.npu.write(base + ctrl.offset, ctrl.field(name).put(ctrl.reset, 1))

    def infer(self, inputs, counter_option=0):
        """One inference: write the inputs, inference init, every epoch's start and end function
        (r9 = RAM base), the NPU model's chains between them, read the outputs; around each epoch
        the NPU trace counters of `counter_option` (npu_counters.py). Fault/NpuStopped
        propagate."""
        self.npu.begin_inference()
        for buf, data in zip(self.inputs, inputs):
            self.cpu.write(buf.addr, data)
        self.cpu.call(self.entry("ec_inference_init"), r9=self.r9)
        result = Inference([])
        for ep in self.epochs:
            self.current_epoch = ep
            counters = []
            npu_cycles = self.npu.cycles
            trace = EpochCounters.for_epoch(counter_option, ep.in_streng_mask, ep.out_streng_mask)
            trace.start(self.npu)
            for fn, then in ((ep.start, self._wait_for_npu), (ep.end, lambda ep: None)):
                self.cpu.counters = Counters()
                if fn:
                    self.cpu.call(fn, ep.addr, r9=self.r9)
                counters.append(self.cpu.counters)
                then(ep)
            result.epochs.append(EpochRun(ep, *counters, self.npu.cycles - npu_cycles, trace,
                                          tuple(trace.stop_and_read(self.npu))))
        self.current_epoch = None
        result.outputs = [self.cpu.read(b.addr, b.nbytes) for b in self.outputs]
        return result


def _raise(e):
    raise e
