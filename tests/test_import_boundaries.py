"""Imports go one way: workbench -> packets -> model. Domain code never imports textual."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _modules_after_import(target: str) -> set[str]:
    code = f"import sys, {target}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return set(out.stdout.split())


@pytest.mark.parametrize("package", ["model", "packets"])
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
        bad = {m for m in loaded if m.split(".")[0] in {"packets", "workbench", "textual"}}
        assert not bad, f"{name} pulls in {sorted(bad)}"


def test_model_source_never_imports_yaml_or_upper_layers() -> None:
    import ast
    from pathlib import Path

    import model

    forbidden = {"packets", "workbench", "yaml", "textual"}
    for path in sorted(Path(model.__path__[0]).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert not roots & forbidden, f"{path.name}:{node.lineno} imports {roots & forbidden}"
