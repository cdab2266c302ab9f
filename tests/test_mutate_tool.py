"""tools/mutate.py's mutation operators: which changes it makes, and where it makes none."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))

import mutate  # noqa: E402

PY = '''"""Doc 1."""
def f(a: int | None, b) -> int:
    if a < 3 and not b:
        return a + 1
    return b >> 2
'''


def test_python_operators():
    got = [(m.line, m.old, m.new) for m in mutate.python_mutants("m.py", PY)]
    assert got == [(3, "a < 3 and not b", "(a < 3)"), (3, "a < 3 and not b", "(not b)"),
                   (3, "a < 3 and not b", "False"), (3, "<", "<="), (3, "3", "2"), (3, "3", "4"), (3, "and", "or"),
                   (3, "not b", "(b)"), (4, "+", "-"), (4, "1", "0"), (4, "1", "2"), (5, ">>", "<<"), (5, "2", "1"),
                   (5, "2", "3")]
    # the annotations (int | None) and the docstring are left alone; every mutant still parses
    for m in mutate.python_mutants("m.py", PY):
        compile(m.apply(PY), "m.py", "exec")


def test_python_mutant_text():
    m = next(m for m in mutate.python_mutants("m.py", PY) if m.new == "<=")
    assert m.apply(PY).splitlines()[2] == "    if a <= 3 and not b:"
    assert m.key == "m.py: if a < 3 and not b: | < -> <="
    # an edit elsewhere in the file leaves the key as it was; the same change twice on a line is told apart
    assert m.key in {n.key for n in mutate.python_mutants("m.py", "import os\n" + PY)}
    twice = [n.key for n in mutate.python_mutants("m.py", "x = 1 < 2 < 3\n") if n.new == "<="]
    assert twice == ["m.py: x = 1 < 2 < 3 | < -> <=", "m.py: x = 1 < 2 < 3 | <#2 -> <="]


def test_python_mutants_land_on_their_token_after_non_ascii_text():
    """ast counts columns in UTF-8 bytes: a "Δ" before the token must not shift the mutant."""
    text = 'w = ["Δ", 1]\ny = w[1] < 2\n'
    got = {(m.line, m.old, m.new) for m in mutate.python_mutants("m.py", text)}
    assert (1, "1", "2") in got and (2, "<", "<=") in got
    assert all(m.apply(text) != text and m.old == text[m.start:m.end] for m in mutate.python_mutants("m.py", text))


C = '''#include "x.h" /* a < b */
static int g(const s *p, int v) { return p->n < 8 && (v << 1) != 0x10; }  // x > y
const char *t = "a<b";
'''


def test_c_operators_skip_comments_strings_and_directives():
    got = [(m.line, m.old, m.new) for m in mutate.c_mutants("k.c", C)]
    assert got == [(2, "<", "<="), (2, "8", "9"), (2, "8", "7"), (2, "&&", "||"), (2, "<<", ">>"),
                   (2, "1", "2"), (2, "1", "0"), (2, "!=", "=="), (2, "0x10", "17"), (2, "0x10", "15")]


def test_sample_spreads_over_the_file():
    assert mutate.sample(list(range(10)), 4) == [0, 2, 5, 7]
    assert mutate.sample(list(range(3)), 4) == [0, 1, 2]
    assert mutate.sample(list(range(3)), 0) == [0, 1, 2]


def test_equivalent_list_format(tmp_path):
    path = tmp_path / "eq.txt"
    path.write_text("# comment\nm.py:3:9 < -> <=  # a is never 3\n\n")
    assert mutate.equivalents(str(path)) == {"m.py:3:9 < -> <=": "a is never 3"}


def test_summary_applies_the_equivalent_list_as_it_is_now():
    report = {"target": "t", "mutants": [{"key": "a", "outcome": "survived"}, {"key": "b", "outcome": "survived"},
                                         {"key": "c", "outcome": "killed"}, {"key": "d", "outcome": "invalid"}]}
    assert mutate.summary(report, {"a": "why"}) == {"target": "t", "mutants": 4, "killed": 1, "survived": 1,
                                                    "equivalent": 1, "invalid": 1, "judged": 2,
                                                    "survivor %": 50.0}


def test_every_listed_equivalent_is_a_mutant_the_tool_makes():
    """A key that names no current mutant (its line changed) is a stale verdict: judge it again."""
    made = {}
    for key in mutate.equivalents():
        path = key.split(": ", 1)[0]
        if path not in made:
            made[path] = {m.key for m in mutate.mutants_of(path, open(os.path.join(mutate.ROOT, path)).read())}
        assert key in made[path], key


def test_a_record_reads_back_one_mutant_per_line(tmp_path):
    run = {"target": "t", "label": "", "files": ["m.py"], "sampled": 2, "made": 9,
           "mutants": [{"key": "m.py: x = 1 | 1 -> 2", "line": 1, "outcome": "killed"},
                       {"key": "m.py: x = 1 | 1 -> 0", "line": 1, "outcome": "survived"}]}
    mutate._dump(run, str(tmp_path / "t.json"))
    text = (tmp_path / "t.json").read_text()
    assert mutate.records(str(tmp_path)) == [run]
    assert text.splitlines()[-3:] == ['{"key": "m.py: x = 1 | 1 -> 2", "line": 1, "outcome": "killed"},',
                                      '{"key": "m.py: x = 1 | 1 -> 0", "line": 1, "outcome": "survived"}', "]}"]


def test_report_table_and_json_from_the_records(tmp_path, capsys, monkeypatch):
    """Per target: judged, survivors, equivalents (the list as it is now) and the recorded mutants whose
    line has changed since (stale); the JSON names every survivor and equivalent."""
    (tmp_path / "m.py").write_text("x = 1\n")
    monkeypatch.setattr(mutate, "ROOT", str(tmp_path))
    monkeypatch.setattr(mutate, "equivalents", lambda: {"m.py: x = 1 | 1 -> 0": "why"})
    runs = tmp_path / "runs"
    runs.mkdir()
    mutate._dump({"target": "t", "label": "", "files": ["m.py"], "sampled": 4, "made": 2, "commit": "abc",
                  "mutants": [{"key": "m.py: x = 1 | 1 -> 2", "outcome": "survived"},
                              {"key": "m.py: x = 1 | 1 -> 0", "outcome": "survived"},
                              {"key": "m.py: x = 2 | 2 -> 3", "outcome": "killed"},
                              {"key": "m.py: x = 2 | 2 -> 1", "outcome": "killed"}]}, str(runs / "t.json"))
    rows = mutate.print_report(str(runs), str(tmp_path / "out"))
    assert rows == [{"target": "t", "mutants": 4, "killed": 2, "survived": 1, "equivalent": 1, "invalid": 0,
                     "judged": 3, "survivor %": 33.3, "stale": 2, "sample": "4 of 2", "first run": 2, "commit": "abc",
                     "survivors": ["m.py: x = 1 | 1 -> 2"], "equivalents": {"m.py: x = 1 | 1 -> 0": "why"}}]
    assert json.load(open(tmp_path / "out" / "summary.json")) == rows
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["target", "sample", "first", "run", "judged", "killed", "survived", "survivor", "%",
                              "equivalent", "invalid", "stale", "commit"]
    assert out[2].split() == ["t", "4", "of", "2", "2", "3", "2", "1", "33.3", "1", "0", "2", "abc"]
    assert out[3] == "  SURVIVED m.py: x = 1 | 1 -> 2"


def test_survivors_judged_again_update_their_record(tmp_path, monkeypatch):
    """Only the record's survivors run (a stale one, whose line changed, cannot and stays as it was);
    their new outcomes replace the old, and the record says when."""
    (tmp_path / "m.py").write_text("x = 1\n")
    monkeypatch.setattr(mutate, "ROOT", str(tmp_path))
    monkeypatch.setattr(mutate, "RECORDS", str(tmp_path))
    ran = []

    def judge(name, target, mutants):
        ran.extend(m.key for m in mutants)
        return [{"key": m.key, "line": m.line, "outcome": "killed"} for m in mutants], 1.0
    monkeypatch.setattr(mutate, "judge", judge)
    mutate._dump({"target": "t", "label": "", "files": ["m.py"], "tests": ["old.py"], "sampled": 3,
                  "mutants": [{"key": "m.py: x = 1 | 1 -> 2", "outcome": "survived"},
                              {"key": "m.py: x = 1 | 1 -> 0", "outcome": "killed"},
                              {"key": "m.py: x = 2 | 2 -> 3", "outcome": "survived"}]}, str(tmp_path / "t.json"))
    report = mutate.rejudge("t", {"files": ["m.py"], "tests": ["new.py", "old.py"]})
    assert ran == ["m.py: x = 1 | 1 -> 2"]
    assert [r["outcome"] for r in report["mutants"]] == ["killed", "killed", "survived"]
    assert report["tests"] == ["new.py", "old.py"] and report["rejudged"][0]["survivors"] == 1
    assert mutate.records(str(tmp_path)) == [report]


def test_survivors_on_two_identical_lines_are_each_judged_on_their_own_line(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text("x = 1\nx = 1\n")
    monkeypatch.setattr(mutate, "ROOT", str(tmp_path))
    monkeypatch.setattr(mutate, "RECORDS", str(tmp_path))
    monkeypatch.setattr(mutate, "judge", lambda name, target, mutants: (
        [{"key": m.key, "line": m.line, "outcome": "killed" if m.line == 2 else "survived"} for m in mutants], 1.0))
    key = "m.py: x = 1 | 1 -> 2"
    mutate._dump({"target": "t", "label": "", "files": ["m.py"], "tests": [], "sampled": 2,
                  "mutants": [{"key": key, "line": 1, "outcome": "survived"},
                              {"key": key, "line": 2, "outcome": "survived"}]}, str(tmp_path / "t.json"))
    report = mutate.rejudge("t", {"files": ["m.py"], "tests": []})
    assert [(r["line"], r["outcome"]) for r in report["mutants"]] == [(1, "survived"), (2, "killed")]


@pytest.mark.parametrize("extra", [["--tests", "tests/test_npu_model.py"], ["--match", "x"], ["--max", "3"]])
def test_survivors_refuses_what_would_write_another_run_into_the_record(extra, monkeypatch):
    """The record's survivors are judged again with the target's own tests; a narrower run would
    be written over the checked-in record."""
    monkeypatch.setattr(mutate, "rejudge", lambda *a: pytest.fail("the record was judged again"))
    with pytest.raises(SystemExit, match="^mutate: --survivors runs a record's survivors with the target's tests"):
        mutate.main(["run", "npu", "--survivors", *extra])
