"""The run and validate steps, without SCons: what `scons run` / `validate` do once SCons has
decided that they must run. `opts` are n6.run.options values; `say` prints a report."""
import json
import os
from collections.abc import Callable, Sequence

import numpy as np

from ..atomic import write_text
from ..build_layout import VALIDATE_FAILED, VALIDATE_REPORT
from ..aivalidation.messages import ModelInfo
from ..errors import N6Error
from . import inference, reference, validate
from .options import RunOptions, ValidateOptions
from .session import board_session


def run_step(opts: RunOptions, on_board_path: str, out_dir: str, say: Callable[[str], object] = print) -> None:
    """RUNS= inferences of the model on the board (n6.run.inference): outputs, run.json, report.
    The caller has put the model's set on the board (n6.flash.step.ensure_on_board)."""
    with board_session(opts.session, on_board_path, say) as (client, device, simulated):
        model = client.model(opts.c_name)
        inputs = inference.make_inputs(model, opts.inputs or None, opts.seed, opts.runs)
        logged = len(client.board_logs)
        model, results = inference.run_model(client, model.name, inputs,
                                             inference.run_param(opts.per_layer, opts.perf))
        board_log = client.board_logs[logged:]
    text, summary = inference.report(model, device, results, simulated)
    if board_log:                  # what the board said during the runs (the simulated NPU: outputs not computed)
        summary["board_log"] = board_log
        text += (f"\n  board: {len(board_log)} log line(s) during the runs (run.json board_log), "
                 f"the first: {board_log[0]}")
    summary["mode"] = "perf" if opts.perf else "io"
    summary["inputs_data"] = [[b.hex() for b in bufs] for bufs in inputs]
    inference.save(out_dir, model, results, summary)
    for verdict in (VALIDATE_REPORT, VALIDATE_FAILED):     # about the outputs just replaced
        if os.path.exists(os.path.join(out_dir, verdict)):
            os.unlink(os.path.join(out_dir, verdict))
    say(text)


def run_on_board(opts: ValidateOptions, on_board_path: str, model: ModelInfo, inputs: Sequence[Sequence[bytes]],
                 say: Callable[[str], object]) -> list[np.ndarray]:
    """The board's outputs (one array per output, runs first) on `inputs` (the model's set on
    the board, as for run_step)."""
    with board_session(opts.session, on_board_path, say) as (client, _, _):
        board_model, results = inference.run_model(client, model.name, inputs)
    return inference.outputs_arrays(board_model, results)


def validate_step(opts: ValidateOptions, run_json: str, on_board_path: str, target: str,
                  say: Callable[[str], object] = print) -> None:
    """The run's outputs against the reference: validate.json, or validate-failed.json and an
    error (no validate.json a later look could take for this run's verdict)."""
    record = inference.RunRecord.load(run_json)
    if record.mode == "perf":
        raise N6Error(run_json, "a perf-only run (RUN_MODE=perf) brings no outputs back to validate",
                      "validate with RUN_MODE=io")
    model, out_dir = record.model, os.path.dirname(run_json)
    got = [np.load(inference.output_path(out_dir, d.name)) for d in model.outputs]

    def reference_of(inputs: Sequence[Sequence[bytes]]) -> reference.Reference:
        if opts.source:
            return reference.run_source(opts.source, model, inputs)
        from . import host_reference          # a prebuilt folder of CPU epochs: the host build of its C
        raw = host_reference.run(opts.model_dir, opts.session.install_root, inputs, len(model.outputs))
        return reference.Reference([np.stack([np.frombuffer(r[j], d.dtype) for r in raw])
                                    for j, d in enumerate(model.outputs)], [1.0] * len(model.outputs),
                                   f"host build of {opts.model_dir}/network.c (CPU epochs only)")

    if opts.reference_data:      # its inputs on the board, against its outputs (else the source's)
        inputs, expected = reference.read_data(opts.reference_data, model)
        got = run_on_board(opts, on_board_path, model, inputs, say)
        ref = reference_of(inputs) if expected is None else \
            reference.Reference(expected, reference.source_lsb(opts.source, model) if opts.source else
                                [1.0] * len(expected),
                                f"reference data {opts.reference_data}")
    else:
        ref = reference_of(record.inputs)
    text, report, passed = validate.validate(model, got, ref.outputs, opts.tolerance, ref.name, ref.lsb,
                                             record.simulated and reference.st_npu_epochs(opts.model_dir) > 0)
    report["simulated"] = record.simulated
    if opts.test_data:      # the model's bundled test set, on the board and on the reference
        samples, labels = validate.test_set(opts.test_data, model)
        board = run_on_board(opts, on_board_path, model, samples, say)[0]
        table, report["accuracy"] = validate.accuracy_report(board, reference_of(samples).outputs[0], labels,
                                                             opts.test_data, ref.name.split(" on ")[0])
        text += "\n" + table
    say(text)
    failed = os.path.join(out_dir, VALIDATE_FAILED)
    if not passed:
        if os.path.exists(target):
            os.unlink(target)
        write_text(failed, json.dumps(report, indent=1) + "\n")
        npu = report["rule"] == "simulated NPU"
        raise N6Error(target, f"outputs differ from the reference beyond {report['tolerance_lsb']} LSB "
                      f"{'(simulated NPU) ' if npu else ''}(see validate-failed.json)",
                      "check the model" + (" (the simulated NPU's rule: docs/validate.md)" if npu else
                                           " and VALIDATE_TOLERANCE="))
    if os.path.exists(failed):
        os.unlink(failed)
    write_text(target, json.dumps(report, indent=1) + "\n")
