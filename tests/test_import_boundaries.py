"""Imports go one way: workbench -> triage -> packets -> model. Domain code never imports
textual, and no module imports itself back through others (no import circles).

The source checks parse every module with `ast`: imports inside functions count, imports under
`if TYPE_CHECKING:` do not (they never run).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest


def _modules_after_import(target: str) -> set[str]:
    code = f"import sys, {target}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return set(out.stdout.split())


@pytest.mark.parametrize("package", ["model", "packets", "triage"])
def test_domain_packages_do_not_import_textual(package: str) -> None:
    loaded = _modules_after_import(package)
    assert not {m for m in loaded if m == "textual" or m.startswith("textual.")}


def test_model_imports_neither_packets_nor_workbench_nor_yaml() -> None:
    import pkgutil

    import model

    names = [f"model.{m.name}" for m in pkgutil.walk_packages(model.__path__, "") if m.name]
    for name in ["model", *names]:
        loaded = _modules_after_import(name)
        # yaml is checked in model's own source below: numba imports pyyaml itself (to read
        # an optional .numba_config.yaml), so it is loaded whenever a numba kernel is.
        bad = {
            m for m in loaded if m.split(".")[0] in {"packets", "triage", "workbench", "textual"}
        }
        assert not bad, f"{name} pulls in {sorted(bad)}"


def test_model_source_never_imports_yaml_or_upper_layers() -> None:
    import ast
    from pathlib import Path

    import model

    forbidden = {"packets", "triage", "workbench", "yaml", "textual"}
    for path in sorted(Path(model.__path__[0]).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert not roots & forbidden, f"{path.name}:{node.lineno} imports {roots & forbidden}"


# --- the layers, from the source -----------------------------------------------------------

LAYERS = ("model", "packets", "triage", "workbench")
"""Lowest first: a module may import its own layer and the layers before it, never one after."""

DOMAIN = ("model", "packets", "triage")
"""Layers that never import textual."""

REPO = Path(__file__).resolve().parents[1]


def _under_type_checking(tree: ast.AST) -> set[int]:
    """ids of the nodes inside `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`) bodies."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                for child in node.body:
                    skipped.update(id(n) for n in ast.walk(child))
    return skipped


def _module_name(root: Path, path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def imported_names(path: Path, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute dotted name) of everything the module imports when it runs: for
    `from a import b`, both `a` and `a.b` (b may be a submodule)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _under_type_checking(tree)
    package = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            found.append((node.lineno, source))
            found += [(node.lineno, f"{source}.{a.name}") for a in node.names if a.name != "*"]
    return found


def module_graph(root: Path) -> tuple[dict[str, set[str]], list[str]]:
    """The project's import graph (module -> project modules it imports) and every arrow that
    goes against `LAYERS` or from a domain layer to textual, as 'file:line: a -> b'."""
    modules: dict[str, tuple[Path, bool]] = {}
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            name, is_package = _module_name(root, path)
            modules[name] = (path, is_package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    bad: list[str] = []
    for name, (path, is_package) in modules.items():
        rank = LAYERS.index(name.split(".")[0])
        where = path.relative_to(root).as_posix()
        for line, target in imported_names(path, name, is_package):
            top = target.split(".")[0]
            if top == "textual" and name.split(".")[0] in DOMAIN:
                bad.append(f"{where}:{line}: {name} -> {target}")
            if top in LAYERS and LAYERS.index(top) > rank:
                bad.append(f"{where}:{line}: {name} -> {target}")
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                graph[name].add(target)
    return graph, bad


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        circles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return circles


def test_every_import_goes_down_the_layers() -> None:
    _, bad = module_graph(REPO)
    assert not bad, "imports against workbench -> triage -> packets -> model:\n" + "\n".join(bad)


def test_no_import_circles() -> None:
    graph, _ = module_graph(REPO)
    assert not import_circles(graph)


def test_workbench_core_depends_on_no_other_workbench_folder() -> None:
    """core is what every step builds on: screens, widgets and the lab import it, never the
    other way (the app hands core what it needs, e.g. the key owners for the help)."""
    graph, _ = module_graph(REPO)
    bad = [
        f"{name} -> {target}"
        for name, targets in sorted(graph.items())
        if name.startswith("workbench.core.")
        for target in sorted(targets)
        if target.startswith("workbench.") and not target.startswith("workbench.core")
    ]
    assert not bad, "workbench.core imports from above it:\n" + "\n".join(bad)


def test_the_graph_sees_the_project() -> None:
    graph, _ = module_graph(REPO)
    assert "triage.scenario" in graph["triage.runs"]
    assert "workbench.screens.registry" in graph["workbench.app"]
    assert "packets.model_specs" in graph["packets.model_checks"]


def _tree(root: Path, files: dict[str, str]) -> Path:
    for layer in LAYERS:
        (root / layer).mkdir(parents=True, exist_ok=True)
        (root / layer / "__init__.py").write_text("", encoding="utf-8")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_an_upward_import_inside_a_function_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"packets/load.py": "def f():\n    from triage import runs\n"})
    _, bad = module_graph(root)
    assert bad == [
        "packets/load.py:2: packets.load -> triage",
        "packets/load.py:2: packets.load -> triage.runs",
    ]


def test_a_type_checking_import_is_not_an_arrow(tmp_path: Path) -> None:
    text = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from workbench.app import A\n"
    root = _tree(tmp_path, {"triage/runs.py": text, "workbench/app.py": "A = 1\n"})
    graph, bad = module_graph(root)
    assert not bad and graph["triage.runs"] == set()


def test_domain_code_importing_textual_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"triage/view.py": "import textual.widgets\n"})
    assert module_graph(root)[1] == ["triage/view.py:1: triage.view -> textual.widgets"]
    root = _tree(tmp_path / "ok", {"workbench/view.py": "import textual.widgets\n"})
    assert module_graph(root)[1] == []


def test_a_relative_import_circle_is_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "workbench/a.py": "from . import b\n",
            "workbench/b.py": "def f():\n    from .c import x\n",
            "workbench/c.py": "from workbench.a import y\n",
            "workbench/d.py": "from .a import y\n",
        },
    )
    graph, bad = module_graph(root)
    assert not bad
    assert import_circles(graph) == [["workbench.a", "workbench.b", "workbench.c"]]
