"""Every package has a README, and every file a README names exists.

A README names a file with a backticked path or file name (`load.py`, `triage/scenario.py`,
`a100_error_bands.json`); it is looked up beside the README, then in each folder above it up to
the repository root. The measured A100 tables live in the shared folder, outside the repository:
those names are the ones `model.compiler.measured.MEASURED_FILES` reads.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from model.compiler.measured import MEASURED_FILES

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("model", "packets", "triage", "workbench")

NAMED = re.compile(r"`([\w][\w./-]*\.(?:py|md|json|yaml|toml|tcss|csv))`")
"""A backticked file name or relative path (no globs, no variables, no home folders)."""


PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*\.")
"""A name standing for one the user picks (`OUT.yaml`, `X.yaml.bands.json`): capitals first."""


def named_files(text: str) -> list[str]:
    """The file names and paths a README names, in order (placeholders left out)."""
    return [name for name in NAMED.findall(text) if not PLACEHOLDER.match(name)]


def missing_files(readme: Path, root: Path, outside: frozenset[str] = frozenset()) -> list[str]:
    """Names in `readme` that exist neither beside it nor in any folder above it up to `root`."""
    folders = [readme.parent] + [root / f for f in readme.parent.relative_to(root).parents]
    return [
        name
        for name in named_files(readme.read_text(encoding="utf-8"))
        if name not in outside and not any((f / name.rstrip("/")).exists() for f in folders)
    ]


def readmes() -> list[Path]:
    found = [REPO / "README.md"]
    for package in PACKAGES:
        found += sorted((REPO / package).rglob("README.md"))
    return found


@pytest.mark.parametrize("readme", readmes(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_file_a_readme_names_exists(readme: Path) -> None:
    assert not missing_files(readme, REPO, frozenset(MEASURED_FILES.values()))


def test_every_package_with_several_modules_has_a_readme() -> None:
    for package in PACKAGES:
        for init in sorted((REPO / package).rglob("__init__.py")):
            folder = init.parent
            modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
            if folder.name == package or len(modules) > 1:
                assert (folder / "README.md").is_file(), folder.relative_to(REPO)


def test_a_readme_naming_a_missing_file_is_caught(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "here.py").write_text("", encoding="utf-8")
    (tmp_path / "top.md").write_text("", encoding="utf-8")
    readme = tmp_path / "pkg" / "sub" / "README.md"
    readme.write_text(
        "`here.py`, `top.md`, `pkg/sub/here.py`, `gone.py`, `pkg/runtime_plan.py`, `*.tcss`, "
        "`OUT.yaml` (a placeholder)",
        encoding="utf-8",
    )
    assert missing_files(readme, tmp_path) == ["gone.py", "pkg/runtime_plan.py"]
