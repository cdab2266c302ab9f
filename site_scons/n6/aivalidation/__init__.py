"""Host side of ST's aiValidation serial protocol (framing, messages, client); no SCons import."""
from .client import BoardError, Client, Device, RunResult, Timeouts
from .framing import Framing, Link, LinkError, LinkTimeout
from .messages import IO_ONLY, PER_LAYER, ModelInfo, Operator, TensorDesc

__all__ = ["BoardError", "Client", "Device", "RunResult", "Timeouts", "Framing", "Link", "LinkError",
           "LinkTimeout", "IO_ONLY", "PER_LAYER", "ModelInfo", "Operator", "TensorDesc"]
