"""`scons flash` end to end with the simulated programmer on the bundled models: what reaches the
board, how many sectors and programmer calls each kind of change costs, interrupted flashes,
the gate, and the one-line errors."""
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from n6.flash import mrel
from programmer_sim.board_state import BoardState

from conftest import MODELS, ROOT, bump, copy_repo, flip_bytes, make_prebuilt, scons

S = 0x10000
SERIAL = "004200000000000000000001"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """big_mlp turned into a prebuilt folder (its generated outputs), so a test can change one .raw byte."""
    repo = copy_repo(tmp_path_factory.mktemp("flash"))
    scons(repo, "big_mlp")
    make_prebuilt(repo, "big_mlp")
    shutil.rmtree(os.path.join(repo, "build", "big_mlp"))
    return repo


def flash(repo, *args, **kw):
    return scons(repo, "flash", "MODEL=big_mlp", *args, **kw)


def board(repo, build="build"):
    return BoardState(os.path.join(repo, build, "sim-board"))


def calls(repo, build="build"):
    return len(board(repo, build).events("call"))


def report(repo, model="big_mlp", build="build"):
    with open(os.path.join(repo, build, model, "flash", "flash.json")) as f:
        return json.load(f)


def written(repo):
    """{image file name: (sectors written, sectors)} of the last flash."""
    return {os.path.basename(i["path"]): (i["sectors_written"], i["sectors"]) for i in report(repo)["images"]}


def image(repo, name, model="big_mlp", build="build"):
    with open(os.path.join(repo, build, model, name), "rb") as f:
        return f.read()


def raw_path(repo):
    return glob.glob(os.path.join(repo, "models", "big_mlp", "*.raw"))[0]


def change_raw(repo, offsets):
    flip_bytes(raw_path(repo), offsets)


