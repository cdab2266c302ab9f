"""The profile as a Chrome trace-event timeline (Perfetto, chrome://tracing): one inference on
the MCU track (inference ⊃ epoch blocks ⊃ pre/core/post phases, nested exactly), the NPU's busy
time on its own track, and memory traffic per pool as counters."""


def _us(cycles, hz):
    return round(cycles * 1e6 / hz, 3)


def trace_events(profile):
    hz = profile.clocks["mcu_freq"]
    where = "simulated board" if profile.simulated else "board"
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0,
               "args": {"name": f"{profile.model} on the {where}"}},
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "MCU"}},
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "NPU"}}]
    slices, npu, counters = [], [], []
    cycle = 0
    for e in profile.epochs:
        bounds = [cycle, cycle + e.mcu_cycles.pre, cycle + e.mcu_cycles.pre + e.mcu_cycles.core,
                  cycle + e.mcu_cycles.total]
        ts = [_us(b, hz) for b in bounds]
        slices.append({"ph": "X", "name": e.name, "cat": e.unit, "pid": 1, "tid": 1, "ts": ts[0],
                       "dur": round(ts[3] - ts[0], 3),
                       "args": {"kind": e.kind, "unit": e.unit, "epochs": e.epochs, "ops": e.ops,
                                "mcu_cycles": e.mcu_cycles.as_list(), "percent": round(e.percent, 2)}})
        for phase, a, b in zip(("pre", "core", "post"), ts, ts[1:]):
            if b > a:
                slices.append({"ph": "X", "name": phase, "cat": "phase", "pid": 1, "tid": 1, "ts": a,
                               "dur": round(b - a, 3), "args": {"epoch": e.name}})
        if e.unit == "NPU" and ts[2] > ts[1]:
            npu.append({"ph": "X", "name": e.name, "cat": "NPU", "pid": 1, "tid": 2, "ts": ts[1],
                        "dur": round(ts[2] - ts[1], 3), "args": {"kind": e.kind}})
        counters.append({"ph": "C", "name": "memory traffic (bytes)", "pid": 1, "ts": ts[0],
                         "args": {p: t.total for p, t in (e.traffic or {}).items()} or {"none": 0}})
        cycle = bounds[3]
    end = _us(cycle, hz)
    counters.append({"ph": "C", "name": "memory traffic (bytes)", "pid": 1, "ts": end,
                     "args": {p: 0 for p in counters[-1]["args"]} if counters else {"none": 0}})
    root = {"ph": "X", "name": "inference", "cat": "model", "pid": 1, "tid": 1, "ts": 0.0, "dur": end,
            "args": {"model": profile.model, "inf_per_s": round(profile.totals["inf_per_s"], 2)}}
    return {"traceEvents": events + [root] + slices + npu + counters, "displayTimeUnit": "ms"}
