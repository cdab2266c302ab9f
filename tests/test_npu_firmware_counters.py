"""Our validation firmware's NPU trace counters (sim/board/n6board/npu_counters.py), read as ST's
aiValidation firmware reads them: the trace-unit counters it programs for each counter option
(ll_aton_dbgtrc.h's signal numbers written here as literal numbers), what it reads back after the
epoch from the NPU model (simulated: each engine's active cycles, ceil(bytes / 8); its bursts of
8 beats of 8 bytes, then one each of 4, 2, 1, engines 0-4 on bus interface 0, 5-9 on 1), and the
report lines of ST's `_log_counters`. The epoch: three copies, STRENG0 → STRENG6 800 bytes (100
cycles, 100 beats), STRENG3 → STRENG2 400 bytes (50), STRENG1 → STRENG8 120 bytes (15: under the
20 cycles the input/output reports list)."""
import pytest

from n6.profiling.messages import BUSIF_RW_DATA, EPOCH_LEN, NPU_CACHE, STRG_ACTIVE, STRG_HENV, STRG_I_ACTIVE, \
    STRG_O_ACTIVE
from n6board.npu_counters import EpochCounters, log_lines
from npu_model.npu import Npu

from test_npu_model import CTRL, DSTSTRENG, EN, LINK_STRENG, STRENG, Ram, raw_engine, route

COPIES = ((0, 6, 800), (3, 2, 400), (1, 8, 120))
IN_MASK, OUT_MASK = 0b1011, 0b1_0100_0100          # the epoch block's masks: engines 0, 1, 3 read; 2, 6, 8 write
EVENT = lambda n: 0x1F040 + 4 * n                   # DEBUG_TRACE EVENT_<n>, EVENT_<n>_CNT
NPU_COUNTS = (300, 200, 100)                        # the epoch's NPU cycles: start, core, end


def run_epoch(option, in_mask=IN_MASK, out_mask=OUT_MASK):
    """The counters of `option` started, the three copies run, the counters stopped and read:
    (EpochCounters, counts, the NPU)."""
    npu = Ram().attach(Npu())
    trace = EpochCounters.for_epoch(option, in_mask, out_mask)
    trace.start(npu)
    for k, (reader, writer, n) in enumerate(COPIES):
        raw_engine(npu, reader, 0x3410_0000 + 0x1000 * k, n, write=False)
        raw_engine(npu, writer, 0x3410_8000 + 0x1000 * k, n, write=True)
        npu.write(DSTSTRENG(writer), route(LINK_STRENG(reader)))
        for unit in (writer, reader):
            npu.write(STRENG(unit) + CTRL, npu.read(STRENG(unit) + CTRL) | EN)
    return trace, trace.stop_and_read(npu), npu


def test_each_option_programs_st_firmwares_counters():
    """SEL bits 13:1, EVENT_TYPE 15:14 (0 while low, 1 while high), INT_DISABLE bit 18, EN bit 0
    cleared once read. From counter 1: I_ACTIVE the ten source-link stalls (2 + engine), O_ACTIVE
    the ten destination-port stalls (83 + engine), ACTIVE those of the masks (per engine, reading
    first), HENV the input engines' handshakes (56 + engine) counted while high. From counter 0,
    interrupts left on: BUSIF_RW_DATA's bursts of 1/2/4/8 beats, interface 0 writes (284, 286,
    288, 290), reads (276...), interface 1 writes (285...), reads (277...)."""
    low, high = 0, 1
    expected = {STRG_I_ACTIVE: (1, [(2 + i, low) for i in range(10)]),
                STRG_O_ACTIVE: (1, [(83 + i, low) for i in range(10)]),
                STRG_ACTIVE: (1, [(2, low), (2 + 1, low), (83 + 2, low), (2 + 3, low), (83 + 6, low), (83 + 8, low)]),
                STRG_HENV: (1, [(56, high), (56 + 1, high), (56 + 3, high)]),
                BUSIF_RW_DATA: (0, [(first + busif + 2 * k, high) for busif, first in ((0, 284), (0, 276), (1, 284),
                                                                                     (1, 276)) for k in range(4)])}
    for option, (first, counters) in expected.items():
        _, _, npu = run_epoch(option | EPOCH_LEN)
        events = [npu.read(EVENT(n)) for n in range(first, first + len(counters))]
        int_disable = option != BUSIF_RW_DATA
        assert events == [signal << 1 | event_type << 14 | int_disable << 18 for signal, event_type in counters]
        assert npu.read(EVENT(first + len(counters))) == 0 and (first == 0 or npu.read(EVENT(0)) == 0)


