"""The NPU's register map as the install's `ATON.h` documents it, read at run time (facts, not
code): each unit's base (`ATON_<U>_BASE(UNIT)`, from ATON_BASE), its instance count
(`ATON_<U>_NUM`), each register's offset (`ATON_<U>_<R>_OFFSET`) and reset value
(`ATON_<U>_<R>_DT`, per instance when the macro takes UNIT), and field positions (`_LSB`). The
macros are C integer expressions (shifts, ors, ternaries on UNIT): a small evaluator reads them."""
import re
from dataclasses import dataclass, field

_DEFINE = re.compile(r"^#define\s+(ATON_\w+)(\((\w+)\))?\s+(.*)$")
_TOKEN = re.compile(r"\s*(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|\s*([A-Za-z_]\w*)|\s*(<<|>>|==|!=|<=|>=|&&|\|\||[-+*/%()?:|&^~!<>,])")


class MacroError(ValueError):
    pass


class Macros:
    """`#define` integer macros (object-like, or with one parameter) and their evaluation."""

    def __init__(self, text):
        self.defs = {}
        for line in text.replace("\\\n", " ").splitlines():
            m = _DEFINE.match(line.strip())
            if m:
                self.defs[m.group(1)] = (m.group(3), m.group(4).strip())

    def value(self, name, **args):
        param, body = self.defs[name]
        return _Expression(self, body, {param: args[param]} if param else {}).evaluate()


class _Expression:
    """Precedence climbing over C's integer operators."""
    BINARY = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="), ("<<", ">>"),
              ("+", "-"), ("*", "/", "%")]

    def __init__(self, macros, text, bindings):
        self.macros, self.bindings = macros, bindings
        self.tokens, pos = [], 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise MacroError(f"cannot read {text[pos:pos + 20]!r}")
            self.tokens.append(("n", int(m.group(1), 0)) if m.group(1) else ("id", m.group(2)) if m.group(2)
                               else ("op", m.group(3)))
            pos = m.end()
        self.i = 0

    def evaluate(self):
        value = self._ternary()
        if self.i != len(self.tokens):
            raise MacroError("trailing tokens")
        return value

    def _peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else (None, None)

    def _take(self, op=None):
        token = self._peek()
        if op is not None and token != ("op", op):
            raise MacroError(f"expected {op}")
        self.i += 1
        return token

    def _ternary(self):
        cond = self._binary(0)
        if self._peek() == ("op", "?"):
            self._take("?")
            yes = self._ternary()
            self._take(":")
            no = self._ternary()
            return yes if cond else no
        return cond

    def _binary(self, level):
        if level == len(self.BINARY):
            return self._unary()
        left = self._binary(level + 1)
        while self._peek()[0] == "op" and self._peek()[1] in self.BINARY[level]:
            op = self._take()[1]
            right = self._binary(level + 1)
            left = {"||": lambda: int(bool(left or right)), "&&": lambda: int(bool(left and right)),
                    "|": lambda: left | right, "^": lambda: left ^ right, "&": lambda: left & right,
                    "==": lambda: int(left == right), "!=": lambda: int(left != right),
                    "<": lambda: int(left < right), "<=": lambda: int(left <= right),
                    ">": lambda: int(left > right), ">=": lambda: int(left >= right),
                    "<<": lambda: left << right, ">>": lambda: left >> right, "+": lambda: left + right,
                    "-": lambda: left - right, "*": lambda: left * right, "/": lambda: left // right,
                    "%": lambda: left % right}[op]() & 0xFFFFFFFF
        return left

    def _unary(self):
        kind, value = self._peek()
        if kind == "op" and value in "~-!":
            self._take()
            operand = self._unary()
            return {"~": ~operand, "-": -operand, "!": int(not operand)}[value] & 0xFFFFFFFF
        return self._primary()

    def _primary(self):
        kind, value = self._take()
        if kind == "n":
            return value
        if kind == "op" and value == "(":
            if self._peek()[0] == "id" and self._peek()[1] in ("uint32_t", "int32_t", "uintptr_t", "intptr_t"):
                self._take()
                self._take(")")
                return self._unary()                            # a cast
            inner = self._ternary()
            self._take(")")
            return inner
        if kind == "id":
            if value in self.bindings:
                return self.bindings[value]
            if value not in self.macros.defs:
                raise MacroError(f"unknown macro {value}")
            param, _ = self.macros.defs[value]
            args = {}
            if param:
                self._take("(")
                args[param] = self._ternary()
                self._take(")")
            return self.macros.value(value, **args)
        raise MacroError(f"unexpected {value!r}")


@dataclass
class AtonUnit:
    name: str
    count: int
    bases: list                                         # offset from ATON_BASE of each instance
    registers: dict = field(default_factory=dict)      # register → (offset, [reset value per instance])


@dataclass
class AtonMap:
    units: dict                                         # unit name → AtonUnit
    lsb: dict                                           # "<U>_<R>_<F>" → bit position
    width: dict = field(default_factory=dict)           # "<U>_<R>_<F>" → bits

    def reset_values(self):
        """{offset from ATON_BASE: reset value} of every register of every instance."""
        return {base + offset: resets[i] for unit in self.units.values()
                for offset, resets in unit.registers.values() for i, base in enumerate(unit.bases)}

    def field_value(self, unit, register, name, value):
        """The named field of a register's `value`."""
        key = f"{unit}_{register}_{name}"
        return value >> self.lsb[key] & (1 << self.width[key]) - 1

    def field_bits(self, unit, register, names):
        """The mask of the named fields of a register (those that exist)."""
        return sum(1 << self.lsb[f"{unit}_{register}_{n}"] for n in names if f"{unit}_{register}_{n}" in self.lsb)


def read_aton_header(path):
    with open(path, encoding="latin-1") as f:
        macros = Macros(f.read())
    macros.defs["ATON_BASE"] = (None, "0")
    units = {}
    for name, (param, _) in macros.defs.items():
        if name.endswith("_BASE") and param == "UNIT":
            unit = name[5:-5]
            count = macros.value(f"ATON_{unit}_NUM") if f"ATON_{unit}_NUM" in macros.defs else 1
            units[unit] = AtonUnit(unit, count, [macros.value(name, UNIT=i) for i in range(count)])
    by_length = sorted(units, key=len, reverse=True)
    lsb, width = {}, {}
    for name, (param, _) in macros.defs.items():
        unit = next((u for u in by_length if name.startswith(f"ATON_{u}_")), None)
        if unit is None or param:
            continue
        rest = name[len(f"ATON_{unit}_"):]
        try:
            if rest.endswith("_OFFSET"):
                register = rest[:-len("_OFFSET")]
                units[unit].registers[register] = (macros.value(name), _resets(macros, f"{name[:-7]}_DT", units[unit]))
            elif rest.endswith("_LSB"):
                lsb[f"{unit}_{rest[:-4]}"] = macros.value(name)
            elif rest.endswith("_W"):
                width[f"{unit}_{rest[:-2]}"] = macros.value(name)
        except MacroError:
            continue                  # not an integer macro (a name, a description)
    return AtonMap(units, lsb, width)


def _resets(macros, name, unit):
    if name not in macros.defs:
        return [0] * unit.count
    param, _ = macros.defs[name]
    return [macros.value(name, **({param: i} if param else {})) for i in range(unit.count)]
