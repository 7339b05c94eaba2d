"""The code's size limits (docs/architecture.md): no Python module outside migrations over
600 lines, no function over 80. A module past the limit becomes a package split by
subdomain; a long function, named steps."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _tracked_python() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / name for name in listed if "/migrations/" not in name]


def test_no_module_is_over_600_lines() -> None:
    long = {}
    for path in _tracked_python():
        if path.exists():
            lines = path.read_text().count("\n")
            if lines > MAX_MODULE_LINES:
                long[str(path.relative_to(ROOT))] = lines
    assert long == {}


def test_no_function_is_over_80_lines() -> None:
    long = {}
    for path in _tracked_python():
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert long == {}


def test_the_limits_see_a_long_function() -> None:
    # The walker counts a function's lines from its def to its last statement: 81 here.
    source = "def f():\n" + "    x = 1\n" * 80
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    assert (node.end_lineno or 0) - node.lineno + 1 == MAX_FUNCTION_LINES + 1