def differing_sectors(old, new, base):
    n = max(len(old), len(new))
    return sorted({base + (i // S) * S for i in range(0, n) if old[i:i + 1] != new[i:i + 1]})


def records(repo):
    out = {}
    for path in glob.glob(os.path.join(repo, "build", "deploy-records", "*", "*")):
        out[path] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return out


def assert_board_holds(repo, split):
    st = board(repo)
    net = image(repo, "network_rel.bin")
    assert st.read(0x71000000, len(net)) == net
    if split:
        par = image(repo, "network_rel_params.bin")
        assert st.read(0x71800000, len(par)) == par


def test_first_flash_writes_every_sector_then_nothing(repo):
    proc = flash(repo, "RELOC_SPLIT=1")
    net, par = image(repo, "network_rel.bin"), image(repo, "network_rel_params.bin")
    n_net, n_par = -(-len(net) // S), -(-len(par) // S)
    assert written(repo) == {"network_rel.bin": (n_net, n_net), "network_rel_params.bin": (n_par, n_par)}
    assert board(repo).sectors() == [0x71000000 + i * S for i in range(n_net)] + \
        [0x71800000 + i * S for i in range(n_par)]                        # nothing else on the board
    assert_board_holds(repo, split=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("  FLASH")]
    assert lines == [f"  FLASH    build/big_mlp/network_rel.bin \u2192 0x71000000: {n_net} of {n_net} sectors "
                     f"({len(net) // 1024} KiB) in {report(repo)['images'][0]['seconds']:.1f} s  SIMULATED",
                     f"  FLASH    build/big_mlp/network_rel_params.bin \u2192 0x71800000: {n_par} of {n_par} sectors "
                     f"({len(par) // 1024} KiB) in {report(repo)['images'][1]['seconds']:.1f} s  SIMULATED"]
    r = report(repo)
    assert (r["simulated"], r["probe"], r["board"], r["programmer_calls"]) == (True, SERIAL, "stm32n6570-dk", 1)
    on_board = json.load(open(os.path.join(repo, "build", "big_mlp", "flash", "on_board.json")))
    assert on_board["images"][1] == {"path": "build/big_mlp/network_rel_params.bin", "role": "params",
                                     "address": "0x71800000", "size": len(par),
                                     "sha256": hashlib.sha256(par).hexdigest()}
    before = calls(repo)
    proc = flash(repo, "RELOC_SPLIT=1")
    assert "is up to date" in proc.stdout and calls(repo) == before    # 0 bytes, 0 programmer calls


def test_dry_run_and_verbose_show_the_commands_and_change_nothing(repo):
    before, recs = calls(repo), records(repo)
    proc = flash(repo, "RELOC_SPLIT=1", "DRY_RUN=1")
    dry = [line for line in proc.stdout.splitlines() if line.startswith("  DRY-RUN")]
    assert [line.split()[2:6] for line in dry] == [["-c", "port=SWD", "mode=hotplug", "freq=2000"]]
    assert " -u 0x71000000 " in dry[0] and " -d " not in dry[0]       # nothing changed: the read-back only
    assert calls(repo) == before and records(repo) == recs       # no programmer run, no record touched
    flashed = [line for line in proc.stdout.splitlines() if line.startswith("  FLASH ")]
    assert flashed and all(line.endswith("  DRY RUN: nothing was written") for line in flashed)
    change_raw(repo, [7 * S])
    proc = flash(repo, "RELOC_SPLIT=1", "VERBOSE=1")
    shown = [line for line in proc.stdout.splitlines() if "STM32_Programmer_CLI" in line]
    assert len(shown) == 1 and " -u " in shown[0] and " -d " in shown[0] and shown[0].rstrip().endswith("-v")
    assert calls(repo) == before + 1


def test_records_survive_clean(repo):
    recs = records(repo)
    scons(repo, "-c", "big_mlp", "RELOC_SPLIT=1")
    assert recs and records(repo) == recs
    scons(repo, "big_mlp", "RELOC_SPLIT=1")


def test_one_byte_raw_change_split(repo):
    old_net, old_par = image(repo, "network_rel.bin"), image(repo, "network_rel_params.bin")
    change_raw(repo, [3 * S + 10])
    flash(repo, "RELOC_SPLIT=1")
    new_par = image(repo, "network_rel_params.bin")
    assert len(differing_sectors(old_par, new_par, 0)) == 1
    assert written(repo) == {"network_rel.bin": (1, 1), "network_rel_params.bin": (1, -(-len(new_par) // S))}
    assert report(repo)["images"][1]["bytes_written"] == S and old_net != image(repo, "network_rel.bin")
    assert_board_holds(repo, split=True)


def test_one_byte_raw_change_not_split(repo):
    flash(repo, "RELOC_SPLIT=0")                      # the layout changed: the image grows over 0x71000000
    assert_board_holds(repo, split=False)
    old = image(repo, "network_rel.bin")
    change_raw(repo, [20 * S + 3])
    flash(repo, "RELOC_SPLIT=0")
    new = image(repo, "network_rel.bin")
    expected = differing_sectors(old, new, 0x71000000)
    assert len(expected) == 2 and expected[0] == 0x71000000           # rt_ctx (CRC) + the weight's sector
    assert written(repo) == {"network_rel.bin": (2, -(-len(new) // S))}
    assert_board_holds(repo, split=False)


def test_code_only_change_writes_network_sectors_only(repo):
    flash(repo, "RELOC_SPLIT=1")
    proc = flash(repo, "RELOC_SPLIT=1", "RELOC_SECURE=0")       # other compiler flags, same weights
    assert "non-secure image on a secure firmware" in proc.stdout
    assert written(repo)["network_rel.bin"] == (1, 1) and written(repo)["network_rel_params.bin"][0] == 0
    before = calls(repo)
    flash(repo, "RELOC_SPLIT=1")                                # back: the flash step runs again
    assert calls(repo) > before and written(repo)["network_rel_params.bin"][0] == 0


def test_the_flash_step_parses_each_image_once(repo):
    """The layout parses the image; the gate (installs, firmware, external pools) takes that one."""
    flash(repo, "RELOC_SPLIT=1")
    change_raw(repo, [5])
    scons(repo, "RELOC_SPLIT=1")                          # packed (pack parses what it wrote: its check)
    proc = flash(repo, "RELOC_SPLIT=1", env={"PYTHONPATH": os.path.join(ROOT, "tests", "fixtures", "count_parses")})
    parsed = re.findall(r"^PARSED (\S+)$", proc.stderr, re.M)
    # then the checker reads the layout its own way, as the loader would in XIP and in COPY mode
    assert parsed == [os.path.join("build", "big_mlp", "network_rel.bin")] + ["network_rel.bin"] * 2, proc.stderr
    assert written(repo)["network_rel_params.bin"][0] == 1


def test_flash_code_change_reruns_the_flash_step(repo):
    """What reaches the board also comes from library code (the gate, the multi-model header)."""
    flash(repo, "RELOC_SPLIT=1")
    code = os.path.join(repo, "site_scons", "n6", "flash", "mrel.py")
    text = open(code).read()
    try:
        open(code, "a").write("\n# a change of the header code\n")
        before = calls(repo)
        flash(repo, "RELOC_SPLIT=1")
        assert calls(repo) > before and sum(w for w, _ in written(repo).values()) == 0
    finally:
        open(code, "w").write(text)


def test_force_rewrites_everything(repo):
    before = calls(repo)
    flash(repo, "RELOC_SPLIT=1", "FORCE=1")
    n_par = -(-len(image(repo, "network_rel_params.bin")) // S)
    assert written(repo) == {"network_rel.bin": (1, 1), "network_rel_params.bin": (n_par, n_par)}
    assert {i["full_write_reason"] for i in report(repo)["images"]} == {"FORCE=1"} and calls(repo) == before + 1


def test_another_probe_serial_writes_everything(repo):
    board(repo).set_probe(serial="0042000000000000000000FF")
    try:
        flash(repo, "RELOC_SPLIT=1")                 # nothing else changed: the probe identity reruns it
        n_par = -(-len(image(repo, "network_rel_params.bin")) // S)
        assert written(repo)["network_rel_params.bin"] == (n_par, n_par)
        assert report(repo)["probe"] == "0042000000000000000000FF"
    finally:
        board(repo).set_probe(serial=SERIAL)
    flash(repo, "RELOC_SPLIT=1")                      # back: the first board's record is still right
    assert written(repo)["network_rel_params.bin"][0] == 0


def test_interrupted_by_probe_lost_then_completed(repo):
    flash(repo, "RELOC_SPLIT=1")
    kept = records(repo)
    change_raw(repo, [k * S + 1 for k in range(1, 9)])
    proc = flash(repo, "RELOC_SPLIT=1", env={"N6_SIM_PROGRAMMER_FAIL": "probe-lost"}, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "scons: *** [build/big_mlp/flash/on_board.json] build/big_mlp/flash/programmer.log: probe lost during the "
        "flash (fix: check the USB cable, power-cycle the board and flash again (the record was not updated: the next "
        "flash rewrites what was interrupted))"]
    assert "DEV_USB_COMM_ERR" in open(os.path.join(repo, "build", "big_mlp", "flash", "programmer.log")).read()
    assert {k: v for k, v in records(repo).items() if not k.endswith("pending.json")} == kept
    assert not os.path.exists(os.path.join(repo, "build", "big_mlp", "flash", "on_board.json"))
    flash(repo, "RELOC_SPLIT=1")
    assert_board_holds(repo, split=True)


def test_interrupted_by_sigint_then_completed(repo):
    flash(repo, "RELOC_SPLIT=1")
    kept = records(repo)
    change_raw(repo, [k * S + 2 for k in range(1, 13)])
    scons(repo, "big_mlp", "RELOC_SPLIT=1")             # build first: only the flash is interrupted
    programs = len(board(repo).events("program"))
    proc = subprocess.Popen([sys.executable, "-m", "SCons", "-Q", "flash", "MODEL=big_mlp", "RELOC_SPLIT=1"],
                            cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=dict(os.environ, N6_SIM_PROGRAMMER_RATE="100000"))
    deadline = time.time() + 60
    while len(board(repo).events("program")) <= programs + 1 and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)                 # Ctrl-C in the terminal: scons and the programmer
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "Traceback" not in err
    # One line either way: SCons saw the Ctrl-C first, or the programmer died of it first (a loaded machine).
    (line,) = err.strip().splitlines()
    assert line == "scons: *** [build/big_mlp/flash/on_board.json] Build interrupted." or \
        "programmer stopped by signal 2" in line
    n = len(board(repo).events("program"))
    assert programs + 1 < n < programs + 12            # interrupted half-way
    time.sleep(0.5)
    assert len(board(repo).events("program")) == n     # no programmer left running
    assert {k: v for k, v in records(repo).items() if not k.endswith("pending.json")} == kept
    assert not os.path.exists(os.path.join(repo, "build", "big_mlp", "flash", "on_board.json"))
    flash(repo, "RELOC_SPLIT=1")
    assert_board_holds(repo, split=True)


def _board_file(repo, name, **changes):
    text = open(os.path.join(repo, "firmware", "boards", "stm32n6570-dk.toml")).read()
    for old in changes:
        assert old.replace("_", " ") in text or old in text
    for old, new in changes.items():
        text = text.replace(old, new)
    path = os.path.join(repo, name)
    open(path, "w").write(text)
    return path


@pytest.mark.parametrize("edits, extra, message", [
    ({"network = 0x71000000": "network = 0x70100000"}, [],
     "build/big_mlp/network_rel.bin: 15"),
    ({"params = 0x71800000": "params = 0x71000000"}, [],
     "does not fit the network region 0x71000000-0x71000000 (0 bytes;"),
    ({"size = 0x08000000": "size = 0x01900000"}, ["RELOC_PARAMS_FLASH_SIZE=none"],
     "does not fit the params region 0x71800000-0x71900000 (1048576 bytes;"),
])
def test_gate_refuses_before_any_programmer_call(repo, edits, extra, message):
    path = _board_file(repo, "gate.toml", **edits)
    before = calls(repo)
    proc = flash(repo, "RELOC_SPLIT=1", f"BOARD={path}", *extra, check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    line, = proc.stderr.strip().splitlines()
    assert message in line and "bytes at 0x7" in line and "(fix: " in line
    assert calls(repo) == before


@pytest.mark.parametrize("target", ["flash", "run"])
def test_damaged_image_is_refused_before_any_programmer_call(repo, target):
    """An image changed after the build checked it (here by its own pack step, past the packer's
    check) fails the loader's checks: one line with ST's error name, no programmer call, no board
    started, and the image is gone so that the next build makes it again."""
    before = calls(repo)
    proc = scons(repo, target, "MODEL=big_mlp", "RELOC_FLASH_SIZE=9M", check=False,
                 env={"PYTHONPATH": os.path.join(ROOT, "tests", "fixtures", "damaged_pack")})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    line, = proc.stderr.strip().splitlines()
    node = "flash/on_board.json" if target == "flash" else "run/run.json"    # a run puts its model there first
    assert line.startswith(f"scons: *** [build/big_mlp/{node}] build/big_mlp/network_rel.bin: rejected by "
                           "the image checker: n6 rule 'params_crc' (ST's loader installs it): ") and \
        line.endswith("(fix: build it again: `scons`)")
    assert calls(repo) == before and "model network on" not in proc.stdout      # no board started
    assert not os.path.exists(os.path.join(repo, "build", "big_mlp", "network_rel.bin"))
    flash(repo)
    assert_board_holds(repo, split=False)


def test_boot_area_refusal_names_the_area(repo):
    path = _board_file(repo, "boot.toml", **{"network = 0x71000000": "network = 0x70100000"})
    proc = flash(repo, "RELOC_SPLIT=1", f"BOARD={path}", check=False)
    assert "would write the boot area 0x70000000-0x70FF0000 (FSBL and applications)" in proc.stderr


def _model_names(repo):
    models = os.path.join(repo, "models")
    return sorted(d for d in os.listdir(models) if os.path.isdir(os.path.join(models, d)))


def test_several_models_without_a_choice_is_one_line(repo):
    proc = scons(repo, "flash", check=False)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"scons: *** several models and no choice: {', '.join(_model_names(repo))}"
        " (fix: scons flash MODEL=<name>, or models = [...] in firmware/boards/stm32n6570-dk.toml)"]
    proc = scons(repo, "flash", "MODEL=big_mlp,kws_mlp", check=False)
    assert proc.returncode == 2 and "a 2.x install holds one model on the board at a time" in proc.stderr


def test_documented_failure_through_scons_is_one_line(repo):
    proc = flash(repo, "RELOC_SPLIT=1", "FORCE=1", env={"N6_SIM_PROGRAMMER_FAIL": "not-dev-boot"}, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "scons: *** [build/big_mlp/flash/on_board.json] build/big_mlp/flash/programmer.log: board not in development "
        "boot (debug access closed, flash erase refused) (fix: set BOOT1 to the development position and power-cycle "
        "the board)"]


def test_flash_model_switch_invalidates_the_other_models_stamp(repo):
    flash(repo, "RELOC_SPLIT=1")
    scons(repo, "flash-tiny_prebuilt", "RELOC_SPLIT=1")
    assert not os.path.exists(os.path.join(repo, "build", "big_mlp", "flash", "on_board.json"))
    flash(repo, "RELOC_SPLIT=1")                     # runs again: the board holds tiny_prebuilt now
    assert_board_holds(repo, split=True)
    assert written(repo)["network_rel.bin"][0] == 1


@pytest.fixture
def cifar_named(repo):
    """cifar_cnn with a c-name of its own (`cifar`): two models of one name never share a 3.x board."""
    spec = os.path.join(repo, "models", "cifar_cnn", "model.json")
    with open(spec, "w") as f:
        f.write('{"name": "cifar"}')
    yield
    os.unlink(spec)


def test_multi_model_flash_3x(repo, cifar_named):
    args = ["BUILD_DIR=build30", "STEDGEAI_SIM_RELEASE=3.0", "flash", "MODEL=kws_mlp,cifar_cnn"]
    scons(repo, *args)
    st = board(repo, "build30")
    kws, cifar = image(repo, "network_rel.bin", "kws_mlp", "build30"), image(repo, "cifar_rel.bin", "cifar_cnn",
                                                                              "build30")
    cifar_at = 0x71000000 + -(-len(kws) // S) * S
    header = st.read(0x70FFF000, 12 + 16)
    assert mrel.parse(header) == (mrel.FLAG_XIP, [(0x71000000, 0), (cifar_at, 0)])
    assert st.read(0x71000000, len(kws)) == kws and st.read(cifar_at, len(cifar)) == cifar
    before = calls(repo, "build30")
    assert "is up to date" in scons(repo, *args).stdout and calls(repo, "build30") == before
    scons(repo, "BUILD_DIR=build30", "STEDGEAI_SIM_RELEASE=3.0", "flash-kws_mlp")
    assert mrel.parse(st.read(0x70FFF000, 20)) == (mrel.FLAG_XIP, [(0x71000000, 0)])
    assert not os.path.exists(os.path.join(repo, "build30", "cifar_cnn", "flash", "on_board.json"))
    path = _board_file(repo, "overlap.toml", **{"multi_model_header = 0x70FFF000": "multi_model_header = 0x71000000"})
    before = calls(repo, "build30")
    proc = scons(repo, *args, f"BOARD={path}", check=False)
    assert "build/" not in proc.stderr.split("overlaps")[0] and proc.returncode == 2
    assert ("build30/kws_mlp/network_rel.bin: " in proc.stderr and "bytes at 0x71000000-" in proc.stderr and
            "overlaps multi-model header (kws_mlp, cifar_cnn) (28 bytes at 0x71000000-0x7100001C)" in proc.stderr)
    assert calls(repo, "build30") == before


def test_on_board_gives_other_steps_the_flash_step(repo):
    """What `scons run` builds on: env.OnBoard(model) is the model's flash step."""
    sconstruct = os.path.join(repo, "SConstruct")
    original = open(sconstruct).read()
    with open(sconstruct, "a") as f:
        f.write('\nif "probe-run" in COMMAND_LINE_TARGETS:\n'
                '    env.Alias("probe-run", env.Command("$BUILD_DIR/probe-run.txt", env.OnBoard("tiny_prebuilt"),\n'
                '              Copy("$TARGET", "$SOURCE")))\n')
    try:
        scons(repo, "probe-run")
        st = board(repo)
        tiny = image(repo, "network_rel.bin", "tiny_prebuilt")
        assert st.read(0x71000000, len(tiny)) == tiny
        assert json.load(open(os.path.join(repo, "build", "probe-run.txt")))["model"] == "tiny_prebuilt"
        before = calls(repo)
        assert "is up to date" in scons(repo, "probe-run").stdout and calls(repo) == before
        proc = scons(repo, "probe-run", "flash", "MODEL=big_mlp", "FORCE=1", check=False)   # both steps run
        assert proc.returncode == 2 and "on the board (fix: flash (or run) one model set at a time)" in proc.stderr
    finally:
        open(sconstruct, "w").write(original)


def test_size_gate_budgets_come_from_the_board_file(repo):
    path = _board_file(repo, "small.toml", **{"exec_ram = { base = 0x34060000, size = 0xA0000 }":
                                               "exec_ram = { base = 0x34060000, size = 0x100 }"})
    proc = scons(repo, "kws_mlp", f"BOARD={path}", check=False)
    assert proc.returncode == 2 and "does not fit: exec RAM (XIP) needs" in proc.stderr and \
        "256 available" in proc.stderr
    scons(repo, "kws_mlp", f"BOARD={path}", "RELOC_EXEC_RAM_SIZE=640K")        # the variable overrides the board
    proc = scons(repo, "kws_mlp", "BOARD=nosuch", check=False)
    assert proc.returncode == 2 and "firmware/boards/nosuch.toml: board file not found" in proc.stderr


def test_gate_reads_the_install_validation_firmware(repo, tmp_path):
    """With validation firmwares in the install, the gate judges the image by the variant that
    loads it (XIP here), read from its ELF; a changed firmware re-runs the gate."""
    from test_validation_firmware import build
    folder = os.path.join(repo, "build", "stedgeai-sim", "2.2", "scripts", "N6_reloc", "test")
    os.makedirs(folder)
    try:
        name = "stm32n6570-dk-validation-reloc-xip.elf"
        (tmp_path / "off").mkdir()
        (tmp_path / "on").mkdir()
        elf = build(tmp_path / "off", name, dbg=False)
        shutil.copy(elf, folder)
        before = calls(repo)
        proc = flash(repo, "RELOC_SPLIT=1", check=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        line, = proc.stderr.strip().splitlines()
        assert "build/big_mlp/network_rel.bin: dbg-info on but the firmware's is off (" in line and \
            "/scripts/N6_reloc/test/stm32n6570-dk-validation-reloc-xip.elf): INVALID_BIN" in line
        assert calls(repo) == before
        shutil.copy(build(tmp_path / "on", name), folder)
        bump(os.path.join(folder, "stm32n6570-dk-validation-reloc-xip.elf"))
        flash(repo, "RELOC_SPLIT=1")
        shutil.copy(elf, folder)                                  # the firmware changes: the gate runs again
        bump(os.path.join(folder, "stm32n6570-dk-validation-reloc-xip.elf"))
        assert "dbg-info on but the firmware's is off (" in flash(repo, "RELOC_SPLIT=1", check=False).stderr
        proc = flash(repo, "RELOC_SPLIT=1", "RELOC_COPY_MODE=1", check=False)      # the COPY variant is absent
        assert proc.returncode == 2 and "stm32n6570-dk-validation-reloc-copy.elf: The " \
            "'stm32n6570-dk-validation-reloc-copy.elf' is not available" in proc.stderr
    finally:
        shutil.rmtree(folder)


def test_gate_places_absolute_external_ram_pools(repo):
    """A model whose activations live in an absolute PSRAM pool flashes when the pool lies in the
    board's external RAM, and is refused (before any programmer call) when it does not."""
    mpool = os.path.join(repo, "models", "kws_mlp", "kws_mlp.mpool")
    original = open(mpool).read()
    try:
        spec = json.loads(open(os.path.join(MODELS, "big_mlp", "big_mlp.mpool")).read())   # the project's own
        for p in spec["memory"]["mempools"]:
            if p["fname"] == "xSPI1":
                p.pop("mode")                                      # absolute at 0x90000000
        open(mpool, "w").write(json.dumps(spec))
        proc = scons(repo, "flash", "MODEL=kws_mlp", "BUILD_DIR=build-psram")
        assert "xSPI1   0x03020600  RESET.ACTIV.WCACHED" in proc.stdout
        path = _board_file(repo, "no-psram-map.toml", **{
            "external_ram_device = { base = 0x90000000, size = 0x02000000 }": ""})
        before = calls(repo, "build-psram")
        proc = scons(repo, "flash", "MODEL=kws_mlp", "BUILD_DIR=build-psram", f"BOARD={path}", check=False)
        assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
            "scons: *** [build-psram/kws_mlp/flash/on_board.json] build-psram/kws_mlp/network_rel.bin: absolute pool "
            "'xSPI1' at 0x90000000-0x90000280 (640 bytes) is outside the board's external RAM 0x90100000-0x91C00000 "
            f"(fix: move the pool in the .mpool, or describe the RAM in [memory] external_ram_device of {path})"]
        assert calls(repo, "build-psram") == before
    finally:
        open(mpool, "w").write(original)


@pytest.mark.parametrize("found_by", ["PATH", "STM32_PROGRAMMER_CLI"])
def test_symlinked_simulated_programmer_flashes_a_model(repo, tmp_path, found_by):
    """The simulated CLI reached through a symlink elsewhere (on PATH or named), here the one of
    another checkout, is still the simulated programmer: it finds its package, its external
    loader and the simulated board."""
    from n6.flash.cubeprogrammer import CLI_NAME
    from n6.paths import SIM_PROGRAMMER_BIN as SIM_BIN
    link = tmp_path / CLI_NAME
    link.symlink_to(os.path.join(SIM_BIN, CLI_NAME))
    env = {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"} if found_by == "PATH" else \
        {"STM32_PROGRAMMER_CLI": str(link)}
    proc = scons(repo, "flash-tiny_prebuilt", "BUILD_DIR=build-link", "FORCE=1",
                 env={"STM32_PROGRAMMER_CLI": None, "STM32_CUBE_IDE_DIR": None, **env}, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    r = report(repo, "tiny_prebuilt", "build-link")
    assert (r["programmer"], r["found_by"], r["simulated"]) == (str(link), found_by, True)
    tiny = image(repo, "network_rel.bin", "tiny_prebuilt", "build-link")
    assert board(repo, "build-link").read(0x71000000, len(tiny)) == tiny


def test_sim_board_variable_names_the_board_the_build_flashes(repo, tmp_path):
    """N6_SIM_BOARD, when set, is the simulated board of the build too (else <build dir>/sim-board)."""
    st = BoardState(tmp_path / "board")
    st.set_probe(serial="0042000000000000000000AB")
    scons(repo, "flash-tiny_prebuilt", "BUILD_DIR=build-link", env={"N6_SIM_BOARD": str(tmp_path / "board")})
    tiny = image(repo, "network_rel.bin", "tiny_prebuilt", "build-link")
    assert st.read(0x71000000, len(tiny)) == tiny and report(repo, "tiny_prebuilt", "build-link")["probe"] == \
        "0042000000000000000000AB"


def test_the_flash_step_without_scons(repo, tmp_path):
    """`python -m n6.flash`: the same step outside SCons (gate, changed sectors only, records); a
    damaged image is one line, exit 2, no programmer call."""
    scons(repo, "big_mlp")
    img = os.path.join(repo, "build", "big_mlp", "network_rel.bin")
    sim = tmp_path / "board"
    cli = [sys.executable, "-m", "n6.flash", img, "--sim-board", str(sim), "--out", str(tmp_path / "out")]
    env = dict(os.environ, PYTHONPATH=os.path.join(repo, "site_scons"))
    first = subprocess.run(cli, capture_output=True, text=True, cwd=repo, env=env)
    assert first.returncode == 0 and "sectors" in first.stdout and "SIMULATED" in first.stdout, first.stderr
    again = subprocess.run(cli, capture_output=True, text=True, cwd=repo, env=env)
    assert again.returncode == 0 and ": 0 of " in again.stdout
    events = len(BoardState(str(sim)).events("call"))
    damaged = tmp_path / "damaged_rel.bin"
    data = bytearray(open(img, "rb").read())
    data[0x40] ^= 0xFF
    damaged.write_bytes(bytes(data))
    bad = subprocess.run(cli[:3] + [str(damaged)] + cli[4:], capture_output=True, text=True, cwd=repo, env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr, bad.stderr
    assert len(BoardState(str(sim)).events("call")) == events
    # without --sim-board: N6_SIM_BOARD names the board, as for the simulated programmer and board
    named = subprocess.run(cli[:4] + cli[6:], capture_output=True, text=True, cwd=repo,
                           env=dict(env, N6_SIM_BOARD=str(sim)))
    assert named.returncode == 0 and ": 0 of " in named.stdout, named.stdout + named.stderr
