"""The profile as a console table (tabulate) and as profile.json."""
import json

from tabulate import tabulate

from ..atomic import write_text

HEADERS = ["epoch", "unit", "kind", "time ms", "%", "pre", "core", "post", "ops", "ops/cycle", "MB/s"]


def rows(profile):
    """One list per epoch block (shared by the console and the HTML page)."""
    out = []
    for e in profile.epochs:
        name = e.name if e.index == e.last else f"{e.name}..{e.epochs[-1]}"
        out.append([name, e.unit, e.kind, f"{e.time_ms:.4f}", f"{e.percent:.1f}", *e.mcu_cycles.as_list(),
                    e.ops, f"{e.ops_per_cycle:.2f}", f"{sum(e.bandwidth.values()):.1f}"])
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
    return lines


def table(profile):
    total = ["total", "", "", f"{profile.totals['time_ms']:.4f}", "100.0", *profile.totals["mcu_cycles"],
             profile.totals["ops"], f"{profile.totals['ops_per_cycle']:.2f}", ""]
    text = tabulate(rows(profile) + [total], headers=HEADERS, disable_numparse=True,
                    colalign=("left", "left", "left") + ("right",) * (len(HEADERS) - 3))
    return text + "\n" + "\n".join(summary_lines(profile))


def write_json(path, data):
    write_text(path, json.dumps(data, indent=1, sort_keys=False) + "\n")
