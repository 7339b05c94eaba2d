"""Curation actions on the review queue."""

from __future__ import annotations

from django.db import models, transaction


@transaction.atomic
def catalog_mark_reviewed(*, rows: models.QuerySet[models.Model]) -> int:
    """Clear needs_review row by row (not .update()) so history records who did it."""
    count = 0
    for row in rows.filter(needs_review=True).select_for_update():
        row.needs_review = False  # type: ignore[attr-defined]
        row.save(update_fields=["needs_review", "updated"])
        count += 1
    return count
