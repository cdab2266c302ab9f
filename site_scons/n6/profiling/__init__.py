"""Per-epoch profiling: what the board measured (measurement, messages), what the compiler
predicted (cinfo), the two joined (merge), and the reports (report, plot, trace, html, diff)."""

# The report step's file names, here so that declaring the step imports none of the report code.
FILES = ("profile.json", "profile.svg", "profile.png", "profile.trace.json", "profile.html", "profile.txt")
PREVIOUS = "profile.previous.json"
DIFF = "profile.diff.json"
