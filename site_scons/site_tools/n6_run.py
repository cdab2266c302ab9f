"""`scons run` / `run-<model>` and `scons validate`: run the flashed model on the board over the
aiValidation protocol (the simulated board on a pty when no PORT= is given) and compare it with a
host reference. Each step reruns only when what is on the board (the flash step's stamp) or its
options change; `run` and `validate` flash first.

  build/<model>/run/run.json + output_<name>.npy    RUNS=, INPUTS=, SEED=
  build/<model>/run/validate.json                   VALIDATE_TOLERANCE= (LSB); with the model
      folder's test_data.npz (x samples, y labels) also top-1 accuracy on the board and the reference"""
import json
import os

import SCons.Action
import SCons.Script

from n6.errors import N6Error
from n6_scons import library_code, progress, reports_errors, say, sim_board_code, sim_board_dir, sim_firmware



def _session(opts, on_board_path):
    """Context manager yielding (client, device, simulated): PORT= or the board file's port, else
    the simulated board booting from the simulated flash the flash step wrote."""
    import contextlib
    from n6.board import load_board
    from n6.jsonfile import read_json
    from n6.run.session import connect, simulated_board

    on_board = read_json(on_board_path, "deploy stamp")
    board = load_board(opts["board_file"])
    port = opts["port"] or board.validation.port
    header = board.validation.header

    @contextlib.contextmanager
    def ctx():
        if port and not on_board.get("simulated"):
            _start_firmware(opts, on_board, board)
        if port:
            with connect(port, board.validation.baudrate, header) as (client, device):
                yield client, device, False
        elif on_board.get("simulated"):
            with simulated_board(opts["board_file"], state=opts["state"], release=opts["release"],
                                 firmware=opts["sim_firmware"], mode="COPY" if opts["copy_mode"] else "XIP") as sim_port:
                with connect(sim_port, board.validation.baudrate, header) as (client, device):
                    yield client, device, True
        else:
            raise N6Error(on_board_path, "the model is on a real board but no serial port is known",
                          "give PORT=/dev/ttyACM0 (or the board file's [validation] port)")
    return ctx()


def _start_firmware(opts, on_board, board):
    """Load ST's validation firmware into the board's SRAM and start it (real boards)."""
    from n6.flash import validation_firmware
    from n6.flash.cubeprogrammer import find_cli
    from n6.reloc.image import Image
    from n6.run import firmware_start
    network = next(i for i in on_board["images"] if i["role"] == "network")
    img = Image.load(network["path"])
    variant = validation_firmware.variant_for(opts["release"], img, board, opts["copy_mode"], network["path"])
    elf = validation_firmware.firmware_path(opts["install_root"], variant)   # the variant the flash gate checked
    say(f"  START    {os.path.basename(elf)}")
    if opts["backend"] == "pyocd":          # the flash step's programmer backend
        firmware_start.start_pyocd(elf, board.programmer.pyocd_target, board.programmer.frequency,
                                   on_board.get("probe"))
    else:
        firmware_start.start(elf, find_cli().bin_dir, board.programmer.frequency, board.programmer.access_port,
                             on_board.get("probe"))


@reports_errors
def _run_action(target, source, env):
    from n6.run import inference
    opts = json.loads(source[-1].read())
    with _session(opts, source[0].abspath) as (client, device, simulated):
        model = client.model(opts["c_name"])
        inputs = inference.make_inputs(model, opts["inputs"] or None, opts["seed"], opts["runs"])
        model, results = inference.run_model(client, model.name, inputs, per_layer=opts["per_layer"])
    text, summary = inference.report(model, device, results, simulated)
    summary["inputs_data"] = [[b.hex() for b in bufs] for bufs in inputs]
    inference.save(os.path.dirname(target[0].abspath), model, results, summary)
    say(text)


@reports_errors
def _validate_action(target, source, env):
    from n6.aivalidation.messages import ModelInfo, TensorDesc
    from n6.atomic import write_text
    from n6.run import validate
    import numpy as np
    opts = json.loads(source[-1].read())
    with open(source[0].abspath) as f:
        run = json.load(f)
    outdir = os.path.dirname(source[0].abspath)

    def descs(items):
        return [TensorDesc(d["name"], d["dtype"], tuple(d["shape"]), d["scale"], d["zero_point"]) for d in items]
    model = ModelInfo(run["model"], descs(run["inputs"]), descs(run["outputs"]), 0, 0, (), "", (), 0, 0)
    inputs = [[bytes.fromhex(h) for h in bufs] for bufs in run["inputs_data"]]
    from n6.run.inference import output_path
    got = [np.load(output_path(outdir, d.name)) for d in model.outputs]
    def reference_of(inputs):
        if opts["onnx"]:
            return validate.onnx_reference(opts["onnx"], model, inputs), f"onnxruntime on {opts['onnx']}"
        from n6.run import host_reference       # prebuilt folder: the host build of its generated C
        raw = host_reference.run(opts["model_dir"], opts["install_root"], inputs, len(model.outputs))
        return ([np.stack([np.frombuffer(r[j], d.dtype) for r in raw]) for j, d in enumerate(model.outputs)],
                f"host build of {opts['model_dir']}/network.c")
    ref, reference = reference_of(inputs)
    text, report, passed = validate.validate(model, got, ref, opts["tolerance"], reference)
    report["simulated"] = run["simulated"]
    if opts["test_data"]:      # the model's bundled test set, on the board and on the host reference
        from n6.run import inference
        samples, labels = validate.test_set(opts["test_data"], model)
        with _session(opts["session"], source[1].abspath) as (client, _, _):
            board_model, results = inference.run_model(client, model.name, samples)
        board = inference.outputs_arrays(board_model, results)[0]
        table, report["accuracy"] = validate.accuracy_report(board, reference_of(samples)[0][0], labels,
                                                             opts["test_data"], reference.split(" on ")[0])
        text += "\n" + table
    say(text)
    if not passed:             # no validate.json a later look could take for this run's verdict
        if os.path.exists(target[0].abspath):
            os.unlink(target[0].abspath)
        write_text(os.path.join(outdir, "validate-failed.json"), json.dumps(report, indent=1) + "\n")
        raise N6Error(target[0].path, f"outputs differ from the reference beyond {opts['tolerance']} LSB "
                      "(see validate-failed.json)", "check the model and VALIDATE_TOLERANCE=")
    stale = os.path.join(outdir, "validate-failed.json")
    if os.path.exists(stale):
        os.unlink(stale)
    write_text(target[0].abspath, json.dumps(report, indent=1) + "\n")


