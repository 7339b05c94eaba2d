"""Guard: estimator/ is pure Python and imports only the standard library and itself."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ESTIMATOR = Path(__file__).resolve().parents[2] / "estimator"


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_it_finds_the_estimator_modules() -> None:
    # A wrong path would make the purity test below pass vacuously.
    assert len(list(ESTIMATOR.rglob("*.py"))) >= 3


def test_it_imports_only_the_standard_library_and_itself() -> None:
    allowed = set(sys.stdlib_module_names) | {"estimator", "__future__"}
    offenders = {
        str(path.relative_to(ESTIMATOR.parent)): sorted(_imported_roots(path) - allowed)
        for path in ESTIMATOR.rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_it_would_catch_a_third_party_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy\nfrom django.db import models\nimport json\n")
    assert _imported_roots(bad) - set(sys.stdlib_module_names) == {"numpy", "django"}
