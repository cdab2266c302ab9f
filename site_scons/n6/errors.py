"""The one exception type users see: a problem in a named file plus how to fix it."""


class N6Error(Exception):
    """Bad input. Rendered as one line: `<file>: <problem> (fix: <fix>)`."""

    def __init__(self, path, problem, fix=None):
        self.path = str(path) if path is not None else None
        self.problem = problem
        self.fix = fix
        super().__init__(str(self))

    def __str__(self):
        text = f"{self.path}: {self.problem}" if self.path else self.problem
        return f"{text} (fix: {self.fix})" if self.fix else text
