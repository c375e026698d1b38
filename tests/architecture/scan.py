"""The tree the import rules read: every import of every .py file, parsed with `ast`.

`.venv`, `var`, hidden folders and migrations are skipped; imports inside functions and
under `if TYPE_CHECKING:` count, and so does `importlib.import_module("a.literal.name")`.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIPPED_DIRS = frozenset({".venv", "var", "migrations", "__pycache__", "node_modules"})


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def within_any(module: str, packages: Iterable[str]) -> bool:
    return any(within(module, package) for package in packages)


def module_of(path: str) -> str:
    """`a/b/__init__.py` -> `a.b`, `a/b.py` -> `a.b`."""
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass(frozen=True)
class Import:
    """One imported name (or module) of one import statement."""

    path: str  # the importing file, relative to the root
    line: int
    statement: str  # as written, narrowed to this one name: "from x import a as b"
    module: str  # the module named, relative imports resolved
    name: str | None  # the name taken from it (`from module import name`), else None
    target: str  # the module reached: `module.name` when that is a module of the tree

    @property
    def importer(self) -> str:
        return module_of(self.path)

    @property
    def is_test(self) -> bool:
        return self.path.startswith("tests/")

    @property
    def home(self) -> str:
        """The package the file belongs to: its own module, or for a test the package its
        folder mirrors (`tests/queries/local/test_x.py` -> `queries.local`)."""
        if not self.is_test:
            return self.importer
        return ".".join(self.path.split("/")[1:-1])

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.statement}"


@dataclass(frozen=True)
class Tree:
    root: Path
    paths: tuple[str, ...]
    imports: tuple[Import, ...]
    exports: dict[str, tuple[str, dict[str, int]]]  # module -> (path, {name in __all__: line})

    @classmethod
    def read(cls, root: Path) -> Tree:
        paths = tuple(python_files(root))
        modules = frozenset(module_of(path) for path in paths)
        imports: list[Import] = []
        exports: dict[str, tuple[str, dict[str, int]]] = {}
        for path in paths:
            source = (root / path).read_text(encoding="utf-8")
            syntax = ast.parse(source, filename=path)
            imports.extend(imports_of(path, syntax, modules))
            listed = all_of(syntax)
            if listed is not None:
                exports[module_of(path)] = (path, listed)
        imports.sort(key=lambda i: (i.path, i.line, i.statement))
        return cls(root, paths, tuple(imports), exports)


def python_files(root: Path) -> Iterator[str]:
    for folder, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and d[0] != ".")
        relative = Path(folder).relative_to(root)
        for filename in sorted(filenames):
            if filename.endswith(".py"):
                yield (relative / filename).as_posix()


def imports_of(path: str, syntax: ast.Module, modules: frozenset[str]) -> Iterator[Import]:
    here = module_of(path)
    package = here if path.endswith("__init__.py") else here.rpartition(".")[0]
    for node in ast.walk(syntax):
        if isinstance(node, ast.Import):
            for alias in node.names:
                statement = f"import {spelled(alias)}"
                yield Import(path, node.lineno, statement, alias.name, None, alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = absolute(node, package)
            written = "." * node.level + (node.module or "")
            for alias in node.names:
                inner = f"{module}.{alias.name}" if module else alias.name
                target = inner if inner in modules else module
                statement = f"from {written} import {spelled(alias)}"
                yield Import(path, node.lineno, statement, module, alias.name, target)
        elif isinstance(node, ast.Call) and (name := dynamically_imported(node)) is not None:
            yield Import(path, node.lineno, ast.unparse(node), name, None, name)


def spelled(alias: ast.alias) -> str:
    return alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"


def absolute(node: ast.ImportFrom, package: str) -> str:
    if node.level == 0:
        return node.module or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def dynamically_imported(node: ast.AST) -> str | None:
    """The literal name given to `importlib.import_module(...)` or `__import__(...)`."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    first = node.args[0]
    if called in ("import_module", "__import__") and isinstance(first, ast.Constant):
        return first.value if isinstance(first.value, str) else None
    return None


def all_of(syntax: ast.Module) -> dict[str, int] | None:
    """The names of a module-level `__all__` list or tuple, with their lines."""
    for node in syntax.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if isinstance(node, ast.Assign | ast.AnnAssign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in targets
        ):
            value = node.value
            if isinstance(value, ast.List | ast.Tuple):
                return {
                    e.value: e.lineno
                    for e in value.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                }
            return {}
    return None
