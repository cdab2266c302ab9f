"""Simulated ST Edge AI Core: the `stedgeai generate --target stm32n6` subset this project uses.

Reads int8 (QDQ) ONNX models, places buffers in the memory pools of a `.mpool` file and writes
the same output set, names and formats as the real tool. Its epochs are CPU epochs that call
the int8 kernels of the simulated LL_ATON runtime, so the generated code computes the model."""

# The modules of the project's library this tool runs (imported directly or through each other):
# a change of one regenerates every model, a change of any other does not. A test keeps the list
# equal to what the code imports.
LIBRARY_MODULES = ("atomic", "errors", "jsonfile", "mpool", "nn_interface", "placement", "profile", "releases",
                   "stedgeai_install")
