"""INPUTS= files as the run reads them: a .npz whose arrays are named after the model's inputs
gives each input its own array, whatever order numpy stored them in; unnamed arrays go by position."""
import numpy as np

from n6.aivalidation.messages import ModelInfo, TensorDesc
from n6.run.inference import make_inputs

MODEL = ModelInfo("network", [TensorDesc("audio", "int8", (1, 6)), TensorDesc("meta", "int8", (1, 2))], [])


def test_npz_arrays_named_after_the_inputs_go_to_those_inputs(tmp_path):
    audio, meta = np.arange(12, dtype=np.int8).reshape(2, 6), np.array([[7, 8], [9, 10]], np.int8)
    path = tmp_path / "inputs.npz"
    np.savez(path, meta=meta, audio=audio)           # stored meta first
    runs = make_inputs(MODEL, str(path), runs=None)
    assert runs == [[audio[0].tobytes(), meta[0].tobytes()], [audio[1].tobytes(), meta[1].tobytes()]]


def test_unnamed_npz_arrays_go_by_position(tmp_path):
    audio, meta = np.zeros((1, 6), np.int8), np.ones((1, 2), np.int8)
    path = tmp_path / "inputs.npz"
    np.savez(path, audio, meta)
    assert make_inputs(MODEL, str(path)) == [[audio[0].tobytes(), meta[0].tobytes()]]
