"""Which files a piece of Python code runs, read from its text, not imported: the files of the
modules named, of their packages, and of every module they name in turn at any depth and from any
function, within a tree of packages found by folder. A step reruns when one of them changes and
not when another does (n6_scons.step_code: the n6 modules a step's action imports;
n6.simulators: what the simulated tool and board run)."""
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping

References = tuple[list[str], list[str]]    # (modules a file names, file names it names in strings)


class CodeTree:
    """The packages `packages` ({name: folder}). Code names a module in its import lines (relative
    ones resolved; a name imported may be a module). The code of the packages `loaded` also names
    in a string the modules of those it loads by name (n6.simulators.load("npu_model.ecblob")),
    and its package's other files (tables, C sources) by their file name."""

    def __init__(self, packages: Mapping[str, str], loaded: Collection[str] = ()) -> None:
        self.packages, self.loaded = dict(packages), sorted(loaded)
        self.key = ",".join(sorted(self.packages)) + (f" loaded {','.join(self.loaded)}" if loaded else "")
        names = "|".join(map(re.escape, sorted(self.packages)))
        self._import = re.compile(r"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)"
                                  r"|import[ \t]+((?:%s)[\w.]*))" % names, re.M)
        self._by_name = re.compile(r"""["']((?:%s)(?:\.\w+)+)["']""" % "|".join(map(re.escape, self.loaded)))
        self._listings: dict[str, frozenset[str]] = {}
        self._files: dict[str, str | None] = {}
        self._references: dict[str, References] = {}
        self._data: dict[str, dict[str, list[str]]] = {}

    def closure(self, modules: Iterable[str], references: Callable[[str], References | None] | None = None) -> set:
        """The files of `modules` ("n6.reloc.prepare", ...), of their packages, of every module
        they name at any depth and the other files of the `loaded` packages they name;
        `references(path)` reads a file's names (default: self.references, once per process)."""
        read = references or self.references
        todo, files = list(modules), set()
        while todo:
            name = todo.pop()
            path = self.module_file(name)
            if path and path not in files:
                files.add(path)
                named, file_names = read(path) or ([], [])
                todo += named + [name.rpartition(".")[0]] * ("." in name)   # and its package
                files.update(f for n in file_names for f in self._package_data(name.split(".")[0]).get(n, []))
        return files

    def references(self, path: str) -> References:
        """(the modules of this tree the Python file `path` names, the file names it names in
        strings when it is a `loaded` package's)."""
        if path not in self._references:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            here = self._package_of(path)
            modules = []
            for dots, module, names, plain in self._import.findall(text):
                if plain:
                    modules.append(plain)
                    continue
                if dots:
                    if here is None:
                        continue
                    module = ".".join(here[:len(here) - len(dots) + 1] + ([module] if module else []))
                if module.split(".")[0] not in self.packages:
                    continue
                modules.append(module)
                modules += [f"{module}.{n.split()[0]}" for n in names.strip("()").replace("\n", " ").split(",")
                            if n.strip()]
            if here and here[0] in self.loaded:       # the loaded packages' code loads by name
                modules += self._by_name.findall(text)
                self._references[path] = (modules, re.findall(r"""["']([\w-]+\.\w+)["']""", text))
            else:
                self._references[path] = (modules, [])
        return self._references[path]

    def module_of(self, path: str) -> str:
        """The name of the module whose file is `path`; ValueError: a file of no package of this tree."""
        here = self._package_of(path)
        if here is None:
            raise ValueError(f"{path}: not in any of the packages {', '.join(sorted(self.packages))}")
        stem = os.path.splitext(os.path.basename(path))[0]
        return ".".join(here + ([] if stem == "__init__" else [stem]))

    def module_file(self, name: str) -> str | None:
        """The file of the module `name` (a package's __init__.py), None if it is none of this tree."""
        if name not in self._files:
            top, *rest = name.split(".")
            path = None
            if top in self.packages:
                base = os.path.join(self.packages[top], *rest)
                if rest and rest[-1] + ".py" in self._listing(os.path.dirname(base)):
                    path = base + ".py"
                elif "__init__.py" in self._listing(base):
                    path = os.path.join(base, "__init__.py")
            self._files[name] = path
        return self._files[name]

    def _package_of(self, path: str) -> list[str] | None:
        """The package the file `path` is in, as its names from the top (None: none of this tree)."""
        folder = os.path.dirname(os.path.abspath(path))
        for top, root in self.packages.items():
            within = os.path.relpath(folder, root)
            if within == os.curdir or not within.startswith(os.pardir):
                return [top] + ([] if within == os.curdir else within.split(os.sep))
        return None

    def _package_data(self, top: str) -> dict[str, list[str]]:
        """{file name: paths} of the files of the `loaded` package `top` other than Python."""
        if top not in self._data:
            found: dict[str, list[str]] = {}
            if top in self.loaded:
                for folder, _, names in os.walk(self.packages[top]):
                    for n in names:
                        if not n.endswith((".py", ".pyc")):
                            found.setdefault(n, []).append(os.path.join(folder, n))
            self._data[top] = found
        return self._data[top]

    def _listing(self, folder: str) -> frozenset[str]:
        """The names in `folder` (none if it is not one): a module is looked up in its package's
        listing, one read per folder, not two stats per name an import line gives."""
        if folder not in self._listings:
            try:
                self._listings[folder] = frozenset(os.listdir(folder))
            except OSError:
                self._listings[folder] = frozenset()
        return self._listings[folder]
