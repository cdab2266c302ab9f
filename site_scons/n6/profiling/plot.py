"""The profile as a picture: per-epoch time bars split into pre/core/post (CPU blocks blue, NPU
blocks orange) above the bandwidth over each epoch's time: what the board measured (per NPU bus
interface, or per memory region on the simulated board) beside the compiler's estimate (per pool,
hatched), one colour per pool or region name in both. matplotlib is imported here only, when a
picture is drawn."""
from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from ..atomic import write_bytes
from .merge import EpochProfile, Profile

if TYPE_CHECKING:                 # matplotlib is imported when a picture is drawn
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap
    from matplotlib.figure import Figure

Bars = list[tuple[str, list[dict[str, float]]]]   # [(group, [per epoch: series → MB/s])]

SHADES = {"CPU": ("#9ecae1", "#3182bd", "#c6dbef"), "NPU": ("#fdae6b", "#e6550d", "#fdd0a2")}
# bandwidth bar group → (hatch, its legend entry): the colour says the pool, the hatch whose figure
GROUPS = {"measured": (None, "measured"), "estimate": ("//", "compiler's estimate")}


def _measured(e: EpochProfile) -> dict[str, int] | None:
    """What the MB/s column counts when the board measured it: bytes per memory region of the
    simulated board, or per NPU bus interface (None: not measured)."""
    if e.traffic_source not in ("memory", "bus"):
        return None
    return {k.replace("busif", "busif ") if e.traffic_source == "bus" else k: t.total
            for k, t in e.traffic.items()}   # type: ignore[union-attr]  # a measured source has its traffic


def _estimate(e: EpochProfile) -> dict[str, int] | None:
    return None if e.compiler_memory is None else {p: t.total for p, t in e.compiler_memory.items()}


def bandwidth_bars(profile: Profile) -> Bars:
    """The lower panel's bar groups: [(label, [per epoch: series → MB/s over the epoch's time])],
    the measured one first; a group nothing counted is left out."""
    groups = [(label, [{k: nbytes / 1e3 / e.time_ms for k, nbytes in (of(e) or {}).items()}   # B/ms/1e3 = MB/s
                       for e in profile.epochs]) for label, of in (("measured", _measured), ("estimate", _estimate))]
    return [(label, per_epoch) for label, per_epoch in groups if any(per_epoch)]


def colours(bars: Bars, cmap: Callable[[str], Colormap]) -> dict[str, tuple[float, float, float, float]]:
    """series name → colour: one per memory pool, region or bus interface, the same in the measured
    and the estimated bars (a pool's measured and estimated traffic side by side), distinct names
    distinct colours (in order of first appearance, the palette's length at the most)."""
    names = list(dict.fromkeys(k for _, per_epoch in bars for mbps in per_epoch for k in mbps))
    palette = cmap("tab10" if len(names) <= 10 else "tab20")
    return {name: palette(i % palette.N) for i, name in enumerate(names)}


def _time_panel(ax: Axes, profile: Profile, x: Sequence[int], unit: str, scale: float) -> None:
    hz = profile.clocks["mcu_freq"]
    base = [0.0] * len(profile.epochs)
    for i, phase in enumerate(("pre", "core", "post")):
        t = [getattr(e.all_mcu_cycles, phase) * scale / hz for e in profile.epochs]
        ax.bar(x, t, bottom=base, color=[SHADES[e.unit][i] for e in profile.epochs], edgecolor="white", linewidth=0.5)
        base = [b + v for b, v in zip(base, t)]
    if max(base) > 0:       # a stacked bar's top is a sticky edge (no margin): room above the tallest
        ax.set_ylim(0, max(base) * 1.05)
    ax.set_ylabel(f"time per inference ({unit})")


def _pyplot() -> ModuleType:
    import matplotlib
    matplotlib.use("Agg")           # files only, no display, before pyplot picks one
    import matplotlib.pyplot as plt
    return plt


def figure(profile: Profile) -> Figure:
    """The matplotlib figure (legends beside the panels, never over a bar)."""
    plt = _pyplot()
    from matplotlib.patches import Patch

    names = [e.block for e in profile.epochs]
    x = range(len(names))
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(max(9.5, 0.55 * len(names) + 4), 6.5),
                                      gridspec_kw={"height_ratios": [3, 2]}, layout="constrained")
    unit, scale = ("µs", 1e6) if max(e.time_ms for e in profile.epochs) < 0.1 else ("ms", 1e3)
    _time_panel(top, profile, x, unit, scale)
    where = "simulated board" if profile.simulated else "board"
    top.set_title(f"{profile.model}: {profile.totals['time_ms'] * scale / 1e3:.4g} {unit} per inference, "
                  f"{profile.totals['inf_per_s']:.1f} inf/s ({where})", fontsize="medium")
    units = [u for u in ("CPU", "NPU") if any(e.unit == u for e in profile.epochs)]
    top.legend(handles=[Patch(color=SHADES[u][i], label=f"{u} {p}") for u in units
                        for i, p in enumerate(("pre", "core", "post"))], fontsize="small", loc="upper left",
               bbox_to_anchor=(1.01, 1))
    bars = bandwidth_bars(profile)
    colour = colours(bars, plt.get_cmap)
    width = 0.8 / max(1, len(bars))
    for k, (label, per_epoch) in enumerate(bars):
        hatch = GROUPS[label][0]
        offset = (k - (len(bars) - 1) / 2) * width
        base = [0.0] * len(names)
        for key in dict.fromkeys(p for mbps in per_epoch for p in mbps):
            v = [mbps.get(key, 0.0) for mbps in per_epoch]
            bottom.bar([i + offset for i in x], v, width, bottom=base, color=colour[key], hatch=hatch,
                       edgecolor="white", linewidth=0.5, label=f"{label}: {key}")
            base = [b + u for b, u in zip(base, v)]
    bottom.set_ylabel("bandwidth (MB/s over the epoch)")
    if bars:
        kinds = [Patch(facecolor="white", edgecolor="grey", hatch=GROUPS[label][0], label=GROUPS[label][1])
                 for label, _ in bars]
        bottom.legend(handles=[Patch(color=c, label=name) for name, c in colour.items()] + kinds, fontsize="small",
                      loc="upper left", bbox_to_anchor=(1.01, 1))
    bottom.set_xticks(list(x), names, rotation=45 if len(names) > 6 else 0, ha="right" if len(names) > 6 else "center")
    return fig


def draw(profile: Profile, svg_path: str, png_path: str) -> str:
    """Write the SVG and the PNG; returns the SVG text (the HTML page embeds it)."""
    plt = _pyplot()
    plt.rcParams["svg.hashsalt"] = "n6-profile"          # stable element ids: same profile, same bytes
    fig = figure(profile)
    svg = io.BytesIO()
    fig.savefig(svg, format="svg", metadata={"Date": None})
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    write_bytes(svg_path, svg.getvalue())
    write_bytes(png_path, png.getvalue())
    return svg.getvalue().decode()