def run_targets(env, specs):
    """`run` / `validate` / `run-<model>` / `validate-<model>` for what the command line asks (an
    ordinary build declares no run step: declaring one reads the board file and lists the probes);
    call after FlashTargets. `specs`: the models that have an image."""
    from n6.board_files import board_path
    by_name = {spec.name: spec for spec in specs}
    wanted = set()
    for t in SCons.Script.COMMAND_LINE_TARGETS:
        verb, _, name = t.partition("-")
        if verb in ("run", "validate") and name in by_name:
            wanted.add(name)
        elif t in ("run", "validate"):
            board_file = os.path.abspath(board_path(env["BOARD"]))
            wanted |= {n for n in by_name if _chosen(env, n, board_file)}
    return [run_model(env, by_name[name]) for name in sorted(wanted)]


def run_model(env, spec):
    """(run node, validate node) of one model; call after FlashTargets. The run reads what the
    flash step put on the board: it depends on the model's `flash/on_board.json` (env.OnBoard), so
    a changed image is flashed first."""
    from n6.board import load_board
    from n6.board_files import board_path
    out = os.path.join(env.subst("$BUILD_DIR"), spec.name, "run")
    on_board = env.OnBoard(spec.name)
    install_root, install, _ = env.StedgeaiInstall()
    opts = {"runs": int(env["RUNS"]), "seed": int(env["SEED"]), "per_layer": bool(env.get("RUN_PER_LAYER")),
            "inputs": os.path.abspath(env["INPUTS"]) if env["INPUTS"] else "", "port": env["PORT"],
            "c_name": spec.c_name or "network", "board_file": os.path.abspath(board_path(env["BOARD"])),
            "state": sim_board_dir(env), "release": install.core,
            "install_root": os.path.abspath(install_root), "copy_mode": bool(env["RELOC_COPY_MODE"]),
            "backend": env.get("FLASH_BACKEND") or load_board(board_path(env["BOARD"])).programmer.backend,
            "sim_firmware": sim_firmware(env)}
    deps = [on_board, env.File(opts["board_file"])]
    run = env.Command([os.path.join(out, "run.json")], deps + [env.Value(json.dumps(opts, sort_keys=True))],
                      _RUN_ACTION)
    env.Depends(run, [library_code(env), sim_board_code(env)] +
                ([opts["sim_firmware"]] if os.path.isfile(opts["sim_firmware"]) else []))
    env.NoCache(run)
    onnx = spec.model_file if spec.kind == "source" and spec.model_file.endswith(".onnx") else ""
    # No ONNX (a prebuilt folder, a .tflite source): the host build of the generated C is the reference
    c_dir = spec.path if spec.kind != "source" else os.path.join(env.subst("$BUILD_DIR"), spec.name, "st_ai_output")
    test_data = os.path.join(spec.path, "test_data.npz")
    test_data = os.path.abspath(test_data) if os.path.isfile(test_data) else ""
    vopts = {"tolerance": float(env["VALIDATE_TOLERANCE"]), "onnx": os.path.abspath(onnx) if onnx else "",
             "model_dir": os.path.abspath(c_dir), "install_root": opts["install_root"],
             "test_data": test_data, "session": opts}
    val = env.Command(os.path.join(out, "validate.json"),
                      [run[0], on_board] + ([test_data] if test_data else []) +
                      ([onnx] if onnx else env.Glob(os.path.join(spec.path, "*")) if spec.kind != "source" else []) +
                      [env.Value(json.dumps(vopts, sort_keys=True))],
                      _VALIDATE_ACTION)
    env.Depends(val, library_code(env))
    env.Alias(f"run-{spec.name}", run)
    env.Alias(f"validate-{spec.name}", val)
    if _chosen(env, spec.name, opts["board_file"]):   # `run` / `validate`: the models `flash` puts there
        env.Alias("run", run)
        env.Alias("validate", val)
    return run, val


def _chosen(env, name, board_file):
    """MODEL= (comma list), else the board file's `models`, else every model."""
    from n6.board import load_board
    chosen = [m for m in env["MODEL"].split(",") if m] if env.get("MODEL") else \
        list(load_board(board_file).images.models)
    return not chosen or name in chosen


# Made once: making an action signs its function's code.
_RUN_ACTION = SCons.Action.Action(_run_action, progress("RUN", lambda t, e: os.path.dirname(t[0].path)))
_VALIDATE_ACTION = SCons.Action.Action(_validate_action, progress("VALIDATE", lambda t, e: t[0].path))


def generate(env):
    env.AddMethod(run_targets, "RunTargets")


def exists(env):
    return True
