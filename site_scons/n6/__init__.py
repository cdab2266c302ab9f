"""Pure-Python library behind the n6 SCons tools: ST Edge AI formats, the relocatable
image, reports. Nothing here imports SCons, so every module is unit-testable on its own."""
