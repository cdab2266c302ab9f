"""Simulated STM32CubeProgrammer CLI and the simulated board's on-disk state."""
