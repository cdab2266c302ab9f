"""Simulated ST Edge AI Core: the `stedgeai generate --target stm32n6` subset this project uses.

Reads int8 (QDQ) ONNX models, places buffers in the memory pools of a `.mpool` file and writes
the same output set, names and formats as the real tool. Its epochs are CPU epochs that call
the int8 kernels of the simulated LL_ATON runtime, so the generated code computes the model."""

