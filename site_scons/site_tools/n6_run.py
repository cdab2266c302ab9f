"""`scons run` / `run-<model>` and `scons validate`: run the flashed model on the board over the
aiValidation protocol (the simulated board on a pty when no PORT= is given) and compare it with a
host reference. Each step reruns only when what is on the board (the flash step's stamp, or the
image when there is no flash step) or its options change.

  build/<model>/run/run.json + output_<name>.npy    RUNS=, INPUTS=, SEED=
  build/<model>/run/validate.json                   VALIDATE_TOLERANCE= (LSB)"""
import json
import os

import SCons.Action

from n6.errors import N6Error
from n6_scons import library_code, progress, reports_errors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIM_BOARD_CODE = os.path.join(ROOT, "sim", "board", "n6board")


def _session(opts):
    """Context manager yielding (client, device, simulated)."""
    import contextlib
    from n6.run.session import connect, simulated_board

    @contextlib.contextmanager
    def ctx():
        if opts["port"]:
            with connect(opts["port"], opts["baudrate"], opts["header"]) as (client, device):
                yield client, device, False
        else:
            with simulated_board(opts["board_file"], state=opts["state"] or None,
                                 image=None if opts["state"] else opts["image"],
                                 params=None if opts["state"] else opts["params"]) as port:
                with connect(port, opts["baudrate"], opts["header"]) as (client, device):
                    yield client, device, True
    return ctx()


@reports_errors
def _run_action(target, source, env):
    from n6.run import inference
    opts = json.loads(source[-1].read())
    with _session(opts) as (client, device, simulated):
        model = client.model(opts["c_name"])
        inputs = inference.make_inputs(model, opts["inputs"] or None, opts["seed"], opts["runs"])
        model, results = inference.run_model(client, device, model.name, inputs)
    text, summary = inference.report(model, device, results, simulated)
    summary["inputs_data"] = [[b.hex() for b in bufs] for bufs in inputs]
    inference.save(os.path.dirname(target[0].abspath), model, results, summary)
    print(text)


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
    from n6.run.inference import _safe
    got = [np.load(os.path.join(outdir, f"output_{_safe(d.name)}.npy")) for d in model.outputs]
    if not opts["onnx"]:     # the host build of the generated C as reference is not wired in yet
        write_text(target[0].abspath, json.dumps({"reference": None, "passed": None, "simulated": run["simulated"],
                                                  "note": "prebuilt folder: no host reference"}, indent=1) + "\n")
        print(f"  {opts['model_dir']}: not validated (no host reference for a prebuilt folder)")
        return
    ref = validate.onnx_reference(opts["onnx"], model, inputs)
    text, report, passed = validate.validate(model, got, ref, opts["tolerance"], f"onnxruntime on {opts['onnx']}")
    report["simulated"] = run["simulated"]
    print(text)
    if not passed:
        write_text(os.path.join(outdir, "validate-failed.json"), json.dumps(report, indent=1) + "\n")
        raise N6Error(target[0].path, f"outputs differ from the reference beyond {opts['tolerance']} LSB "
                      "(see validate-failed.json)", "check the model and VALIDATE_TOLERANCE=")
    write_text(target[0].abspath, json.dumps(report, indent=1) + "\n")


def run_model(env, spec, image, on_board=None):
    """(run node, validate node) of one model. `image`: the pack step's nodes; `on_board`: the
    flash step's stamp when there is one (the run then depends on it instead of the image)."""
    out = os.path.join(env.subst("$BUILD_DIR"), spec.name, "run")
    bins = [n for n in image if n.path.endswith(".bin")]
    params = [n for n in bins if n.path.endswith("_rel_params.bin")]
    main_bin = [n for n in bins if n not in params][0]
    opts = {"runs": int(env["RUNS"]), "seed": int(env["SEED"]),
            "inputs": os.path.abspath(env["INPUTS"]) if env["INPUTS"] else "",
            "port": env["PORT"], "baudrate": 921600, "header": "2byte", "c_name": spec.c_name or "network",
            "board_file": os.path.abspath(env.get("N6_BOARD_FILE") or
                                          os.path.join(ROOT, "firmware", "boards", "stm32n6570-dk.toml")),
            "state": os.path.abspath(env["ENV"]["N6_SIM_BOARD"]) if on_board and env["ENV"].get("N6_SIM_BOARD")
            else "", "image": main_bin.abspath, "params": params[0].abspath if params else ""}
    deps = [on_board] if on_board else bins
    if opts["inputs"]:
        deps.append(env.File(opts["inputs"]))
    run = env.Command([os.path.join(out, "run.json")], deps + [env.Value(json.dumps(opts, sort_keys=True))],
                      SCons.Action.Action(_run_action, progress("RUN", lambda t, e: os.path.dirname(t[0].path))))
    env.Depends(run, [library_code(env), env.Glob(os.path.join(SIM_BOARD_CODE, "*.py"))])
    env.NoCache(run)
    onnx = spec.model_file if spec.kind == "source" else ""
    vopts = {"tolerance": float(env["VALIDATE_TOLERANCE"]), "onnx": os.path.abspath(onnx) if onnx else "",
             "model_dir": spec.path}
    val = env.Command(os.path.join(out, "validate.json"),
                      [run[0]] + ([onnx] if onnx else []) + [env.Value(json.dumps(vopts, sort_keys=True))],
                      SCons.Action.Action(_validate_action, progress("VALIDATE", lambda t, e: t[0].path)))
    env.Depends(val, library_code(env))
    env.Alias(f"run-{spec.name}", run)
    env.Alias(f"validate-{spec.name}", val)
    env.Alias("run", run)
    env.Alias("validate", val)
    return run, val


def generate(env):
    env.AddMethod(run_model, "N6RunModel")


def exists(env):
    return True
