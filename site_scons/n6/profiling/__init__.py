"""Per-epoch profiling: what the board measured (measurement, messages), what the compiler
predicted (cinfo), the two joined (merge), and the reports (report, plot, trace, html, diff)."""

# The report step's file names, here so that declaring the step imports none of the report code.
FILES = ("profile.json", "profile.svg", "profile.png", "profile.trace.json", "profile.html", "profile.txt")
PREVIOUS = "profile.previous.json"
DIFF = "profile.diff.json"
# profile.txt: what the console shows, then this heading and the counter tables (details)
DETAILS = "Every counter per epoch"


def console_part(text: str) -> str:
    """What `scons profile` prints of a profile.txt: all but the counter tables."""
    head, sep, _ = text.partition("\n\n" + DETAILS + "\n")
    return head + "\n" if sep else text
