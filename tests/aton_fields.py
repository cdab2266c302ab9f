"""NPU registers set by ATON.h field name (aton_map.txt, itself judged against ATON.h in
test_npu_registers.py), other fields at reset: the register writes of the tests that program the
NPU model, through the CPU's stores (test_npu_board.py) or an epoch blob (npu_epoch.py)."""
from npu_model.registers import aton_map


def register_value(unit, register, fields):
    """The value of a register of `unit` with `fields` ({field: value}) set, the others at reset."""
    r = aton_map().units[unit].registers[register]
    value = r.reset
    for field, v in fields.items():
        value = r.field(field).put(value, v)
    return value


def encode(unit, i, registers):
    """[(offset from ATON_BASE, value)] of unit instance i's registers ({register: {field: value}})."""
    return [(aton_map().address(unit, i, name), register_value(unit, name, fields))
            for name, fields in registers.items()]
