"""prices: every priced accelerator says what the price buys, where it comes from and when.

A purchase price without its configuration misleads most on unified-memory machines,
which are priced per memory size (a Mac Studio M3 Ultra cost $3,999 with 96 GB and
$9,499 with 512 GB), so for those the configuration must state the row's memory size.
"""

from __future__ import annotations

import re

from catalog.checks import Violation
from catalog.models import Accelerator, MemoryKind

NAME = "prices"
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:GB|GiB)\b", re.IGNORECASE)


def _row(card: Accelerator) -> str:
    return f"accelerator {card.slug}"


def states_memory(configuration: str, memory_gb: float) -> bool:
    """Whether `configuration` names `memory_gb` as "<n> GB" or "<n> GiB" (the unified
    memory; "1 TB SSD" and other sizes do not count)."""
    return any(abs(float(n) - memory_gb) < 0.5 for n in _SIZE.findall(configuration))


def _problems(card: Accelerator) -> list[str]:
    sources = card.sources if isinstance(card.sources, dict) else {}
    configuration = card.price_configuration.strip()
    problems = []
    if not configuration:
        problems.append("price_usd has no price_configuration: say what the price buys")
    if not str(sources.get("price_usd") or "").strip():
        problems.append("price_usd has no source (sources['price_usd'])")
    if card.price_date is None:
        problems.append("price_usd has no price_date")
    memory = card.memory_gb or card.memory_gib
    if (
        configuration
        and card.memory_kind == MemoryKind.UNIFIED
        and memory
        and not states_memory(configuration, memory)
    ):
        problems.append(
            f"unified memory is priced per size: price_configuration {configuration!r} does "
            f"not state this row's {memory:g} GB"
        )
    return problems


def check() -> list[Violation]:
    """One violation per problem of every public accelerator that has a price."""
    cards = Accelerator.objects.filter(price_usd__isnull=False).order_by("slug")
    return [Violation(NAME, _row(card), problem) for card in cards for problem in _problems(card)]
