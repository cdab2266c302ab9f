"""Neural-ART profiles and generate options as open as ST's tool: every option of ST's profile
schema passes, an unknown but well-formed one passes with a warning, only what is not an option
or breaks what the build reads is refused; model.json's extra generate options reach the
command line in order and are part of the step's signature."""
import glob
import json
import os

import pytest

from n6.errors import N6Error
from n6.models import read_model
from n6.neural_art_profile import parse_options, read_profile

from conftest import MODELS, copy_repo, scons

REAL = os.environ.get("N6_REAL_STEDGEAI", "")
ST_PROFILES = os.path.join(REAL, "2.2", "scripts", "N6_reloc", "test")

# The options ST's profile schema lists that the issue names, each as a profile would write it.
ST_OPTIONS = ["--Oclone-dma", "--Oshuffle-dma", "--Ox", "--Oconv-split-cw", "--Oconv-split-stripe",
              "--Opreserve-inputs 1", "--enable-virtual-mem-pools-only", "--Oauto-sched", "--Oauto-x",
              "--Oauto-pipe", "--Oauto-O", "--Oauto-th 0.5", "--Omax-ca-pipe 4", "-O3", "-x"]


def _profile(tmp_path, options, name="default"):
    path = tmp_path / "neural_art.json"
    path.write_text(json.dumps({"Globals": {}, "Profiles": {name: {"memory_pool": "./m.mpool", "options": options}}}))
    return path


@pytest.mark.parametrize("option", ST_OPTIONS)
def test_each_option_of_st_s_schema_passes_without_a_warning(tmp_path, option):
    profile = read_profile(_profile(tmp_path, "--native-float --mvei " + option), "default")
    assert profile.options == ("--native-float", "--mvei", *option.split()) and profile.warnings == ()


def test_a_profile_using_every_option_at_once(tmp_path):
    text = " ".join(ST_OPTIONS) + " --optimization 3 --all-buffers-info --csv-file net.csv --enable-epoch-controller"
    profile = read_profile(_profile(tmp_path, text), "default")
    assert profile.options == tuple(text.split()) and profile.warnings == ()
    assert profile.epoch_controller and profile.all_buffers_info


