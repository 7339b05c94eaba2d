"""Catalog consistency checks run by ``manage.py validate_catalog`` (and ``make test``).

Each check module exposes ``check() -> list[Violation]`` over the catalog in the database;
CHECKS lists them in the order the command reports them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One catalog row that breaks one rule: which check, which row, and why in words."""

    check: str  # the check's short name, e.g. "weights-repo"
    row: str  # the row as a reader finds it: "weights llama-3-1-8b-instruct Q4_0"
    message: str  # what is wrong and what would make it right


Check = Callable[[], list[Violation]]


def all_checks() -> list[tuple[str, Check]]:
    """(name, check) for every check module, imported lazily (they query the database)."""
    from catalog.checks import context, formats, memory, prices, repos

    return [
        ("weights-repo", repos.check),
        ("context", context.check),
        ("formats", formats.check),
        ("prices", prices.check),
        ("memory-types", memory.check),
    ]
