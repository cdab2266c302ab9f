"""The integer macros of an `ATON.h` (for the judge of the NPU model's register table,
test_npu_registers.py): C integer expressions (shifts, ors, ternaries on UNIT or IDX), evaluated
as the C preprocessor and compiler would."""
import re

_DEFINE = re.compile(r"^#define\s+(ATON_\w+)(\((\w+)\))?\s+(.*)$")
_TOKEN = re.compile(r"\s*(0[xX][0-9a-fA-F]+|\d+)[uUlL]*|\s*([A-Za-z_]\w*)"
                    r"|\s*(<<|>>|==|!=|<=|>=|&&|\|\||[-+*/%()?:|&^~!<>,])")


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
    APPLY = {"||": lambda a, b: int(bool(a or b)), "&&": lambda a, b: int(bool(a and b)),
             "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "&": lambda a, b: a & b,
             "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
             "<": lambda a, b: int(a < b), "<=": lambda a, b: int(a <= b),
             ">": lambda a, b: int(a > b), ">=": lambda a, b: int(a >= b),
             "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "+": lambda a, b: a + b,
             "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": lambda a, b: a // b,
             "%": lambda a, b: a % b}

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
            left = self.APPLY[op](left, right) & 0xFFFFFFFF
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
