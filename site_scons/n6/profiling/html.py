"""One self-contained HTML page: the picture (inline SVG), the table, the totals, every NPU counter
per epoch, the diff, and links to the JSON and the trace (Perfetto cannot be embedded in a page
opened from file://)."""
import html
from collections.abc import Sequence
from typing import Any

from ..atomic import write_text
from ..jsonfile import JsonObject
from ..paths import StrPath
from . import details, diff, report
from .merge import Profile

STYLE = """body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;font-size:.9em}td,th{padding:.2em .6em;border-bottom:1px solid #ddd}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f3f3f3}.figure svg{max-width:100%;height:auto}
.sim{color:#a33}"""


def _table(headers: Sequence[object], rows: Sequence[Sequence[object]], numeric_from: int,
           ident: str | None = None) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td{' class=n' if i >= numeric_from else ''}>{html.escape(str(v))}</td>"
                                    for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table{f' id={ident}' if ident else ''}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def page(profile: Profile, svg: str, diff_data: JsonObject | None = None, files: Sequence[str] = ()) -> str:
    svg = svg[svg.index("<svg"):]                       # drop the XML prolog: the SVG sits inline
    where = '<span class="sim">simulated board</span>' if profile.simulated else html.escape(profile.board or "board")
    parts = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{html.escape(profile.model)} profile"
             f"</title><style>{STYLE}</style></head><body>",
             f"<h1>{html.escape(profile.model)}: per-epoch profile</h1><p>Measured on the {where}; "
             f"MCU {profile.clocks['mcu_freq'] / 1e6:.0f} MHz, NPU {profile.clocks['npu_freq'] / 1e6:.0f} MHz"
             + (f"; compiler figures from {html.escape(profile.c_info)}" if profile.c_info else "") + ".</p>",
             "<h2>Totals</h2><ul>" + "".join(f"<li>{html.escape(s)}</li>" for s in report.summary_lines(profile))
             + "</ul>",
             f"<div class=figure>{svg}</div>",
             "<h2>Epochs</h2>" + _table(report.headers(profile), report.rows(profile) + [report.total_row(profile)], 3,
                                        "epochs")]
    parts += [f"<h3>{html.escape(title)}</h3>" + _table(headers, rows, 1) for title, headers, rows in
              details.sections(profile)]
    if diff_data:
        headers, rows = diff.columns(diff_data)
        note = f"<p>{html.escape(diff_data['note'])}</p>" if diff_data.get("note") else ""
        parts.append(f"<h2>Change since {html.escape(diff_data['baseline'])}</h2>{note}" + _table(headers, rows, 1))
    if files:
        parts.append("<p>Files: " + " · ".join(f'<a href="{html.escape(f)}">{html.escape(f)}</a>' for f in files)
                     + " (open the trace in Perfetto or chrome://tracing)</p>")
    return "".join(parts) + "</body></html>\n"


def write(path: StrPath, *args: Any, **kwargs: Any) -> None:
    write_text(path, page(*args, **kwargs))