@pytest.mark.skipif(not os.path.isdir(ST_PROFILES),
                    reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")
def test_st_s_shipped_profile_files_parse():
    files = sorted(glob.glob(os.path.join(ST_PROFILES, "*.json")))
    assert files
    for path in files:            # `//` comments and all: as ST ships them
        with open(path) as f:
            names = [line.split('"')[1] for line in f if line.strip().startswith('"test')]
        for name in names:
            profile = read_profile(path, name)
            assert profile.warnings == () and "--all-buffers-info" in profile.options, (path, name)


def test_an_unknown_well_formed_option_passes_with_a_warning(tmp_path):
    profile = read_profile(_profile(tmp_path, "--Os --Onew-pass --Onew-level 2 --Onew-flag=on -Q"), "default")
    assert profile.options == ("--Os", "--Onew-pass", "--Onew-level", "2", "--Onew-flag=on", "-Q")
    assert [w.split(": ", 1)[1] for w in profile.warnings] == [
        f"profile 'default': Neural-ART compiler option '{o}' is not in ST's profile schema: passed to the "
        "compiler as written" for o in ("--Onew-pass", "--Onew-level", "--Onew-flag", "-Q")]
    assert all(w.startswith(str(tmp_path / "neural_art.json")) for w in profile.warnings)


def test_a_profile_key_st_does_not_read_passes_with_a_warning(tmp_path):
    """ST's tool ignores keys it does not know: a typo ("option") would drop every option unseen."""
    path = tmp_path / "neural_art.json"
    path.write_text(json.dumps({"Profiles": {"default": {"memory_pool": "./m.mpool", "option": "--Os",
                                                         "comment": "mine"}}}))
    profile = read_profile(path, "default")
    assert profile.options == () and profile.warnings == (
        f"{path}: profile 'default': key 'option' is not read by ST's tool (ignored); did you mean 'options'?",
        f"{path}: profile 'default': key 'comment' is not read by ST's tool (ignored)")


@pytest.mark.parametrize("text, problem, fix", [
    ("--Os optimize", "'optimize' follows --Os, which takes no value", "remove it"),
    ("native-float --Os", "'native-float' is not an option", "options start with - or --"),
    ("--Os ---x", "'---x' is not an option", "options start with - or --"),
    ("--csv-file", "option --csv-file needs a value", "write --csv-file <value>"),
    ("--Omax-ca-pipe --Os", "option --Omax-ca-pipe needs a value", "write --Omax-ca-pipe <value>"),
    ("--Os --load-mpool other.mpool", "option --load-mpool is set by the build from the profile's memory_pool",
     "remove it"),
    ('--csv-file "x', "options: no closing quotation", "balance the quotes"),
])
def test_what_is_refused(tmp_path, text, problem, fix):
    with pytest.raises(N6Error) as e:
        parse_options("p.json", "d", text)
    assert f"profile 'd': {problem}" in str(e.value) and fix in str(e.value) and "\n" not in str(e.value)


def _model(tmp_path, options):
    folder = tmp_path / "m"
    folder.mkdir(exist_ok=True)
    (folder / "model.onnx").write_bytes(b"onnx")
    (folder / "neural_art.json").write_text("{}")
    (folder / "model.json").write_text(json.dumps(options))
    return folder


def test_model_json_takes_extra_generate_options_in_order(tmp_path):
    extra = ["--inputs-ch-position", "chlast", "--outputs-ch-position", "chlast", "--no-inputs-allocation",
             "--no-outputs-allocation", "--c-api", "st-ai", "--compression", "lossless", "--memory-pool",
             "pools.mpool", "--verbosity", "2"]
    spec = read_model(_model(tmp_path, {"generate_options": extra}))
    assert spec.generate_options == tuple(extra)


def test_float_as_st_spells_it(tmp_path):
    spec = read_model(_model(tmp_path, {"input_data_type": "float", "output_data_type": "float"}))
    assert (spec.input_data_type, spec.output_data_type) == ("float32", "float32")


@pytest.mark.parametrize("value, problem", [
    ("--c-api st-ai", "'generate_options' is '--c-api st-ai', not a list of strings"),
    (["--c-api", 2], "'generate_options' item 2 is 2, not a string"),
    (["--c-api st-ai"], "'generate_options' item 1 '--c-api st-ai' holds a space"),
    (["-o", "elsewhere"], "'generate_options' item 1 '-o' is set by the build"),
    (["--name=net"], "'generate_options' item 1 '--name=net' is set by the build"),
    (["--input-data-type", "float32"], "'generate_options' item 1 '--input-data-type' is set by the build"),
    ([""], "'generate_options' item 1 is empty"),
])
def test_generate_options_are_checked_for_shape(tmp_path, value, problem):
    with pytest.raises(N6Error) as e:
        read_model(_model(tmp_path, {"generate_options": value}))
    assert problem in str(e.value) and "\n" not in str(e.value)


def test_extra_generate_options_reach_the_argv_in_order_and_sign_the_step(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    model_json = os.path.join(repo, "models", "kws_mlp", "model.json")
    with open(model_json, "w") as f:
        json.dump({"generate_options": ["--c-api", "st-ai", "--verbosity", "2"]}, f)
    out = scons(repo, "VERBOSE=1", "kws_mlp").stdout
    gen = next(line for line in out.splitlines() if " generate " in line)
    assert gen.endswith("--c-api st-ai --verbosity 2")
    assert " GEN " not in scons(repo, "kws_mlp").stdout                   # up to date
    with open(model_json, "w") as f:
        json.dump({"generate_options": ["--verbosity", "2", "--c-api", "st-ai"]}, f)
    out = scons(repo, "VERBOSE=1", "kws_mlp").stdout
    assert next(line for line in out.splitlines() if " generate " in line).endswith("--verbosity 2 --c-api st-ai")


def test_unknown_profile_option_warns_in_the_build(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    path = os.path.join(repo, "models", "kws_mlp", "neural_art.json")
    with open(path) as f:
        data = json.load(f)
    data["Profiles"]["default"]["options"] += " --Onew-pass"
    with open(path, "w") as f:
        json.dump(data, f)
    out = scons(repo, "kws_mlp").stdout
    assert "  WARNING  models/kws_mlp/neural_art.json: profile 'default': Neural-ART compiler option " \
           "'--Onew-pass' is not in ST's profile schema" in out
    assert os.path.isfile(os.path.join(repo, "build", "kws_mlp", "network_rel.bin"))


def test_bundled_profiles_parse_without_warnings():
    for path in glob.glob(os.path.join(MODELS, "*", "neural_art.json")):
        assert read_profile(path, "default").warnings == (), path
