"""The package's shape: imports point down the layers only, and no module imports itself in a circle.

Layers, from the bottom (docs/architecture.md): the foundation
(errors, model, layouts, defaults, formats) <- codecs <- log <- companions,
kafka07, decoders <- ops <- render <- cli, spark. ``kseg/__init__.py`` is the
public facade above them all. Function-local imports of kseg modules hide the
graph, so they are allowed only where a heavy optional dependency is loaded on
use (the Spark layer, and ``kseg spark`` inside the CLI), or where the console entry
point takes over Ctrl-C before loading the command group. A module imported by a constant
name (``importlib.import_module("kseg.x")``, ``__import__("kseg.x")``) counts as an import.

What is loaded on use by name (the CLI's command table, the decoders' family table) is
written as ``"kseg.package.module:attribute"`` strings at module level; each counts as an
import here (layers, circles) and must name an attribute that exists in a module of the
naming module's own package.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "kseg"

RANKS = {
    "kseg.errors": 0, "kseg.printable": 0, "kseg.findings": 0, "kseg.model": 0, "kseg.layouts": 0, "kseg.defaults": 0, "kseg.kafka_releases": 0, "kseg.formats": 0,
    "kseg.storage": 0, "kseg.facts": 0, "kseg.checksums": 0, "kseg._checksum": 0,
    "kseg.lazy": 0, "kseg.prefetch": 0,
    "kseg.interrupts": 0, "kseg.allocator": 0,
    "kseg.codecs": 1,
    "kseg.log": 2,
    "kseg.companions": 3, "kseg.kafka07": 3, "kseg.decoders": 3,
    "kseg.ops": 4,
    "kseg.render": 5,
    "kseg.cli": 6, "kseg.spark": 6,
    "kseg": 7,
}
# Where a function-local import of a kseg module is the point: PySpark loaded on use (``kseg
# spark --help`` and ``import kseg.spark`` start no JVM). (A Spark worker's plugin registry is
# no such case: the driver hands it over as a value, ``kseg.ops.registry.RegistryUse``.)
LOCAL_IMPORTS_ALLOWED = {("kseg.cli.main", "kseg.spark.cli"), ("kseg.cli", "kseg.cli.main"), ("kseg.cli", "kseg.allocator"),
                         ("kseg.spark", "kseg.spark.source"), ("kseg.spark", "kseg.spark.session"),
                         ("kseg.spark.cli", "kseg.spark.session")}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
# C extensions are modules too (imported by name, importing nothing of kseg's)
MODULES.update({_module_name(p): p for p in sorted(PACKAGE.rglob("*.c"))})
# formats/ is installed as kseg.formats from the top-level folder
MODULES.update({f"kseg.formats.{p.stem}" if p.stem != "__init__" else "kseg.formats": p
                for p in sorted((PACKAGE.parent / "formats").glob("*.py"))})


def _rank(module: str) -> int:
    best = None
    for prefix, rank in RANKS.items():
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, rank)
    assert best is not None, module
    return best[1]


LAZY_REFERENCE = re.compile(r"kseg(\.\w+)+:\w+")


def lazy_references(module: str) -> list[tuple[str, str, int]]:
    """(module, attribute, line) of every ``"kseg.x.y:name"`` string at a module's top level."""
    if MODULES[module].suffix == ".c":
        return []
    tree = ast.parse(MODULES[module].read_text())
    out = []
    for top in tree.body:
        if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for node in ast.walk(top):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and LAZY_REFERENCE.fullmatch(node.value):
                target, _, attribute = node.value.partition(":")
                out.append((target, attribute, node.lineno))
    return out


def _defines(module: str, name: str) -> bool:
    tree = ast.parse(MODULES[module].read_text())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


# Calls that import a module named by a string: ``importlib.import_module("kseg.x")`` (however
# importlib or the function is named locally) and ``__import__("kseg.x")``.
IMPORT_CALLS = ("import_module", "__import__")


def _imported_by_call(node: ast.AST) -> list[str]:
    """The module a call imports by a constant name (``[]`` for any other node)."""
    if not isinstance(node, ast.Call) or not node.args:
        return []
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    first = node.args[0]
    if name in IMPORT_CALLS and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return [first.value]
    return []


def _imports(module: str) -> list[tuple[str, bool, int]]:
    """(imported kseg module, function-local?, line) for every import in a module, and every
    module it names to load on use."""
    path = MODULES[module]
    if path.suffix == ".c":
        return []
    tree = ast.parse(path.read_text())
    is_pkg = path.name == "__init__.py"
    local_lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)) or _imported_by_call(inner):
                    local_lines.add(inner.lineno)
    out = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_pkg:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            for alias in node.names:  # `from kseg.log import fast` imports the module kseg.log.fast
                full = f"{name}.{alias.name}"
                targets.append(full if full in MODULES else name)
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        targets += _imported_by_call(node)
        for t in targets:
            if t == "kseg" or t.startswith("kseg."):
                while t not in MODULES and "." in t:
                    t = t.rsplit(".", 1)[0]
                out.append((t, node.lineno in local_lines, node.lineno))
    out.extend((target, False, line) for target, _, line in lazy_references(module) if target in MODULES)
    return out


