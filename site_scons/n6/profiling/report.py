"""The profile as a console table (tabulate) and as profile.json."""
import json

from tabulate import tabulate

from ..atomic import write_text

HEADERS = ["epoch", "unit", "kind", "time ms", "%", "pre", "core", "post", "ops", "ops/cycle", "MB/s"]
COMPILER_COLUMNS = ("ops", "ops/cycle")


def _keep(profile, row):
    """The cells of `row` (one per HEADERS) without those of c_info.json when the profile has none."""
    return [v for h, v in zip(HEADERS, row) if profile.c_info or h not in COMPILER_COLUMNS]


def headers(profile):
    return _keep(profile, HEADERS)


def rows(profile):
    """One list per epoch block (shared by the console and the HTML page)."""
    out = []
    for e in profile.epochs:
        name = e.name if e.index == e.last else f"{e.name}..{e.epochs[-1]}"
        out.append(_keep(profile, [name, e.unit, e.kind, f"{e.time_ms:.4f}", f"{e.percent:.1f}",
                                   *e.mcu_cycles.as_list(), e.ops, profile.c_info and f"{e.ops_per_cycle:.2f}",
                                   "" if e.bandwidth is None else f"{sum(e.bandwidth.values()):.1f}"]))
    return out


def summary_lines(profile):
    t = profile.totals
    pre, core, post = t["mcu_cycles"]
    board = "simulated board" if profile.simulated else "board"
    lines = [f"total {t['time_ms']:.4f} ms [{pre:,} {core:,} {post:,}] MCU cycles "
             f"[{t['phase_percent'][0]:.1f}% {t['phase_percent'][1]:.1f}% {t['phase_percent'][2]:.1f}%]",
             f"{t['inf_per_s']:.2f} inf/s on the {board} (CPU {t['cpu_ms']:.4f} ms, NPU {t['npu_ms']:.4f} ms)"]
    if t["max_cycles"]:
        lines.append(f"compiler: {t['ops']:,} ops, {t['max_cycles']:,} max cycles → {t['compiler_inf_per_s']:.1f} "
                     f"inf/s, ideal {t['compiler_ideal_inf_per_s']:.1f} inf/s")
    absent = sorted({k for e in profile.epochs for k in e.absent})
    if absent:
        lines.append("not reported by the board: " + ", ".join(absent))
    if profile.compiler_absent:
        lines.append(profile.compiler_absent)
    return lines


def table(profile):
    t = profile.totals
    total = _keep(profile, ["total", "", "", f"{t['time_ms']:.4f}", "100.0", *t["mcu_cycles"], t["ops"],
                            profile.c_info and f"{t['ops_per_cycle']:.2f}", ""])
    columns = headers(profile)
    text = tabulate(rows(profile) + [total], headers=columns, disable_numparse=True,
                    colalign=("left", "left", "left") + ("right",) * (len(columns) - 3))
    return text + "\n" + "\n".join(summary_lines(profile))


def write_json(path, data):
    write_text(path, json.dumps(data, indent=1, sort_keys=False) + "\n")
