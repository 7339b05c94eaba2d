"""Match a provider's GPU name ("H100 (80 GB SXM5)", "A100-SXM4-80GB") to a catalog
Accelerator through its name and aliases, compared as normalised token sets.

Curated rows win over the bulk-imported ones. A name that matches nothing leaves the
offer's accelerator empty; admin lists those offers for review.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from catalog.models import Accelerator

# Words that do not tell two accelerators apart.
NOISE = {"nvidia", "amd", "geforce", "tesla", "gpu", "hbm3", "hbm3e", "hbm", "gddr6", "gddr7"}
MEMORY = re.compile(r"^(\d+)gb$")


def tokens(label: str) -> frozenset[str]:
    text = label.lower()
    text = re.sub(r"(\d+)\s*gb\b", r" \1gb ", text)  # "80 GB" and "80GB" alike
    text = re.sub(r"\bsxm\d\b", "sxm", text)  # SXM4 / SXM5 / SXM6 name the same form factor
    words = re.split(r"[^a-z0-9+]+", text)
    return frozenset(w for w in words if w and w not in NOISE)


def _memory(words: frozenset[str]) -> float | None:
    for word in words:
        found = MEMORY.match(word)
        if found:
            return float(found.group(1))
    return None


@dataclass(frozen=True)
class Candidate:
    pk: int
    memory_gb: float | None


class AcceleratorMatcher:
    def __init__(self) -> None:
        self._index: dict[frozenset[str], Candidate] = {}
        rows = Accelerator.objects.order_by("-curated", "pk").values_list(
            "pk", "name", "aliases", "memory_gb"
        )
        for pk, name, aliases, memory_gb in rows:
            labels = [name, *(aliases if isinstance(aliases, list) else [])]
            for label in labels:
                # setdefault: the first (curated) row to claim a label keeps it.
                self._index.setdefault(tokens(str(label)), Candidate(pk, memory_gb))

    def match(self, gpu_name: str) -> int | None:
        """The accelerator's pk, or None. Tries the full name, then without the memory size
        (checking the size against the catalog so "H100 94GB" cannot become an 80 GB part)."""
        words = tokens(gpu_name)
        if not words:
            return None
        found = self._index.get(words)
        if found:
            return found.pk
        memory = _memory(words)
        if memory is None:
            return None
        found = self._index.get(frozenset(w for w in words if not MEMORY.match(w)))
        if found and (found.memory_gb is None or abs(found.memory_gb - memory) <= 2):
            return found.pk
        return None
