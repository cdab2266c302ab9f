"""Per-epoch comparison of two profile.json files (time, bandwidth and the NPU's counters),
largest time change first. A figure one profile lacks (not counted, or a profile written before
the figure existed) compares as None."""
from typing import Any

from tabulate import tabulate

from ..errors import N6Error
from ..jsonfile import JsonObject, read_json
from ..paths import StrPath


def read_profile(path: StrPath) -> JsonObject:
    data = read_json(path, "profile.json", lenient=False)
    try:
        for e in data["epochs"]:
            float(e["time_ms"]), e["name"], _mb_per_s(e)
        float(data["totals"]["time_ms"])
    except (KeyError, TypeError, ValueError):
        raise N6Error(path, "not a profile.json written by `scons profile`",
                      "give PROFILE_BASELINE a profile.json from build/<model>/profile/") from None
    return data


def _mb_per_s(epoch: JsonObject) -> float | None:
    """None when nothing counted the epoch's traffic (no memory counters, no c_info.json)."""
    return None if epoch["bandwidth"] is None else sum(epoch["bandwidth"].values())


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict) or d.get(k) is None:
            return None
        d = d[k]
    return d


def _bus_bytes(d: JsonObject) -> int | None:
    t = _get(d, "bus", "total")
    return None if t is None else t["read_bytes"] + t["write_bytes"]


def _cache(d: JsonObject, a: str, b: str) -> int | None:
    c = d.get("npu_cache")
    return None if c is None else c[a] + c[b]


# The NPU counter figures compared, of an epoch or of the totals: key → (column label, format, value)
FIGURES = {
    "npu_core_cycles": ("NPU core", "+,d", lambda d: d["npu_core_cycles"] if "npu_core_cycles" in d
                        else _get(d, "npu_cycles", "core")),
    "bus_bytes": ("bus B", "+,d", _bus_bytes),
    "bus_gb_per_s": ("bus GB/s", "+.3f", lambda d: _get(d, "bus", "total", "gb_per_s")),
    "busiest_engine_percent": ("busiest engine %", "+.1f", lambda d: _get(d, "busiest_engine", "percent")),
    "cache_hits": ("cache hits", "+,d", lambda d: _cache(d, "r_hit", "w_hit")),
    "cache_misses": ("cache misses", "+,d", lambda d: _cache(d, "r_miss", "w_miss")),
}


def _delta(before: float | None, after: float | None) -> dict[str, float | None]:
    d = {"before": before, "after": after}
    if before is not None and after is not None:
        d["delta"] = after - before
        d["percent"] = (after - before) * 100 / before if before else None
    return d


def _figures(b: JsonObject | None, a: JsonObject | None) -> dict[str, dict[str, float | None]]:
    return {k: _delta(b and f(b), a and f(a)) for k, (_, _, f) in FIGURES.items()}   # type: ignore[arg-type]  # b, a: None or not empty


def other_model(before: JsonObject, after: JsonObject) -> str | None:
    """One line when the baseline profiles another model (comparing two models can be meant, so
    it is said, not refused; epochs of the same name are then different layers), else None."""
    old, new = before.get("model"), after.get("model")
    if old == new:
        return None
    return f"the baseline is a profile of {old or 'an unnamed model'}, not of {new}: epochs are matched by name only"


def diff(before: JsonObject, after: JsonObject, baseline_path: StrPath) -> JsonObject:
    """before/after: profile dicts. Epochs are matched by name; added/removed ones count fully."""
    old = {e["name"]: e for e in before["epochs"]}
    new = {e["name"]: e for e in after["epochs"]}
    entries = []
    for name in list(dict.fromkeys([*new, *old])):
        b, a = old.get(name), new.get(name)
        t = _delta(b["time_ms"] if b else None, a["time_ms"] if a else None)
        t["delta"] = t.get("delta", (a["time_ms"] if a else 0.0) - (b["time_ms"] if b else 0.0))
        entries.append({"name": name, "status": "added" if b is None else "removed" if a is None else "both",
                        "time_ms": t, "mb_per_s": _delta(b and _mb_per_s(b), a and _mb_per_s(a)),
                        **_figures(b, a)})
    entries.sort(key=lambda e: -abs(e["time_ms"]["delta"]))
    tb, ta = before["totals"], after["totals"]
    return {"model": after["model"], "baseline": str(baseline_path), "baseline_model": before.get("model"),
            "note": other_model(before, after), "epochs": entries,
            "total": {"time_ms": _delta(tb["time_ms"], ta["time_ms"]),
                      "inf_per_s": _delta(tb["inf_per_s"], ta["inf_per_s"]), **_figures(tb, ta)}}


def _num(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def columns(d: JsonObject) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of the diff: time and MB/s, then the change of each counter figure either
    profile has."""
    shown = [k for k in FIGURES if any(e[k]["before"] is not None or e[k]["after"] is not None
                                       for e in [*d["epochs"], d["total"]] if k in e)]
    rows: list[list[str]] = []
    for e in [*d["epochs"], {**d["total"], "name": "total", "status": "both", "mb_per_s": {}}]:
        t, bw = e["time_ms"], e["mb_per_s"]
        rows.append([e["name"] + ("" if e["status"] == "both" else f" ({e['status']})"), _num(t["before"], ".4f"),
                     _num(t["after"], ".4f"), _num(t.get("delta"), "+.4f"), _num(t.get("percent"), "+.1f"),
                     _num(bw.get("before"), ".1f"), _num(bw.get("after"), ".1f"), _num(bw.get("delta"), "+.1f"),
                     *(_num(e[k].get("delta"), FIGURES[k][1]) for k in shown)])
    rows[-1][5:8] = ["", "", ""]
    return ["epoch", "before ms", "after ms", "Δ ms", "Δ %", "before MB/s", "after MB/s", "Δ MB/s",
            *(f"Δ {FIGURES[k][0]}" for k in shown)], rows


def table(d: JsonObject) -> str:
    headers, rows = columns(d)
    note = f"{d['note']}\n" if d.get("note") else ""
    return f"compared with {d['baseline']}\n{note}" + tabulate(rows, headers=headers, disable_numparse=True,
                                                         colalign=("left",) + ("right",) * (len(headers) - 1))
