"""The whole-project validate summary names the rule each model was judged by, its clauses in the
table's rule column: a simulated-NPU model whose strict top-1 differed reads "passed (near tie)",
a failed one plain "failed" whatever its top-1, and the JSON keeps the figures behind both."""
import json
import os

from n6.run.summary import model_result, summary


def _model(build, name, verdict, failed=False):
    run = os.path.join(build, name, "run")
    os.makedirs(run)
    with open(os.path.join(run, "run.json"), "w") as f:
        json.dump({"inferences_per_s": 2.0, "ms_per_inference": 500.0, "simulated": True}, f)
    with open(os.path.join(run, "validate-failed.json" if failed else "validate.json"), "w") as f:
        json.dump(verdict, f)


def _output(max_lsb, top1, top1_tie):
    return {"name": "out", "max_abs_lsb": max_lsb, "top1": top1, "top1_tie": top1_tie, "top1_gap_lsb": 3.0}


EXACT = {"rule": "tolerance", "tolerance_lsb": 2.0, "tolerance_given": False, "tie_lsb": 0, "passed": True,
         "outputs": [_output(1.0, 1.0, 1.0)]}
NPU = {"rule": "simulated NPU", "tolerance_lsb": 64, "tolerance_given": False, "tie_lsb": 48, "passed": True}


def test_the_summary_names_the_rule_and_the_near_tie_that_passed_a_model(tmp_path):
    build = str(tmp_path)
    _model(build, "blazeface", {**NPU, "outputs": [_output(21.0, 0.5, 1.0), _output(11.0, 1.0, 1.0)]})
    _model(build, "kws_mlp", EXACT)
    _model(build, "nucleo_mnv1", {**NPU, "outputs": [_output(14.0, 1.0, 1.0)]})
    _model(build, "tight", {**NPU, "tolerance_lsb": 4, "tolerance_given": True, "passed": False,
                            "outputs": [_output(14.0, 0.5, 1.0)]}, failed=True)
    rows = [model_result("validate", os.path.join(build, m), m, {"validate": "beyond 4 LSB"} if m == "tight" else {})
            for m in ("blazeface", "kws_mlp", "nucleo_mnv1", "tight")]
    text, passed = summary("validate", rows, str(tmp_path / "validate-summary.json"))
    assert not passed
    lines = text.splitlines()
    assert [line.split("  ")[0] for line in lines[:2]] == ["validate summary: 3 of 4 models passed", "model"]
    cells = {line.split()[0]: [c.strip() for c in line.split("  ") if c.strip()] for line in lines[3:]}
    assert [c.strip() for c in lines[1].split("  ") if c.strip()][:6] == \
        ["model", "result", "rule", "max err LSB", "top-1 agree %", "near-tie top-1 %"]
    assert cells["blazeface"][:6] == ["blazeface", "passed (near tie)", "<= 64 LSB, top-1 within 48 LSB", "21",
                                      "50.0", "100.0"]
    assert cells["kws_mlp"][:5] == ["kws_mlp", "passed", "<= 2 LSB, same top-1", "1", "100.0"]
    assert cells["nucleo_mnv1"][:3] == ["nucleo_mnv1", "passed", "<= 64 LSB, top-1 within 48 LSB"]
    assert cells["tight"][:3] == ["tight", "failed", "<= 4 LSB (VALIDATE_TOLERANCE), top-1 within 48 LSB"]
    saved = {m["model"]: m for m in json.load(open(tmp_path / "validate-summary.json"))["models"]}
    assert {m: (r["result"], r["top1"], r["top1_tie"], r["tie_lsb"]) for m, r in saved.items()} == {
        "blazeface": ("passed", 0.5, 1.0, 48), "kws_mlp": ("passed", 1.0, 1.0, 0),
        "nucleo_mnv1": ("passed", 1.0, 1.0, 48), "tight": ("failed", 0.5, 1.0, 48)}
    assert saved["blazeface"]["rule"] == "<= 64 LSB, top-1 within 48 LSB"


def test_without_a_near_tie_rule_the_summary_has_no_near_tie_column(tmp_path):
    _model(str(tmp_path), "kws_mlp", EXACT)
    text, passed = summary("validate", [model_result("validate", str(tmp_path / "kws_mlp"), "kws_mlp")],
                           str(tmp_path / "s.json"))
    assert passed and "near-tie" not in text and "<= 2 LSB, same top-1" in text
