"""Models of the STM32N6's devices the validation firmware relies on, one per device, each with
the register facts it needs; every other register reads back what was written (bus.py)."""
