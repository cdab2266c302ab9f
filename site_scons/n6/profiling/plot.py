"""The profile as a picture: per-epoch time bars split into pre/core/post (CPU blocks blue, NPU
blocks orange) above the memory traffic per pool. matplotlib is imported here only, when a
picture is drawn."""
import io

from ..atomic import write_bytes

SHADES = {"CPU": ("#9ecae1", "#3182bd", "#c6dbef"), "NPU": ("#fdae6b", "#e6550d", "#fdd0a2")}


def draw(profile, svg_path, png_path):
    """Write the SVG and the PNG; returns the SVG text (the HTML page embeds it)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    plt.rcParams["svg.hashsalt"] = "n6-profile"          # stable element ids: same profile, same bytes
    names = [e.name for e in profile.epochs]
    x = range(len(names))
    pools = list(dict.fromkeys(p for e in profile.epochs for p in e.traffic or {}))
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(max(7.5, 0.55 * len(names) + 2), 6.5),
                                      gridspec_kw={"height_ratios": [3, 2]})
    hz = profile.clocks["mcu_freq"]
    unit, scale = ("µs", 1e6) if max(e.time_ms for e in profile.epochs) < 0.1 else ("ms", 1e3)
    base = [0.0] * len(names)
    for i, phase in enumerate(("pre", "core", "post")):
        t = [getattr(e.mcu_cycles, phase) * scale / hz for e in profile.epochs]
        top.bar(x, t, bottom=base, color=[SHADES[e.unit][i] for e in profile.epochs], edgecolor="white",
                linewidth=0.5)
        base = [b + v for b, v in zip(base, t)]
    top.set_ylabel(f"time per inference ({unit})")
    where = "simulated board" if profile.simulated else "board"
    top.set_title(f"{profile.model}: {profile.totals['time_ms'] * scale / 1e3:.4g} {unit} per inference, "
                  f"{profile.totals['inf_per_s']:.1f} inf/s ({where})", fontsize="medium")
    units = [u for u in ("CPU", "NPU") if any(e.unit == u for e in profile.epochs)]
    top.legend(handles=[Patch(color=SHADES[u][i], label=f"{u} {p}") for u in units
                        for i, p in enumerate(("pre", "core", "post"))], ncol=len(units), fontsize="small")
    base = [0.0] * len(names)
    colors = plt.get_cmap("Set2")
    for j, pool in enumerate(pools):
        for part, hatch in (("reads", None), ("writes", "//")):
            kb = [getattr(e.traffic[pool], part) / 1e3 if pool in (e.traffic or {}) else 0.0 for e in profile.epochs]
            bottom.bar(x, kb, bottom=base, color=colors(j % 8), hatch=hatch, edgecolor="white", linewidth=0.5,
                       label=f"{pool} {part}")
            base = [b + v for b, v in zip(base, kb)]
    bottom.set_ylabel("memory traffic (KB, writes hatched)")
    if pools:
        bottom.legend(fontsize="small")
    bottom.set_xticks(list(x), names, rotation=45 if len(names) > 6 else 0, ha="right" if len(names) > 6 else "center")
    fig.tight_layout()
    svg = io.BytesIO()
    fig.savefig(svg, format="svg", metadata={"Date": None})
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    write_bytes(svg_path, svg.getvalue())
    write_bytes(png_path, png.getvalue())
    return svg.getvalue().decode()
