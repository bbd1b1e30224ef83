# The Python layers of docs/architecture.md ("Layers"), read from the package's imports: public
# API -> sharded axis -> dispatch -> primitives -> lowering -> FFI registration, each module
# importing only its own layer, the layers below it and the helpers; the helpers import only
# helpers; no import cycle. So nothing below the public API calls the public API (a sharded
# sort's internal merges carry no precondition checks).
from __future__ import annotations

import ast
import functools
import pathlib

import pytest

pytestmark = pytest.mark.fast  # the fast tier (the README's test command)

PACKAGE = pathlib.Path(__file__).parents[1] / "jax_mergepath"

LAYERS = [  # top first
    {"__init__", "_merge", "_sort", "_checked", "_select"},  # public API (and its checks)
    {"_sharded", "_select_sharded"},
    {"_dispatch", "_select_dispatch"},
    {"_primitives", "_select_primitive"},
    {"_lowering"},
    {"_ffi"},
]
HELPERS = {"_args", "_dtypes", "_keys", "_bits"}
NATIVE = {"_cpu", "_cuda"}  # the nanobind modules


@functools.cache
def _imports() -> dict[str, set[str]]:
    """Each module of the package -> the package modules it imports (anywhere in its body)."""
    graph: dict[str, set[str]] = {}
    for path in [*PACKAGE.glob("*.py"), *PACKAGE.glob("_sharded/*.py")]:
        # (a subpackage is one module of its layer: its files' imports together)
        module = path.parent.name if path.parent != PACKAGE else path.stem
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == "jax_mergepath":
                    found |= {alias.name for alias in node.names}
                elif node.module.startswith("jax_mergepath."):
                    found.add(node.module.split(".")[1])
            elif isinstance(node, ast.Import):
                found |= {a.name.split(".")[1] for a in node.names
                          if a.name.startswith("jax_mergepath.")}
        graph[module] = graph.get(module, set()) | (found - NATIVE - {module})
    return graph


def _rank(module: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if module in layer)


def test_every_module_has_a_layer():
    known = set().union(*LAYERS) | HELPERS
    assert set(_imports()) == known, set(_imports()) ^ known


@pytest.mark.parametrize("module", sorted(set().union(*LAYERS) | HELPERS))
def test_imports_go_down(module):
    imports = _imports()[module]
    if module in HELPERS:
        assert imports <= HELPERS, f"helper {module} imports {imports - HELPERS}"
        return
    up = {m for m in imports - HELPERS if _rank(m) < _rank(module)}
    assert not up, f"{module} imports the layer(s) above it: {sorted(up)}"


def test_no_import_cycle():
    graph = _imports()
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import cycle: {' -> '.join((*path, module))}"
        if module in done:
            return
        for dep in sorted(graph.get(module, ())):
            visit(dep, (*path, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())
