"""Running `stedgeai generate` for the build: its command line from the normalised options, and
what a run that did not end well becomes (one line naming the model, the tool's last line, its
output shown above; nothing it wrote left behind)."""
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import N6Error
from .tool_runner import ToolResult

GenerateArgs = Mapping[str, Any]   # the normalised generate options (the build's Value node)


def _generate_argv(args: GenerateArgs, outdir: str) -> list[str]:
    argv = [args["tool"], "generate", "-m", args["model"], "--target", "stm32n6",
            "--st-neural-art", f"{args['profile']}@{args['profile_file']}",
            "-o", outdir, "-w", os.path.join(os.path.dirname(outdir), "st_ai_ws")]
    if args["name"]:
        argv += ["-n", args["name"]]
    for key in ("input_data_type", "output_data_type"):
        if args[key]:
            argv += ["--" + key.replace("_", "-"), args[key]]
    return argv + args["extra"]


def run_generate(args: GenerateArgs, targets: Sequence[str], verbose: bool, timeout: float,
                 say: Callable[[str], object]) -> None:
    """Run `stedgeai generate` with the normalised options `args` (the build's Value node) into
    the folder of `targets` (the files it must write, network.c first). A run that fails, times
    out, or leaves a target missing or damaged: its output shown, whatever it wrote removed, one
    N6Error raised."""
    from .reloc.prepare import check_generated
    from .tool_runner import ToolRunner
    for warning in args["warnings"]:
        say(f"  WARNING  {warning}")
    runner = ToolRunner(verbose=verbose, timeout=timeout, echo=say)
    result = runner.run(_generate_argv(args, os.path.dirname(targets[0])))
    failed = _generate_failure(result, args["model"], timeout)
    if failed is None and not os.path.exists(targets[0]):
        failed = N6Error(args["model"], f"stedgeai generate wrote no {os.path.basename(targets[0])} (exit 0)" +
                         _last_line(result.output, "; last output: "), _see(result.output))
    missing = [t for t in targets if not os.path.exists(t)] if failed is None else []
    if missing:
        failed = N6Error(missing[0], "stedgeai did not write this file although the profile and .mpool call for it",
                         "check the profile's memory pools; constants must go to the constants_preferred pool")
    elif failed is None:
        try:
            check_generated(targets[0])
        except N6Error as e:
            failed = e
    if failed is not None:
        _show_output(result.output, say)
        for t in targets:           # what a failed run wrote is no output to build on
            if os.path.exists(t):
                os.unlink(t)
        raise failed


SHOWN_LINES = 40      # of a failed generate's output, above the error line


def _generate_failure(result: ToolResult, model: str, timeout: float) -> N6Error | None:
    """The one-line error of a generate that did not finish well, else None."""
    if result.timed_out:
        return N6Error("STEDGEAI_TIMEOUT", f"stedgeai generate of {model} stopped after {timeout:g} s" +
                       _last_line(result.output, "; last output: "),
                       _see(result.output) + "; give it more time with STEDGEAI_TIMEOUT=<seconds>")
    if result.returncode:
        last = _last_line(result.output, ": ")
        return N6Error(None, f"stedgeai generate of {model} failed (exit {result.returncode})" + last,
                       None if "(fix: " in last else _see(result.output))
    return None


LAST_LINE_CHARS = 300      # of the tool's last line in the one-line error


def _last_line(output: str, lead: str) -> str:
    """The tool's last line (its error, usually), or that it printed nothing; control characters
    (a tool printing binary) shown escaped, so that the error stays one plain line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        return " with no output"
    last = "".join(c if c.isprintable() else repr(c)[1:-1] for c in lines[-1].removeprefix("stedgeai: error: "))
    return lead + (last if len(last) <= LAST_LINE_CHARS else last[:LAST_LINE_CHARS] + "...")


def _see(output: str) -> str:
    return "see the tool's output above" if output.strip() else "run the command VERBOSE=1 shows by hand"


def _show_output(output: str, say: Callable[[str], object]) -> None:
    lines = output.rstrip().splitlines()
    if lines:
        skipped = len(lines) - SHOWN_LINES
        say((f"  ... ({skipped} lines before)\n" if skipped > 0 else "") +
            "\n".join("  | " + line for line in lines[-SHOWN_LINES:]))
