"""`scons profile` end to end on the simulated board: every bundled model, what reruns after a
weight-only change, the diff naming an epoch made slower on purpose, and the one-line errors."""
import glob
import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import BUNDLED, bump, copy_repo, every_model, scons
from test_profiling import _check_nesting, render_in_chromium

pytestmark = pytest.mark.slow

MODELS = (*BUNDLED, "tiny_prebuilt")
EVERY_MODEL = every_model()
REAL = os.environ.get("N6_REAL_STEDGEAI")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return copy_repo(tmp_path_factory.mktemp("profile"))


def run(repo, *args, **kw):
    return scons(repo, *args, timeout=1800, **kw)   # profiles emulate every epoch


def steps(proc):
    """The progress verbs of a run (FLASH, PROFILE, REPORT, ...)."""
    return [line.split()[0] for line in proc.stdout.splitlines() if line.startswith("  ") and line.split()
            and line.split()[0].isupper()]


def c_info(repo, model):
    found = glob.glob(os.path.join(repo, "build", model, "st_ai_output", "*c_info.json")) or \
        glob.glob(os.path.join(repo, "models", model, "*c_info.json"))
    with open(found[0]) as f:
        return json.load(f)


@pytest.mark.parametrize("model", MODELS)
def test_profile_of_every_bundled_model(repo, model, tmp_path):
    proc = run(repo, f"profile-{model}")
    assert "FLASH" in steps(proc) and "PROFILE" in steps(proc)
    folder = os.path.join(repo, "build", model, "profile")
    with open(os.path.join(folder, "profile.json")) as f:
        profile = json.load(f)
    nodes = [n["name"] for n in c_info(repo, model)["graphs"][0]["nodes"]]
    assert [n for e in profile["epochs"] for n in e["epochs"]] == nodes        # every epoch, c_info names
    # the simulated NPU does next to nothing (an epoch-controller blob: its label and end interrupt,
    # one cycle); its clock counts the epoch's time (NPU cycles = MCU cycles x 1000/800)
    assert profile["simulated"] and all(not e["absent"] and
                                        e["npu_cycles"]["core"] == round(e["mcu_cycles"]["core"] * 1.25) <= 1 and
                                        e["npu_cycles"]["pre"] == round(e["mcu_cycles"]["pre"] * 1.25)
                                        for e in profile["epochs"])
    assert all(e["measured_memory"] for e in profile["epochs"])               # from the memory hooks
    assert "inf/s on the simulated board" in proc.stdout and "epoch_1" in proc.stdout
    assert "Every counter per epoch" not in proc.stdout               # the counter tables: profile.txt, HTML
    ET.parse(os.path.join(folder, "profile.svg"))
    with open(os.path.join(folder, "profile.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with open(os.path.join(folder, "profile.trace.json")) as f:
        events = json.load(f)["traceEvents"]
    assert {e["name"] for e in events if e["ph"] == "X" and e["cat"] in ("CPU", "NPU") and e["tid"] == 1} == \
        {e["name"] for e in profile["epochs"]}
    _check_nesting(events)
    probe, console = render_in_chromium(os.path.join(folder, "profile.html"), tmp_path)
    assert console == [] and probe["svg"] > 100 and probe["rows"] == len(profile["epochs"]) + 1


@pytest.mark.parametrize("firmware", ["own", pytest.param("st", marks=pytest.mark.skipif(
    not REAL, reason="set N6_REAL_STEDGEAI to ST's test bed folder (ST's validation firmware)"))])
def test_profile_of_every_model_folder_in_one_session(repo, firmware):
    """`scons profile` of all the bundled model folders at once, on the simulated board's firmware
    and on ST's validation firmware on the DK twin (the epoch-controller models' blobs in ST's
    format, which ST's runtime hands the NPU model): every model ok, every epoch of its c_info
    measured."""
    extra = [f"SIM_FIRMWARE={os.path.join(REAL, '2.2')}"] if firmware == "st" else []
    proc = run(repo, "profile", "MODEL=" + ",".join(EVERY_MODEL), *extra)
    assert f"profile summary: {len(EVERY_MODEL)} of {len(EVERY_MODEL)} models ok" in proc.stdout
    for model in EVERY_MODEL:
        with open(os.path.join(repo, "build", model, "profile", "profile.json")) as f:
            measured = [n for e in json.load(f)["epochs"] for n in e["epochs"]]
        assert measured == [n["name"] for n in c_info(repo, model)["graphs"][0]["nodes"]], model


def flip_weight(repo):
    raw = glob.glob(os.path.join(repo, "models", "tiny_prebuilt", "*.raw"))[0]
    with open(raw, "r+b") as f:
        b = f.read(1)
        f.seek(0)
        f.write(bytes([b[0] ^ 0x5A]))
    bump(raw)


def test_weight_change_reflashes_and_remeasures_then_nothing(repo):
    run(repo, "profile-tiny_prebuilt")
    flip_weight(repo)
    first = run(repo, "profile-tiny_prebuilt")
    assert {"PACK", "FLASH", "PROFILE"} <= set(steps(first)) and "CC" not in steps(first)
    second = run(repo, "profile-tiny_prebuilt")
    assert steps(second) == ["HTML"] and "epoch_1" in second.stdout            # the stored report, printed
    assert second.stdout.splitlines()[0].startswith("profile of tiny_prebuilt (c-name network) on ")  # named
    forced = run(repo, "profile-tiny_prebuilt", "FORCE=1")
    assert "PROFILE" in steps(forced)


def make_mlp(repo, name, hidden2):
    """A three-layer MLP whose second layer has `hidden2` outputs (models/make_models.py's builder)."""
    sys.path.insert(0, os.path.join(repo, "models"))
    try:
        import make_models
        m = make_models.QDQModel(name, seed=7)
        x, xv = m.input([1, 64])
        x, xv = m.gemm(x, xv, 32, relu=True)
        x, xv = m.gemm(x, xv, hidden2, relu=True)
        x, xv = m.gemm(x, xv, 10, relu=False)
        m.softmax(x, xv)
        folder = os.path.join(repo, "models", name)
        m.save(os.path.join(folder, "model.onnx"), [1, 10])
    finally:
        sys.path.pop(0)
        sys.modules.pop("make_models", None)
    for f in ("neural_art.json", "kws_mlp.mpool"):
        shutil.copyfile(os.path.join(repo, "models", "kws_mlp", f), os.path.join(folder, f))
    bump(os.path.join(folder, "model.onnx"))


def test_diff_names_the_epoch_made_slower(repo):
    make_mlp(repo, "diff_mlp", 32)
    run(repo, "profile-diff_mlp")
    folder = os.path.join(repo, "build", "diff_mlp", "profile")
    assert not os.path.exists(os.path.join(folder, "profile.diff.json"))
    make_mlp(repo, "diff_mlp", 256)                     # epoch_2 now does 8x the work
    proc = run(repo, "profile-diff_mlp")
    with open(os.path.join(folder, "profile.diff.json")) as f:
        diff = json.load(f)
    assert diff["epochs"][0]["name"] == "epoch_2" and diff["epochs"][0]["time_ms"]["delta"] > 0
    assert diff["total"]["time_ms"]["delta"] > 0
    table = proc.stdout[proc.stdout.index("compared with"):]
    assert table.splitlines()[3].startswith("epoch_2")                      # first row after the header
    saved = os.path.join(str(repo), "saved-profile.json")
    shutil.copyfile(os.path.join(folder, "profile.previous.json"), saved)
    run(repo, "profile-diff_mlp", f"PROFILE_BASELINE={saved}")               # reports again, no measuring
    with open(os.path.join(folder, "profile.diff.json")) as f:
        assert json.load(f)["baseline"] == saved


def test_the_models_own_stored_profile_as_baseline(repo):
    """PROFILE_BASELINE=build/<model>/profile/profile.json, the file the report step rewrites: read
    before it is rewritten (no dependency cycle), and after a new measurement moved it aside."""
    run(repo, "profile-kws_mlp")
    own = os.path.join("build", "kws_mlp", "profile", "profile.json")
    folder = os.path.join(repo, "build", "kws_mlp", "profile")
    proc = run(repo, "profile-kws_mlp", f"PROFILE_BASELINE={own}")
    assert "dependency cycle" not in proc.stderr and steps(proc) == ["REPORT", "HTML"]
    with open(os.path.join(folder, "profile.diff.json")) as f:
        diff = json.load(f)
    assert diff["baseline"] == own and diff["note"] is None and diff["total"]["time_ms"]["delta"] == 0
    forced = run(repo, "profile-kws_mlp", f"PROFILE_BASELINE={own}", "FORCE=1")
    assert {"PROFILE", "REPORT"} <= set(steps(forced)) and "dependency cycle" not in forced.stderr
    with open(os.path.join(folder, "profile.diff.json")) as f:
        assert json.load(f)["baseline"] == os.path.join(folder, "profile.previous.json")   # where it was moved


def one_line_error(proc):
    assert proc.returncode != 0 and "Traceback" not in proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_prebuilt_folder_without_c_info_profiles_the_measured_figures(repo):
    folder = os.path.join(repo, "models", "no_c_info")
    shutil.copytree(os.path.join(repo, "models", "tiny_prebuilt"), folder)
    os.unlink(os.path.join(folder, "network_c_info.json"))
    try:
        proc = run(repo, "profile-no_c_info")
        line = one_line_error(run(repo, "validate-no_c_info", check=False))   # its reference needs the pools
    finally:
        shutil.rmtree(folder)
    assert "models/no_c_info/network_c_info.json: not found: the host reference of a prebuilt network needs " \
        "its memory pools" in line
    why = "no c_info.json at models/no_c_info/network_c_info.json: compiler columns absent"
    assert why in proc.stdout.splitlines() and "ops/cycle" not in proc.stdout
    with open(os.path.join(repo, "build", "no_c_info", "profile", "profile.json")) as f:
        profile = json.load(f)
    assert profile["compiler_absent"] == why and profile["c_info"] is None
    assert [e["name"] for e in profile["epochs"]] == ["epoch_1", "epoch_2", "epoch_3"]
    assert all(e["max_cycles"] is None and e["measured_memory"] and e["time_ms"] > 0 for e in profile["epochs"])


def test_board_sending_a_short_counter_block_is_one_line(repo):
    line = one_line_error(run(repo, "profile-tiny_prebuilt", "FORCE=1", env={"N6_SIM_BOARD_FAULT": "counters"},
                              check=False))
    assert "board sent a counter block of 2 values for epoch 1, expected 3" in line


def test_c_info_of_another_image_gives_the_measured_figures_and_one_line_why(repo):
    run(repo, "profile-tiny_prebuilt")
    path = os.path.join(repo, "models", "tiny_prebuilt", "network_c_info.json")
    with open(path) as f:
        data = json.load(f)
    last = data["graphs"][0]["nodes"].pop()["id"]          # a c_info.json of a model with one epoch less
    data["power_estimates"] = [p for p in data["power_estimates"] if p["node_id"] != last]
    data["memory_accesses"] = [a for a in data["memory_accesses"] if a["node_id"] != last]
    with open(path, "w") as f:
        json.dump(data, f)
    bump(path)
    proc = run(repo, "profile-tiny_prebuilt")
    why = "models/tiny_prebuilt/network_c_info.json describes 2 epochs but the image on the board ran 3: " \
          "compiler columns absent"
    assert why in proc.stdout.splitlines() and "REPORT" in steps(proc)
    with open(os.path.join(repo, "build", "tiny_prebuilt", "profile", "profile.json")) as f:
        profile = json.load(f)
    assert profile["compiler_absent"] == why and [e["name"] for e in profile["epochs"]] == \
        ["epoch_1", "epoch_2", "epoch_3"]
    assert all(e["ops"] is None and e["measured_memory"] and e["time_ms"] > 0 for e in profile["epochs"])
    missing = one_line_error(run(repo, "profile-tiny_prebuilt", "PROFILE_BASELINE=nope.json", check=False))
    assert "nope.json: PROFILE_BASELINE file not found" in missing


@pytest.mark.parametrize("module, step", [("site_scons/n6/run/session.py", "PROFILE"),
                                          ("site_scons/n6/profiling/report.py", "REPORT")])
def test_a_change_of_the_code_a_profile_step_runs_reruns_that_step(repo, module, step):
    """The measure step runs the board session and the report step the report writers: editing
    either reruns its step (and the measuring step not for a report change)."""
    run(repo, "profile-kws_mlp")
    with open(os.path.join(repo, module), "a") as f:
        f.write("\n# a change of the step's code\n")
    verbs = [v for v in steps(run(repo, "profile-kws_mlp")) if v in ("PROFILE", "REPORT")]
    assert step in verbs and (step == "PROFILE" or verbs == ["REPORT"])


def test_several_models_profile_with_one_summary(repo):
    """`scons profile` over several models: each profiled in turn on the one-model board, one
    summary table and profile-summary.json with each model's measured inf/s and time."""
    proc = run(repo, "profile", "MODEL=kws_mlp,tiny_prebuilt")
    assert "profile summary: 2 of 2 models ok" in proc.stdout
    summary = json.load(open(os.path.join(repo, "build", "profile-summary.json")))
    assert summary["verb"] == "profile" and summary["simulated"] and summary["failed"] == 0
    for row in summary["models"]:
        totals = json.load(open(os.path.join(repo, "build", row["model"], "profile", "profile.json")))["totals"]
        assert row["result"] == "ok" and (row["inf_per_s"], row["ms"]) == (totals["inf_per_s"], totals["time_ms"])
    assert [r["model"] for r in summary["models"]] == ["kws_mlp", "tiny_prebuilt"]
    # each printed report starts with its model's name, the line of its own HTML page ends it
    titles = [line for line in proc.stdout.splitlines() if line.startswith(("profile of ", "  HTML "))]
    pairs = sorted(zip(titles[::2], titles[1::2]))
    assert len(titles) == 4 and [(t.split()[2], t.split()[-1], h.split()[1]) for t, h in pairs] == [
        (m, "(simulated)", f"build/{m}/profile/profile.html") for m in ("kws_mlp", "tiny_prebuilt")]
