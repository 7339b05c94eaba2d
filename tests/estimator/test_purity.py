"""Guard: estimator/ is pure Python and imports only the standard library and itself."""

from __future__ import annotations

import ast
import json
import subprocess
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


def _tooling_loaded_after(statements: str) -> list[str]:
    """estimator.calibration / estimator.validate modules in sys.modules after running
    `statements` in a fresh interpreter (other tests' imports would leak into this one)."""
    code = (
        f"import json, sys\n{statements}\n"
        "tooling = ('estimator.calibration', 'estimator.validate')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(tooling))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ESTIMATOR.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_the_runtime_does_not_load_the_calibration_or_validation_tooling() -> None:
    # resolve_factors runs too: the factors were once imported lazily from calibration.
    runtime = (
        "import estimator.api\n"
        "from estimator import speed\n"
        "speed.resolve_factors('llama.cpp', 'cuda', 'consumer')"
    )
    assert _tooling_loaded_after(runtime) == []


def test_the_tooling_check_would_see_the_calibration_package() -> None:
    # Without this, a wrong module prefix would make the test above pass vacuously.
    assert "estimator.calibration" in _tooling_loaded_after("import estimator.calibration")
