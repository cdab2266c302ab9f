"""The DK twin: ST's own validation firmware ELF, unmodified, running on an emulated
STM32N6570-DK (memory map, peripheral models, exceptions, time) around unicorn's Cortex-M33, with
the Cortex-M55 instructions unicorn lacks completed here. The simulated board runs it instead of
its own Python firmware when the user names the ELF."""