GRAPH = {m: _imports(m) for m in MODULES}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    wrong = [f"line {line}: {target} (layer {_rank(target)})" for target, _, line in GRAPH[module]
             if _rank(target) > _rank(module) and target != module]
    assert not wrong, f"{module} (layer {_rank(module)}) imports from a higher layer: {wrong}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_hidden_imports(module: str) -> None:
    hidden = [f"line {line}: {target}" for target, local, line in GRAPH[module]
              if local and (module, target) not in LOCAL_IMPORTS_ALLOWED]
    assert not hidden, f"{module} imports kseg modules inside functions: {hidden}"


def test_no_import_circles() -> None:
    edges = {m: {t for t, _, _ in GRAPH[m] if t != m and t in MODULES} for m in MODULES}
    # packages' __init__ modules are run before their submodules: count the edge to the package
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for m in sorted(edges):
        if m not in index:
            visit(m)
    assert not circles, f"import circles: {circles}"


def test_every_layer_is_known() -> None:
    for m in MODULES:
        _rank(m)


LAZY = {m: lazy_references(m) for m in MODULES if lazy_references(m)}


# The modules that name what they load on use.
LAZY_IN = ["kseg", "kseg.cli.dump", "kseg.cli.main", "kseg.cli.repair", "kseg.cli.stats", "kseg.cli.verify", "kseg.codecs", "kseg.decoders",
           "kseg.ops.dump", "kseg.ops.dump_split", "kseg.ops.executors", "kseg.ops.logdir", "kseg.ops.sniff",
           "kseg.ops.verify",
           "kseg.render.dump"]


def test_lazy_references_are_where_they_are_meant_to_be() -> None:
    """Only these modules load by name (the public facade's plugin registry of the environment,
    the command table and the registry reader, verify's --remote-metadata check, the snappy
    and lz4 codecs, the decoder families, the registry a worker that is not forked is given,
    the pre-0.8 reader for sniffing, verifying and dumping 0.7 files, the companion files'
    reading and lines in a dump, the cuts of a dump in slices, repair's --salvage and stats'
    --html, verify's check of a file a writer carries over); that each
    target lies below (or beside) its user is test_imports_point_down's job."""
    assert sorted(LAZY) == LAZY_IN


@pytest.mark.parametrize("module", sorted(LAZY))
def test_lazy_references_name_what_exists(module: str) -> None:
    """Each ``"module:attribute"`` names a module that defines the attribute."""
    for target, attribute, line in LAZY[module]:
        assert target in MODULES, f"{module} line {line}: no module {target}"
        assert _defines(target, attribute), f"{module} line {line}: {target} defines no {attribute}"


def test_lazy_tables_stay_in_their_package() -> None:
    """The command table names commands of kseg.cli, the family table decoders of
    kseg.decoders, the lazy built-in codecs modules of kseg.codecs."""
    from kseg.cli.main import COMMANDS
    from kseg.codecs import LAZY_BUILTINS
    from kseg.decoders import FAMILY

    decoders = {name: f.decoder for name, f in FAMILY.items()}
    commands = {name: c.where for name, c in COMMANDS.items()}
    for table, package in ((commands, "kseg.cli."), (decoders, "kseg.decoders."), (LAZY_BUILTINS, "kseg.codecs.")):
        assert table and all(ref.startswith(package) for ref in table.values()), table


def _private_ops_names(module: str) -> list[str]:
    """``from kseg.ops.x import _name`` and ``kseg.ops.x._name`` in a module outside kseg.ops."""
    path = MODULES[module]
    if path.suffix == ".c" or module == "kseg.ops" or module.startswith("kseg.ops."):
        return []
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kseg.ops"):
            out += [f"line {node.lineno}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = ast.unparse(node.value)
            if base.startswith("kseg.ops"):
                out.append(f"line {node.lineno}: {base}.{node.attr}")
    return out


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_names_of_operations_outside_them(module: str) -> None:
    """Executors (the CLI's pool, Spark) call an operation's public steps, never its insides."""
    assert not _private_ops_names(module), _private_ops_names(module)


@pytest.mark.parametrize("source, found", [
    ('importlib.import_module("kseg.ops.verify")', ["kseg.ops.verify"]),
    ('_importlib.import_module("kseg.ops.registry")', ["kseg.ops.registry"]),
    ('import_module("kseg.render.dump")', ["kseg.render.dump"]),
    ('__import__("kseg.cli.main")', ["kseg.cli.main"]),
    ('importlib.import_module(name)', []),  # not named here: the table that names it is checked instead
    ('load("kseg.ops.verify")', []),
])
def test_imports_by_name_are_imports(source: str, found: list[str]) -> None:
    """A module imported through importlib or ``__import__`` by a constant name is an import
    like any other (layers, circles, hidden imports)."""
    call = ast.parse(source).body[0].value  # type: ignore[attr-defined]
    assert _imported_by_call(call) == found
