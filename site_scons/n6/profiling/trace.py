"""The profile as a Chrome trace-event timeline (Perfetto, chrome://tracing): one inference on
the MCU track (inference ⊃ epoch blocks ⊃ pre/core/post phases, nested exactly), the NPU's busy
time on its own track, memory traffic per pool as counters (measured, and the compiler's estimate),
and one counter track per NPU bus interface (read and write bytes) beside the bus bandwidth (GB/s
per interface, over the epoch's core NPU cycles). An epoch slice's args carry every counter the
board reported for it."""
from ..jsonfile import JsonObject
from .merge import EpochProfile, Profile


def _counter_args(e: EpochProfile) -> JsonObject:
    args: JsonObject = {}
    if e.npu_cycles is not None:
        args["npu_cycles"] = e.npu_cycles.as_list()
        args["npu_core_percent"] = e.npu_core_percent
    for key in ("bus", "stream_engines", "busiest_engine", "npu_cache"):
        if getattr(e, key) is not None:
            args[key] = getattr(e, key)
    return args


def _tracks(e: EpochProfile) -> dict[str, dict[str, float]]:
    """Counter track name → values of one epoch (a track the epoch has no figures for: absent)."""
    out: dict[str, dict[str, float]] = {}
    if e.measured_memory is not None:
        out["memory traffic (bytes)"] = {p: t.total for p, t in e.measured_memory.items()}
    if e.compiler_memory is not None:
        out["compiler's memory traffic estimate (bytes)"] = {p: t.total for p, t in e.compiler_memory.items()}
    if e.bus is not None:
        ports = [k for k in e.bus if k != "total"]
        for k in ports:
            out[f"bus interface {k[-1]} (bytes)"] = {"read": e.bus[k]["read_bytes"], "write": e.bus[k]["write_bytes"]}
        out["bus bandwidth (GB/s)"] = {k: e.bus[k]["gb_per_s"] or 0.0 for k in ports}
    return out


def _counters(profile: Profile, starts: list[float], end: float) -> list[JsonObject]:
    """Counter events: each track's values at each epoch's start (0 for a series the epoch lacks),
    all back to 0 at the end of the inference."""
    per_epoch = [_tracks(e) for e in profile.epochs]
    keys: dict[str, dict[str, float]] = {}
    for tracks in per_epoch:
        for name, values in tracks.items():
            keys.setdefault(name, {}).update(dict.fromkeys(values, 0))
    events = [{"ph": "C", "name": name, "pid": 1, "ts": ts, "args": {**keys[name], **values}}
              for tracks, ts in zip(per_epoch, starts) for name, values in tracks.items()]
    return events + [{"ph": "C", "name": name, "pid": 1, "ts": end, "args": zero} for name, zero in keys.items()]


def _us(cycles: float, hz: float) -> float:
    return round(cycles * 1e6 / hz, 3)


def trace_events(profile: Profile) -> JsonObject:
    hz = profile.clocks["mcu_freq"]
    where = "simulated board" if profile.simulated else "board"
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0,
               "args": {"name": f"{profile.model} on the {where}"}},
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "MCU"}},
              {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "NPU"}}]
    slices, npu, starts = [], [], []
    cycle = 0
    for e in profile.epochs:
        mcu = e.all_mcu_cycles          # with the folded EXTRA epochs'
        bounds = [cycle, cycle + mcu.pre, cycle + mcu.pre + mcu.core, cycle + mcu.total]
        ts = [_us(b, hz) for b in bounds]
        slices.append({"ph": "X", "name": e.name, "cat": e.unit, "pid": 1, "tid": 1, "ts": ts[0],
                       "dur": round(ts[3] - ts[0], 3),
                       "args": {"kind": e.kind, "unit": e.unit, "epochs": e.epochs, "ops": e.ops,
                                "mcu_cycles": mcu.as_list(), "extra": e.extra, "percent": round(e.percent, 2),
                                **_counter_args(e)}})
        for phase, a, b in zip(("pre", "core", "post"), ts, ts[1:]):
            if b > a:
                slices.append({"ph": "X", "name": phase, "cat": "phase", "pid": 1, "tid": 1, "ts": a,
                               "dur": round(b - a, 3), "args": {"epoch": e.name}})
        if e.unit == "NPU" and ts[2] > ts[1]:
            npu.append({"ph": "X", "name": e.name, "cat": "NPU", "pid": 1, "tid": 2, "ts": ts[1],
                        "dur": round(ts[2] - ts[1], 3), "args": {"kind": e.kind}})
        starts.append(ts[0])
        cycle = bounds[3]
    end = _us(cycle, hz)
    counters = _counters(profile, starts, end)
    root = {"ph": "X", "name": "inference", "cat": "model", "pid": 1, "tid": 1, "ts": 0.0, "dur": end,
            "args": {"model": profile.model, "inf_per_s": round(profile.totals["inf_per_s"], 2)}}
    return {"traceEvents": events + [root] + slices + npu + counters, "displayTimeUnit": "ms"}
