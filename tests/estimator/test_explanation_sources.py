"""Every explanation step names where its number comes from ("estimator/kv/cache.py
kv_cache_bytes"): the file must exist and define the function, so a user who follows the
reference finds the formula."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from estimator.api import estimate

ROOT = Path(__file__).resolve().parents[2]
# The API's recorded estimator request (Llama 3.1 8B), as the schema's example shows it.
EXAMPLE = ROOT / "sizing_site" / "apikit" / "schema_examples.json"


def _defines(path: Path, name: str) -> bool:
    tree = ast.parse(path.read_text())
    return any(
        isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name
        for node in ast.walk(tree)
    )


def test_every_step_source_names_a_file_that_defines_it() -> None:
    result = estimate(json.loads(EXAMPLE.read_text())["raw"]["request"]["request"])
    sources = {step["source"] for step in result["explanation"] if "source" in step}
    code_sources = {s for s in sources if s.startswith("estimator/")}
    assert len(code_sources) >= 8, sources
    for source in code_sources:
        where, _, name = source.partition(" ")
        path = ROOT / where
        assert path.exists(), source
        if path.is_file() and name:
            assert _defines(path, name), source
