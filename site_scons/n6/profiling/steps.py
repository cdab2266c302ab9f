"""The report step as the build runs it: measurement.json + c_info.json → every report in the
profile folder, the console table, and the diff against a baseline profile."""
import os
from collections.abc import Callable

from ..atomic import write_text
from ..errors import N6Error
from ..jsonfile import JsonObject, read_json
from . import DETAILS, DIFF, FILES, PREVIOUS, details, diff, html, plot, report, trace
from .cinfo import read_c_info
from .measurement import Measurement
from .merge import Profile, merge


def load_measurement(path: str) -> Measurement:
    return Measurement.from_dict(read_json(path, "measurement", lenient=False), path)


def report_step(measurement_path: str, c_info_path: str, folder: str, baseline: str | None = None,
                name: str | None = None, log: Callable[[str], object] = print) -> tuple[Profile, JsonObject | None]:
    """Write the reports; `baseline` (a profile.json, this folder's own too: it is read before
    being rewritten) defaults to the profile this one replaced."""
    measurement = load_measurement(measurement_path)
    if os.path.exists(c_info_path):
        profile = merge(measurement, read_c_info(c_info_path), name)
    else:                               # ST's profiler goes on without one too
        profile = merge(measurement, None, name, f"no c_info.json at {c_info_path}")
    paths = {f: os.path.join(folder, f) for f in FILES}
    outputs = list(paths.values()) + [os.path.join(folder, DIFF)]
    previous = os.path.join(folder, PREVIOUS)
    if baseline and os.path.abspath(baseline) == os.path.abspath(paths["profile.json"]) and \
            not os.path.exists(baseline):
        baseline = previous         # the stored profile, moved aside by the measurement replacing it
    baseline = baseline or (previous if os.path.exists(previous) else None)
    before = diff.read_profile(baseline) if baseline else None    # a bad one: refused with the reports untouched
    try:
        data = profile.to_dict()
        diff_data = diff.diff(before, data, baseline) if baseline and before is not None else None
        report.write_json(paths["profile.json"], data)
        svg = plot.draw(profile, paths["profile.svg"], paths["profile.png"])
        report.write_json(paths["profile.trace.json"], trace.trace_events(profile))
        html.write(paths["profile.html"], profile, svg, diff_data,
                   files=["profile.json", "profile.trace.json", "profile.png"] + ([DIFF] if diff_data else []))
        text, counters = report.table(profile), details.text(profile)
        if counters:
            text += "\nevery counter per epoch: profile.txt, profile.html"
        if diff_data:
            report.write_json(outputs[-1], diff_data)
            text += "\n\n" + diff.table(diff_data)
        elif os.path.exists(outputs[-1]):
            os.unlink(outputs[-1])
        write_text(paths["profile.txt"], text + (f"\n\n{DETAILS}\n\n{counters}" if counters else "") + "\n")
    except (N6Error, OSError):
        for path in outputs:        # nothing half-written is taken as up to date
            if os.path.exists(path):
                os.unlink(path)
        raise
    log(text)
    return profile, diff_data
