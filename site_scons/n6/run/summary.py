"""The summary of a whole-project `scons run|validate|profile`: one row per model read from the
reports its steps left (run.json, validate.json or validate-failed.json, profile.json) and the
error of a model whose step failed, as a table and as JSON. The verdict: every model passed."""
import json
import os
from dataclasses import asdict, dataclass

from tabulate import tabulate

from ..atomic import write_text
from .steps import VALIDATE_FAILED, VALIDATED

# The steps whose failure a verb's row shows, in the order they run
STEPS = {"run": ("flash", "run"), "validate": ("flash", "run", "validate"), "profile": ("flash", "profile")}


@dataclass
class ModelResult:
    model: str
    result: str                  # ok | passed | failed | error | not run
    max_lsb: float = None        # validate: largest output error in LSB
    top1: float = None           # validate: the test set's top-1 accuracy on the board, else top-1 agreement
    inf_per_s: float = None
    ms: float = None
    simulated: bool = None
    error: str = ""              # why the model failed: the one-line error of its failing step

    @property
    def failed(self):
        return self.result != "ok" and self.result != "passed"


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def model_result(verb, model_dir, model, failures=None):
    """What `verb` left for one model; `failures`: step → its one-line error, for the model's
    steps that failed. A failed validation is "failed" with its figures; any other failure "error"."""
    step = next((s for s in STEPS[verb] if s in (failures or {})), None)
    error = failures[step] if step else ""
    if step not in (None, "validate"):
        return ModelResult(model, "error", error=error)
    run = _read(os.path.join(model_dir, "run", "run.json")) or {}
    row = ModelResult(model, "ok", inf_per_s=run.get("inferences_per_s"), ms=run.get("ms_per_inference"),
                      simulated=run.get("simulated"), error=error)
    if verb == "validate":
        verdict = _read(os.path.join(model_dir, "run", VALIDATE_FAILED if step else VALIDATED))
        if verdict is None:
            return ModelResult(model, "error", error=error or "no verdict was left")
        row.result = "failed" if step else "passed"
        outputs = verdict.get("outputs") or []
        row.max_lsb = max((o["max_abs_lsb"] for o in outputs), default=None)
        accuracy = verdict.get("accuracy")
        row.top1 = accuracy["board"]["accuracy"] if accuracy else min((o["top1"] for o in outputs), default=None)
    elif verb == "profile":
        profile = _read(os.path.join(model_dir, "profile", "profile.json")) or {}
        totals = profile.get("totals", {})
        row.inf_per_s, row.ms, row.simulated = totals.get("inf_per_s"), totals.get("time_ms"), profile.get("simulated")
    return row


def not_run(model):
    """The row of a model whose steps did not run (the build stopped before them)."""
    return ModelResult(model, "not run")


def _cell(value, fmt):
    return "" if value is None else format(value, fmt)


def summary(verb, rows, path):
    """Write `path` (JSON) and return (table text, every model passed)."""
    failed = [r for r in rows if r.failed]
    simulated = any(r.simulated for r in rows)
    write_text(path, json.dumps({"verb": verb, "simulated": simulated, "models": [asdict(r) for r in rows],
                                 "passed": len(rows) - len(failed), "failed": len(failed)}, indent=1) + "\n")
    errors = any(r.error for r in rows)
    headers = ["model", "result"] + (["max err LSB", "top-1"] if verb == "validate" else []) + \
        ["inf/s", "ms" + (" (simulated)" if simulated else "")] + (["error"] if errors else [])
    table = [[r.model, r.result] + ([_cell(r.max_lsb, "g"), _cell(r.top1, ".1%")] if verb == "validate" else []) +
             [_cell(r.inf_per_s, ".1f"), _cell(r.ms, ".3f")] + ([r.error.split(" (fix: ")[0]] if errors else [])
             for r in rows]
    verdict = f"{len(rows) - len(failed)} of {len(rows)} models {'passed' if verb == 'validate' else 'ok'}"
    return f"{verb} summary: {verdict}\n" + tabulate(table, headers) + "\n", not failed