@pytest.mark.parametrize("option, counts, lines", [
    (STRG_I_ACTIVE, [100, 15, 0, 50, 0, 0, 0, 0, 0, 0],
     ["s:node:streng_active:i:0:100:100", "s:node:streng_active:i:3:50:150", "s:node:streng_active:max:i:0:100"]),
    (STRG_O_ACTIVE, [0, 0, 50, 0, 0, 0, 100, 0, 15, 0],
     ["s:node:streng_active:o:2:50:150", "s:node:streng_active:o:6:100:100", "s:node:streng_active:max:o:6:100"]),
    (STRG_ACTIVE, [100, 15, 50, 50, 100, 15],
     ["s:node:streng_active:i:0:100:100", "s:node:streng_active:i:1:15:185", "s:node:streng_active:o:2:50:150",
      "s:node:streng_active:i:3:50:150", "s:node:streng_active:o:6:100:100", "s:node:streng_active:o:8:15:185",
      "s:node:streng_active:max:i:0:100"]),
    (STRG_HENV, [100, 15, 50],
     ["s:node:streng_henv:i:0:100:100", "s:node:streng_henv:i:1:15:185", "s:node:streng_henv:i:3:50:150"]),
])
def test_the_report_gives_each_engines_active_cycles_as_st_firmware_logs_them(option, counts, lines):
    """The counts read back, in ST's order, and its lines: engine, count, core NPU cycles minus
    the count; the input/output reports list the engines over 20 cycles and the busiest."""
    engines, read, _ = run_epoch(option | EPOCH_LEN | NPU_CACHE)
    assert read == counts
    assert log_lines(option | EPOCH_LEN | NPU_CACHE, NPU_COUNTS, engines, read) == \
        ["s:node:npu_cycles:300:200:100", *lines, "s:node:npu_cache:r:0:0:0:0", "s:node:npu_cache:w:0:0:0:0"]


def test_the_bus_report_gives_each_interfaces_bursts_and_the_bytes_moved():
    """Interface 0 writes STRENG2's 50 beats (6 bursts of 8, 1 of 2) and reads STRENG0's 100
    (12 of 8, 1 of 4), STRENG3's 50 and STRENG1's 15 (8, 4, 2, 1); interface 1 writes STRENG6's
    100 and STRENG8's 15; 1,320 bytes each way. No NPU cycles line with BUSIF_RW_DATA (ST's rule)."""
    trace, read, _ = run_epoch(BUSIF_RW_DATA | EPOCH_LEN)
    assert read == [0, 1, 0, 6, 1, 2, 2, 19, 1, 1, 2, 13, 0, 0, 0, 0]
    assert log_lines(BUSIF_RW_DATA | EPOCH_LEN, NPU_COUNTS, trace, read) == \
        ["s:node:port0:burst:w:0:1:0:6", "s:node:port0:burst:r:1:2:2:19", "s:node:port1:burst:w:1:1:2:13",
         "s:node:port1:burst:r:0:0:0:0", "s:node:portx:burst:rw:1320:1320:2640:0"]


def test_without_a_counter_option_nothing_is_programmed_and_the_lines_stay_st_firmwares():
    """EPOCH_LEN alone: the NPU cycles; an I_ACTIVE epoch where no engine counts over 20: the
    closing line alone."""
    trace, read, npu = run_epoch(EPOCH_LEN)
    assert trace.counters == () and read == [] and npu.read(EVENT(0)) == 0 and npu.read(EVENT(1)) == 0
    assert log_lines(EPOCH_LEN, NPU_COUNTS, trace, read) == ["s:node:npu_cycles:300:200:100"]
    trace = EpochCounters.for_epoch(STRG_I_ACTIVE, 0, 0)
    assert log_lines(STRG_I_ACTIVE, NPU_COUNTS, trace, [20] + [0] * 9) == \
        ["s:node:npu_cycles:300:200:100", "s:node:streng_active:max:i:-1:0"]


def test_an_engine_in_both_masks_is_read_back_once_as_st_firmware_reads_it():
    """ai_wrapper_ATON's _dump_streng_counters(in | out, ...): STRG_ACTIVE programs STRENG0's
    reading and writing counters but reads back one count an engine of in | out, the first."""
    trace, read, npu = run_epoch(STRG_ACTIVE, in_mask=0b1, out_mask=0b1)
    assert [npu.read(EVENT(n)) for n in (1, 2, 3)] == [2 << 1 | 1 << 18, 83 << 1 | 1 << 18, 0]
    assert read == [100]
    assert log_lines(STRG_ACTIVE, NPU_COUNTS, trace, read) == \
        ["s:node:npu_cycles:300:200:100", "s:node:streng_active:i:0:100:100", "s:node:streng_active:max:i:0:100"]
