"""Mutation testing of n6's core mechanisms: does a test fail when the code is wrong?

    .venv/bin/python tools/mutate.py run [TARGET ...] [--max N] [--list]
    .venv/bin/python tools/mutate.py report

A target (tests/mutation/targets.toml) names source files and the tests that should guard them.
Each mutant is one small change to one file — a comparison's boundary (< vs <=), a flipped
equality, a dropped guard (`if c:` → `if False:`), a dropped conjunct, and/or swapped, an integer
constant ±1, + vs -, << vs >>, a dropped `not` — applied in a scratch copy of the repository; the
target's tests run on it (`nice -n 19`, one worker, `-x`, `-m "not slow"`). A mutant the tests
pass on survived; tests/mutation/equivalent.txt lists the ones that cannot be told apart from the
original, each with its reason. C sources (the simulated runtime's kernels) get the same operators
from a token scan. A target's run is recorded in tests/mutation/runs/<target>.json (checked in:
every sampled mutant's key and outcome, the commit it ran on); `report` makes the per-target table
from those records and writes it as JSON to build/mutation/summary.json. A check of a few mutants
(--match) or of other tests (--tests) goes to build/mutation/ instead.

Hand-written rather than mutmut 3 / cosmic-ray: mutmut's trampolines import the mutated package
under its own name, which does not fit site_scons/ + sim/ run as subprocesses of the tests, and
neither mutates C. Not part of `./n6 test`: a run takes minutes per target."""
import argparse
import ast
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = os.path.join(ROOT, "tests", "mutation", "targets.toml")
EQUIVALENT = os.path.join(ROOT, "tests", "mutation", "equivalent.txt")
RECORDS = os.path.join(ROOT, "tests", "mutation", "runs")   # a target's run, checked in
RESULTS = os.path.join(ROOT, "build", "mutation")           # checks (--match, --tests) and the summary
sys.path.insert(0, os.path.join(ROOT, "tests"))

from conftest import copy_repo  # noqa: E402


@dataclass(frozen=True)
class Mutant:
    """One change to one file: source[start:end] replaced by `new`."""
    path: str       # relative to the repository
    line: int
    col: int
    start: int      # character offsets into the file's text
    end: int
    old: str
    new: str
    source_line: str = ""   # the line it changes, stripped
    occurrence: int = 0     # how many times `old` stands on that line before it

    @property
    def key(self):
        """How equivalent.txt names it: the file, the line's text and the change, on one line, so
        that an edit elsewhere in the file does not make a listed mutant stale (a change to the
        line itself does: its equivalence is to be judged again)."""
        old, new = " ".join(self.old.split()), " ".join(self.new.split())
        nth = f"#{self.occurrence + 1}" if self.occurrence else ""
        return f"{self.path}: {self.source_line} | {old}{nth} -> {new}"

    def apply(self, text):
        return text[:self.start] + self.new + text[self.end:]


