"""The summary of a whole-project `scons run|validate|profile`: one row per model read from the
reports its steps left (run.json, validate.json or validate-failed.json, profile.json) and the
error of a model whose step failed, as a table and as JSON. The verdict: every model passed."""
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tabulate import tabulate

from ..atomic import write_text
from ..build_layout import VALIDATE_FAILED, VALIDATE_REPORT, ModelLayout, model_step
from .options import rule_words

# The steps whose failure a verb's row shows, in the order they run ("build": making the model's images)
STEPS = {"run": ("build", "flash", "run"), "validate": ("build", "flash", "run", "validate"),
         "profile": ("build", "flash", "profile")}


@dataclass
class ModelResult:
    model: str
    result: str                  # ok | passed | failed | error | not run
    max_lsb: float | None = None   # validate: largest output error in LSB
    top1: float | None = None   # validate: share of runs whose top-1 equals the reference's (every output)
    top1_tie: float | None = None   # validate: the same, a top-1 within the rule's near tie of the best counting
    rule: str | None = None      # validate: the rule judged by (VALIDATE_TOLERANCE or its default, the near tie)
    tie_lsb: float | None = None   # validate: the rule's near tie (simulated NPU), 0: none
    accuracy: float | None = None   # validate: top-1 accuracy on the board over the model's test set, if it has one
    inf_per_s: float | None = None
    ms: float | None = None
    simulated: bool | None = None
    error: str = ""              # why the model failed: the one-line error of its failing step

    @property
    def passed_on_tie(self) -> bool:
        """Validate passed on the near tie alone: a run's strict top-1 differed from the reference's."""
        return self.result == "passed" and self.top1 is not None and self.top1 < 1

    @property
    def failed(self) -> bool:
        return self.result != "ok" and self.result != "passed"


def _read(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def model_result(verb: str, model_dir: str, model: str, failures: Mapping[str, str] | None = None) -> ModelResult:
    """What `verb` left for one model; `failures`: step → its one-line error, for the model's
    steps that failed. A failed validation is "failed" with its figures; any other failure "error"."""
    step = next((s for s in STEPS[verb] if s in (failures or {})), None)
    error = failures[step] if step else ""   # type: ignore[index]  # a step is found in failures
    if step not in (None, "validate"):
        return ModelResult(model, "error", error=error)
    layout = ModelLayout(*os.path.split(model_dir))
    run = _read(layout.run_report) or {}
    row = ModelResult(model, "ok", inf_per_s=run.get("inferences_per_s"), ms=run.get("ms_per_inference"),
                      simulated=run.get("simulated"), error=error)
    if verb == "validate":
        verdict = _read(os.path.join(layout.run, VALIDATE_FAILED if step else VALIDATE_REPORT))
        if verdict is None:
            return ModelResult(model, "error", error=error or "no verdict was left")
        row.result = "failed" if step else "passed"
        outputs = verdict.get("outputs") or []
        row.max_lsb = max((o["max_abs_lsb"] for o in outputs), default=None)
        row.top1 = min((o["top1"] for o in outputs), default=None)
        row.top1_tie = min((o.get("top1_tie", o["top1"]) for o in outputs), default=None)
        row.tie_lsb = verdict.get("tie_lsb") or 0
        row.rule = rule_words(verdict["tolerance_lsb"], verdict.get("tolerance_given", False), row.tie_lsb)
        row.accuracy = (verdict.get("accuracy") or {}).get("board", {}).get("accuracy")
    elif verb == "profile":
        profile = _read(os.path.join(layout.profile, "profile.json")) or {}
        totals = profile.get("totals", {})
        row.inf_per_s, row.ms, row.simulated = totals.get("inf_per_s"), totals.get("time_ms"), profile.get("simulated")
    return row


def not_run(model: str) -> ModelResult:
    """The row of a model whose steps did not run (the build stopped before them)."""
    return ModelResult(model, "not run")


def failed_row(model: str, error: str) -> ModelResult:
    """The row of a model that cannot be deployed at all (its folder cannot be read)."""
    return ModelResult(model, "error", error=error)


def project_rows(verb: str, build_dir: str, done: Mapping[str, bool], failed: Iterable[tuple[str, str]],
                 broken: Mapping[str, object]) -> list[ModelResult]:
    """The rows of a whole-project summary: `done`: model → its steps ran to the end (built or up
    to date); `failed`: (file, one-line error) of each step that failed, a model's error the one
    of its first failed step; `broken`: model folders that cannot be read (name → error). A model
    whose steps neither ended nor failed is `not run`."""
    failures: dict[str, dict[str, str]] = {}
    for path, error in failed:
        model, step = model_step(build_dir, path)
        failures.setdefault(model, {}).setdefault(step, error)
    rows = []
    for model, ended in sorted(done.items()):
        if model in broken:
            rows.append(failed_row(model, str(broken[model])))
        elif ended or model in failures:
            rows.append(model_result(verb, os.path.join(build_dir, model), model, failures.get(model)))
        else:
            rows.append(not_run(model))
    return rows


NOT_RUN = {False: "not run: the build stopped at the first failure (`scons -k` goes on with the other models)",
           True: "not run: a step the model needs failed (its error is above)"}


def summary(verb: str, rows: Sequence[ModelResult], path: str, kept_going: bool = False) -> tuple[str, bool]:
    """Write `path` (JSON) and return (table text, every model passed). `kept_going`: the build
    went on after a failure (`scons -k`), so a model not run is one whose own steps could not."""
    failed = [r for r in rows if r.failed]
    simulated = any(r.simulated for r in rows)
    write_text(path, json.dumps({"verb": verb, "simulated": simulated, "models": [asdict(r) for r in rows],
                                 "passed": len(rows) - len(failed), "failed": len(failed)}, indent=1) + "\n")
    columns = [("model", "s", lambda r: r.model),
               ("result", "s", lambda r: r.result + (" (near tie)" if r.passed_on_tie else ""))]
    if verb == "validate":
        columns += [("rule", "s", lambda r: r.rule), ("max err LSB", "g", lambda r: r.max_lsb),
                    ("top-1 agree %", ".1f", lambda r: None if r.top1 is None else 100 * r.top1)]
        if any(r.tie_lsb for r in rows):
            columns.append(("near-tie top-1 %", ".1f", lambda r: None if r.top1_tie is None else 100 * r.top1_tie))
        if any(r.accuracy is not None for r in rows):
            columns.append(("test-set top-1 %", ".1f", lambda r: None if r.accuracy is None else 100 * r.accuracy))
    columns += [("inf/s", ".1f", lambda r: r.inf_per_s),
                ("ms" + (" (simulated)" if simulated else ""), ".3f", lambda r: r.ms)]
    if any(r.error for r in rows):
        columns.append(("error", "s", lambda r: r.error.split(" (fix: ")[0]))
    table = tabulate([[get(r) for _, _, get in columns] for r in rows], [name for name, _, _ in columns],
                     floatfmt=[fmt for _, fmt, _ in columns], missingval="")
    verdict = f"{len(rows) - len(failed)} of {len(rows)} models {'passed' if verb == 'validate' else 'ok'}"
    stopped = "\n" + NOT_RUN[kept_going] if any(r.result == "not run" for r in rows) else ""
    return f"{verb} summary: {verdict}\n" + table + stopped + "\n", not failed
