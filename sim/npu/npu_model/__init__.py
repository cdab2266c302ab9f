"""A model of the STM32N6's Neural-ART NPU, shared by the simulated board and the DK twin."""