def mutant(path, text, start, end, new):
    """The mutant replacing text[start:end] by `new`, located by line and column."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line = text[line_start:line_end if line_end >= 0 else len(text)]
    old = text[start:end]
    return Mutant(path, text.count("\n", 0, start) + 1, start - line_start, start, end, old, new,
                  " ".join(line.split()), line[:start - line_start].count(old))


# ---- Python operators ------------------------------------------------------------------------

COMPARE = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
           ast.Eq: ("==", "!="), ast.NotEq: ("!=", "==")}
BINOP = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.LShift: ("<<", ">>"), ast.RShift: (">>", "<<"),
         ast.BitAnd: ("&", "|"), ast.BitOr: ("|", "&"), ast.FloorDiv: ("//", "*"), ast.Mult: ("*", "//")}


def _offsets(text):
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def python_mutants(path, text):
    """The mutants of one Python file, in source order."""
    tree = ast.parse(text)
    starts, lines = _offsets(text), text.splitlines(keepends=True)

    def at(line, col):
        """The character offset of an ast position (its column counts UTF-8 bytes)."""
        return starts[line - 1] + len(lines[line - 1].encode()[:col].decode())
    annotations = {id(sub) for n in ast.walk(tree)
                   for ann in (getattr(n, "annotation", None), getattr(n, "returns", None)) if ann is not None
                   for sub in ast.walk(ann)}
    out = []

    def between(left, right, old, new):
        """`old` between two nodes (an operator token) → `new`."""
        a, b = at(left.end_lineno, left.end_col_offset), at(right.lineno, right.col_offset)
        i = text.find(old, a, b)
        if i >= 0:
            out.append(mutant(path, text, i, i + len(old), new))

    def replace(node, new):
        a, b = at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset)
        out.append(mutant(path, text, a, b, new))

    for node in ast.walk(tree):
        if id(node) in annotations:
            continue
        if isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators):
                if type(op) in COMPARE:
                    between(left, right, *COMPARE[type(op)])
                left = right
        elif isinstance(node, ast.BinOp) and type(node.op) in BINOP:
            between(node.left, node.right, *BINOP[type(node.op)])
        elif isinstance(node, ast.BoolOp):
            word, other = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            between(node.values[0], node.values[1], word, other)
            for i in range(len(node.values)):                    # drop one operand
                rest = node.values[:i] + node.values[i + 1:]
                a = at(node.lineno, node.col_offset)
                b = at(node.end_lineno, node.end_col_offset)
                kept = f" {word} ".join(ast.get_source_segment(text, v) for v in rest)
                out.append(mutant(path, text, a, b, f"({kept})"))
        elif isinstance(node, (ast.If, ast.IfExp, ast.While)) and not _is_main_guard(node):
            replace(node.test, "False")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            replace(node, f"({ast.get_source_segment(text, node.operand)})")
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            replace(node, str(node.value + 1))
            if node.value > 0:
                replace(node, str(node.value - 1))
    return sorted(set(out), key=lambda m: (m.start, m.new))


def _parses(text):
    try:
        ast.parse(text)
        return True
    except SyntaxError:
        return False


def _is_main_guard(node):
    return isinstance(node, ast.If) and "__name__" in ast.unparse(node.test)


# ---- C operators -----------------------------------------------------------------------------

C_TOKEN = re.compile(r"""
    (?P<comment>/\*.*?\*/|//[^\n]*) | (?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*') |
    (?P<pre>^\s*\#[^\n]*) |
    (?P<number>(?<![\w.])(?:0[xX][0-9a-fA-F]+|\d+)(?![\w.])) |
    (?P<op><<=|>>=|<<|>>|->|<=|>=|==|!=|&&|\|\||[<>])""", re.S | re.M | re.X)
C_OPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "&&": "||", "||": "&&",
         "<<": ">>", ">>": "<<"}


def c_mutants(path, text):
    """The mutants of one C file: comparison boundaries, ==/!=, &&/||, shifts, integer constants ±1."""
    out = []
    for m in C_TOKEN.finditer(text):
        if m.group("op") in C_OPS:
            out.append(mutant(path, text, m.start(), m.end(), C_OPS[m.group()]))
        elif m.group("number"):
            value = int(m.group(), 0)
            out.append(mutant(path, text, m.start(), m.end(), str(value + 1)))
            if value > 0:
                out.append(mutant(path, text, m.start(), m.end(), str(value - 1)))
    return out


def mutants_of(path, text):
    return c_mutants(path, text) if path.endswith(".c") else python_mutants(path, text)


def sample(mutants, limit):
    """At most `limit` mutants spread evenly over the file (all when limit is 0)."""
    if not limit or len(mutants) <= limit:
        return mutants
    return [mutants[i * len(mutants) // limit] for i in range(limit)]


# ---- running ---------------------------------------------------------------------------------

def equivalents(path=EQUIVALENT):
    """{mutant key: reason} from equivalent.txt (`key  # reason` lines)."""
    found = {}
    if os.path.exists(path):
        for line in open(path):
            if line.strip() and not line.startswith("#"):
                key, _, reason = line.partition("  # ")
                found[key.strip()] = reason.strip()
    return found


def copy_repository(dest):
    """The repository's files as a clone has them, with the shared environment linked in."""
    copy_repo(dest)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)   # tests copy the repository with git ls-files
    os.symlink(os.path.realpath(os.path.join(ROOT, ".venv")), os.path.join(dest, ".venv"))


def run_tests(repo, tests, timeout):
    """('passed' | 'failed' | 'timeout', pytest's output) for the target's tests in `repo`."""
    argv = ["nice", "-n", "19", os.path.join(repo, ".venv", "bin", "python"), "-m", "pytest", "-x", "-q",
            "-p", "no:cacheprovider", "-n", "0", "-m", "not slow", *tests]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")   # no stale .pyc of a same-size mutant
    try:
        proc = subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=timeout, env=env,
                              start_new_session=True)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    return "passed" if proc.returncode == 0 else "failed", proc.stdout + proc.stderr


def _commit():
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return proc.stdout.strip()


