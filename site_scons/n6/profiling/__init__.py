"""Per-epoch profiling: what the board measured (measurement, messages), what the compiler
predicted (cinfo), the two joined (merge), and the reports (report, plot, trace, html, diff)."""
