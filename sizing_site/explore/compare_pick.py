"""Picking a compare column's model and card by name: the suggestions under the column
editor's combobox, and the typed text read back as a catalog row when the form is sent
(with or without JavaScript). Both go through the site search's index and ranking
(sizing_site.explore.search), over the public catalog that compare sizes.

A typed text names a row when it is the row's slug, its name or its label ("NVIDIA GeForce
RTX 4090"), case aside; else when the search ranks one row clearly first ("4090", "llama
3.1 8b"). Anything else is a column error that says what to do."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.utils.translation import gettext as _

from sizing_site.explore.forms import MAX_COLUMNS
from sizing_site.explore.search import Entry, index, ranked, tokens

# The editor's fields a combobox fills: m1..m4 (models) and a1..a4 (cards).
KINDS = {"m": "model", "a": "card"}
PICK_FIELDS = frozenset(f"{k}{n}" for k in KINDS for n in range(1, MAX_COLUMNS + 1))
MAX_OPTIONS = 8


def _entries(kind: str) -> list[Entry]:
    models, cards = index()
    return [m for m in models if m.sizeable] if kind == "model" else cards


def suggestions(*, kind: str, text: str, limit: int = MAX_OPTIONS) -> list[Entry]:
    """The rows a combobox offers for `text`, best first (the search's ranking); the
    curated cards when no card is typed yet, nothing for an empty model."""
    entries = _entries(kind)
    words = tokens(text)
    if not words:
        return [e for e in entries if e.curated][:limit] if kind == "card" else []
    return [entry for _score, entry in ranked(words, entries)[:limit]]


def resolve(*, kind: str, text: str) -> Entry | None:
    """The row `text` names (module docstring); None when none or several match."""
    wanted = text.strip().casefold()
    if not wanted:
        return None
    entries = _entries(kind)
    for entry in entries:
        if wanted in (entry.slug, entry.name.casefold(), entry.label.casefold()):
            return entry
    hits = ranked(tokens(text), entries)
    if len(hits) == 1 or (len(hits) > 1 and hits[0][0] - hits[1][0] > 1e-6):
        return hits[0][1]
    return None


@dataclass(frozen=True)
class ResolvedParts:
    """The edit form's fields with each typed model and card replaced by its slug, and a
    message per column whose text names no row (the column left out)."""

    data: dict[str, str]
    errors: list[str]


def resolve_parts(data: Mapping[str, str]) -> ResolvedParts:
    """Each column's m<n> and a<n> read as rows (resolve); a column with only one of the
    two is an error too (an empty column is no column)."""
    out = {k: v for k, v in data.items() if isinstance(v, str)}
    errors = []
    for n in range(1, MAX_COLUMNS + 1):
        model, card = out.get(f"m{n}", "").strip(), out.get(f"a{n}", "").strip()
        if bool(model) != bool(card):
            errors.append(_("Column %(n)s: pick both a model and an accelerator.") % {"n": n})
            continue
        if not model:
            continue
        for field, kind, text in ((f"m{n}", "model", model), (f"a{n}", "card", card)):
            entry = resolve(kind=kind, text=text)
            if entry is not None:
                out[field] = entry.slug
                continue
            errors.append(_unmatched(kind) % {"n": n, "text": text})
    return ResolvedParts(out, errors)


def _unmatched(kind: str) -> str:
    if kind == "model":
        return _("Column %(n)s: no single model matches “%(text)s”; pick one from the list.")
    return _("Column %(n)s: no single accelerator matches “%(text)s”; pick one from the list.")