def judge(name, target, mutants):
    """Run the target's tests on each mutant in a scratch copy: ([{key, line, outcome}], the unmutated
    run's seconds)."""
    known = equivalents()
    with tempfile.TemporaryDirectory(prefix="n6-mutate-") as repo:
        copy_repository(repo)
        t0 = time.monotonic()
        outcome, output = run_tests(repo, target["tests"], 3600)
        if outcome != "passed":
            sys.exit(f"{output[-3000:]}\nmutate: {name}: the tests fail on the unmutated code; fix them first")
        baseline = time.monotonic() - t0
        results = []
        for i, m in enumerate(mutants, 1):
            file = os.path.join(repo, m.path)
            original = None if m.key in known else open(file).read()
            if original is None:
                outcome = "equivalent"
            elif m.path.endswith(".py") and not _parses(m.apply(original)):
                outcome = "invalid"       # no Python: every test would fail, which says nothing of them
            else:
                open(file, "w").write(m.apply(original))
                try:
                    outcome = {"failed": "killed", "timeout": "killed", "passed": "survived"}[
                        run_tests(repo, target["tests"], max(20, 3 * baseline))[0]]
                finally:
                    open(file, "w").write(original)
            print(f"  MUTANT   {i}/{len(mutants)} {outcome:10} {m.key}", flush=True)
            results.append({"key": m.key, "line": m.line, "outcome": outcome})
    return results, baseline


def run_target(name, target, limit, listing=False, label="", match="", record=True):
    """Run the target's sampled mutants (those whose key holds `match`); the run's report, written to
    tests/mutation/runs/ when `record` (build/mutation/ otherwise)."""
    limit = target.get("max", limit)
    mutants, made = [], 0
    for rel in target["files"]:
        every = mutants_of(rel, open(os.path.join(ROOT, rel)).read())
        made += len(every)
        mutants += sample(every, limit)
    mutants = [m for m in mutants if match in m.key]
    if listing:
        for m in mutants:
            print(m.key)
        return None
    results, baseline = judge(name, target, mutants)
    report = {"target": name, "label": label, "commit": _commit(), "date": time.strftime("%Y-%m-%d"),
              "files": target["files"], "tests": target["tests"], "max": limit, "made": made,
              "sampled": len(mutants), "baseline_s": round(baseline, 1), "mutants": results}
    folder = RECORDS if record else RESULTS
    os.makedirs(folder, exist_ok=True)
    _dump(report, os.path.join(folder, f"{name}{label and '.' + label}.json"))
    return report


def rejudge(name, target, label=""):
    """The survivors of the target's record run again with its tests as they are now (after new
    tests), their outcomes updated in the record; the record notes when and on which commit. A
    survivor whose line has changed since is left as it was (`stale` in the report)."""
    path = os.path.join(RECORDS, f"{name}{label and '.' + label}.json")
    report = json.load(open(path))
    now = {}                  # key → its mutants: two identical lines of a file share a key
    for rel in report["files"]:
        for m in mutants_of(rel, open(os.path.join(ROOT, rel)).read()):
            now.setdefault(m.key, []).append(m)
    pick = lambda r: next((m for m in now[r["key"]] if m.line == r.get("line")), now[r["key"]][0])
    survivors = [r for r in report["mutants"] if r["outcome"] == "survived" and r["key"] in now]
    again = [pick(r) for r in survivors]
    results, _ = judge(name, target, again)
    for r, result in zip(survivors, results):
        r["outcome"] = result["outcome"]
    report["tests"] = target["tests"]
    report.setdefault("rejudged", []).append({"commit": _commit(), "date": time.strftime("%Y-%m-%d"),
                                              "survivors": len(again),
                                              "killed": sum(r["outcome"] == "killed" for r in results)})
    _dump(report, path)
    return report


def _dump(report, path):
    """A record as JSON with one mutant per line, so a new run's diff shows the mutants that changed."""
    head = {k: v for k, v in report.items() if k != "mutants"}
    lines = ",\n".join(json.dumps(m) for m in report["mutants"])
    with open(path, "w") as f:
        f.write(json.dumps(head, indent=1)[:-2] + ',\n "mutants": [\n' + lines + "\n]}\n")


def _outcome(result, known):
    """A run's outcome, with the equivalent list as it is now (a mutant listed after its run)."""
    return "equivalent" if result["outcome"] == "survived" and result["key"] in known else result["outcome"]


