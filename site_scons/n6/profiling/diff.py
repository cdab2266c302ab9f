"""Per-epoch comparison of two profile.json files (time and bandwidth), largest change first."""
from tabulate import tabulate

from ..errors import N6Error
from ..jsonfile import read_json


def read_profile(path):
    data = read_json(path, "profile.json", lenient=False)
    try:
        for e in data["epochs"]:
            float(e["time_ms"]), e["name"], _mb_per_s(e)
        float(data["totals"]["time_ms"])
    except (KeyError, TypeError, ValueError):
        raise N6Error(path, "not a profile.json written by `scons profile`",
                      "give PROFILE_BASELINE a profile.json from build/<model>/profile/") from None
    return data


def _mb_per_s(epoch):
    """None when nothing counted the epoch's traffic (no memory counters, no c_info.json)."""
    return None if epoch["bandwidth"] is None else sum(epoch["bandwidth"].values())


def _delta(before, after):
    d = {"before": before, "after": after}
    if before is not None and after is not None:
        d["delta"] = after - before
        d["percent"] = (after - before) * 100 / before if before else None
    return d


def diff(before, after, baseline_path):
    """before/after: profile dicts. Epochs are matched by name; added/removed ones count fully."""
    old = {e["name"]: e for e in before["epochs"]}
    new = {e["name"]: e for e in after["epochs"]}
    entries = []
    for name in list(dict.fromkeys([*new, *old])):
        b, a = old.get(name), new.get(name)
        t = _delta(b["time_ms"] if b else None, a["time_ms"] if a else None)
        t["delta"] = t.get("delta", (a["time_ms"] if a else 0.0) - (b["time_ms"] if b else 0.0))
        entries.append({"name": name, "status": "added" if b is None else "removed" if a is None else "both",
                        "time_ms": t, "mb_per_s": _delta(b and _mb_per_s(b), a and _mb_per_s(a))})
    entries.sort(key=lambda e: -abs(e["time_ms"]["delta"]))
    return {"model": after["model"], "baseline": str(baseline_path), "epochs": entries,
            "total": {"time_ms": _delta(before["totals"]["time_ms"], after["totals"]["time_ms"]),
                      "inf_per_s": _delta(before["totals"]["inf_per_s"], after["totals"]["inf_per_s"])}}


def _num(v, fmt):
    return "-" if v is None else format(v, fmt)


def table(d):
    rows = []
    for e in d["epochs"]:
        t, bw = e["time_ms"], e["mb_per_s"]
        rows.append([e["name"] + ("" if e["status"] == "both" else f" ({e['status']})"), _num(t["before"], ".4f"),
                     _num(t["after"], ".4f"), _num(t["delta"], "+.4f"), _num(t.get("percent"), "+.1f"),
                     _num(bw["before"], ".1f"), _num(bw["after"], ".1f"), _num(bw.get("delta"), "+.1f")])
    t = d["total"]["time_ms"]
    rows.append(["total", _num(t["before"], ".4f"), _num(t["after"], ".4f"), _num(t["delta"], "+.4f"),
                 _num(t.get("percent"), "+.1f"), "", "", ""])
    return f"compared with {d['baseline']}\n" + tabulate(
        rows, headers=["epoch", "before ms", "after ms", "Δ ms", "Δ %", "before MB/s", "after MB/s", "Δ MB/s"],
        disable_numparse=True, colalign=("left",) + ("right",) * 7)
