"""memory-types: an accelerator's memory kind agrees with its memory type and form factor,
and its two capacity figures agree.

Unified memory is system memory the GPU shares (Apple, DGX Spark, Strix Halo, Jetson,
MI300A); a GPU with its own GDDR is discrete wherever it is soldered, laptops included
(TechPowerUp's slot width "IGP" on a GeForce RTX 4060 Mobile once made it look unified).
"""

from __future__ import annotations

import re

from catalog.checks import Violation
from catalog.models import Accelerator, MemoryKind

NAME = "memory-types"
# Memory a unified-memory device can share: LPDDR / DDR system memory, or HBM in an APU
# package (MI300A).
UNIFIED_TECHNOLOGIES = ("lpddr", "ddr", "hbm")
UNIFIED_WORDS = ("unified", "shared", "system")
_LAPTOP_GPU = re.compile(r"\b(mobile|laptop|max-q)\b|\bmxm\b", re.IGNORECASE)
# GPU memory comes in binary sizes: a vendor's "24 GB" is 24 GiB. A figure converted from
# decimal GB is at most 10^9 / 2^30 = 0.931 of it; anything outside [0.93, 1.0] is a typo.
GIB_PER_GB_RANGE = (0.93, 1.0)


def _row(card: Accelerator) -> str:
    return f"accelerator {card.slug}"


def _unified_problems(card: Accelerator) -> list[str]:
    kind = card.memory_type.strip()
    lowered = kind.lower()
    if card.memory_technology == "gddr":
        return [f"typed unified but its memory is {kind}, the GPU's own: memory_kind discrete"]
    if _LAPTOP_GPU.search(f"{card.name} {card.form_factor}") and "soc" not in (
        f"{card.form_factor} {card.segment}".lower()
    ):
        return ["a laptop / mobile GPU typed unified: laptop GPUs have their own memory"]
    if not kind:
        if "memory type" in card.notes.lower():
            return []
        return ["unified with no memory_type and no note saying why (notes: 'memory type ...')"]
    if card.memory_technology in UNIFIED_TECHNOLOGIES or any(
        word in lowered for word in UNIFIED_WORDS
    ):
        return []
    return [f"unified with memory_type {kind!r}: expected LPDDR / DDR / HBM or a unified type"]


def _capacity_problems(card: Accelerator) -> list[str]:
    if not card.memory_gb or not card.memory_gib:
        return []
    low, high = GIB_PER_GB_RANGE
    ratio = card.memory_gib / card.memory_gb
    if low - 1e-9 <= ratio <= high + 1e-9:
        return []
    return [
        f"memory_gib {card.memory_gib:g} does not match memory_gb {card.memory_gb:g} "
        f"(expected {low:g}-{high:g} x memory_gb)"
    ]


def _problems(card: Accelerator) -> list[str]:
    problems = _capacity_problems(card)
    if card.memory_kind == MemoryKind.UNIFIED:
        problems += _unified_problems(card)
    return problems


def check() -> list[Violation]:
    """One violation per problem of every public accelerator."""
    only = ("slug", "name", "memory_kind", "memory_type", "form_factor", "segment", "notes")
    cards = Accelerator.objects.only(*only, "memory_gb", "memory_gib").order_by("slug")
    return [Violation(NAME, _row(card), problem) for card in cards for problem in _problems(card)]