def summary(report, known=None, made_now=None):
    """A run's figures, the equivalent list applied as it is now. `made_now`: the keys the tool makes
    of the files today; a recorded mutant not among them is `stale` (its line changed since)."""
    known = equivalents() if known is None else known
    outcomes = [_outcome(r, known) for r in report["mutants"]]
    counts = {k: outcomes.count(k) for k in ("killed", "survived", "equivalent", "invalid")}
    judged = counts["killed"] + counts["survived"]
    row = {"target": report["target"] + (report.get("label") and f" ({report['label']})" or ""),
           "mutants": len(report["mutants"]), **counts, "judged": judged,
           "survivor %": round(100 * counts["survived"] / judged, 1) if judged else 0.0}
    if made_now is not None:
        row["stale"] = sum(r["key"] not in made_now for r in report["mutants"])
    return row


def records(folder=RECORDS):
    """The recorded runs, by file name."""
    if not os.path.isdir(folder):
        return []
    return [json.load(open(os.path.join(folder, f))) for f in sorted(os.listdir(folder)) if f.endswith(".json")]


def made_now(paths):
    """The keys of every mutant the tool makes of `paths` as they are now."""
    keys = set()
    for rel in paths:
        if os.path.exists(os.path.join(ROOT, rel)):
            keys |= {m.key for m in mutants_of(rel, open(os.path.join(ROOT, rel)).read())}
    return keys


def report_rows(runs, known):
    """One row per recorded run plus its survivors and equivalents, for the table and the JSON."""
    rows = []
    for run in runs:
        row = summary(run, known, made_now(run["files"]))
        first = run["rejudged"][0]["survivors"] if run.get("rejudged") else row["survived"] + sum(
            r["outcome"] == "survived" and r["key"] in known for r in run["mutants"])
        row.update(sample=f"{run['sampled']} of {run['made']}" if "made" in run else str(run["sampled"]),
                   **{"first run": first},
                   commit=(run.get("rejudged") or [run])[-1].get("commit", ""))   # the survivors' last judge
        rows.append(dict(row, survivors=[r["key"] for r in run["mutants"] if _outcome(r, known) == "survived"],
                         equivalents={r["key"]: known.get(r["key"], "listed when it ran") for r in run["mutants"]
                                      if _outcome(r, known) == "equivalent"}))
    return rows


def print_report(folder=RECORDS, out=RESULTS):
    """The table of the recorded runs on stdout (each survivor under it), the same as JSON in
    `out`/summary.json with every survivor's and equivalent's key."""
    from tabulate import tabulate
    rows = report_rows(records(folder), equivalents())
    columns = ("target", "sample", "first run", "judged", "killed", "survived", "survivor %", "equivalent", "invalid",
               "stale", "commit")
    print(tabulate([[r[c] for c in columns] for r in rows], headers=columns))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(rows, f, indent=1)
    for r in rows:
        for key in r["survivors"]:
            print(f"  SURVIVED {key}")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="mutate targets and run their tests")
    run.add_argument("targets", nargs="*", help="names in tests/mutation/targets.toml (default: all)")
    run.add_argument("--max", type=int, default=0, help="at most N mutants per file, spread over it")
    run.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    run.add_argument("--tests", nargs="+", help="these tests instead of the target's (e.g. the suite before new tests)")
    run.add_argument("--match", default="", help="only the sampled mutants whose key holds this text")
    run.add_argument("--label", default="", help="kept apart in the report under this label (e.g. before)")
    run.add_argument("--survivors", action="store_true",
                     help="run again only the survivors of the target's record, and update it (after new tests)")
    sub.add_parser("report", help="the table of the recorded runs (tests/mutation/runs/), as JSON in build/mutation")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("mutate: stopped"))   # the scratch copy goes too
    if args.command == "report":
        return print_report()
    if args.survivors and (args.tests or args.match or args.max or args.list):
        sys.exit("mutate: --survivors runs a record's survivors with the target's tests; "
                 "use it without --tests, --match, --max and --list")
    targets = tomllib.load(open(TARGETS, "rb"))
    for name in args.targets or list(targets):
        if name not in targets:
            sys.exit(f"mutate: no target {name!r} in tests/mutation/targets.toml; one of: {', '.join(targets)}")
        target = dict(targets[name], **({"tests": args.tests} if args.tests else {}))
        if args.survivors:
            report = rejudge(name, target, args.label)
        else:
            report = run_target(name, target, args.max, args.list, args.label, args.match,
                                record=not (args.match or args.tests))
        if report:
            print(summary(report))
    if not args.list:
        print_report()


if __name__ == "__main__":
    main()
