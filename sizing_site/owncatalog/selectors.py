"""Reads of an organisation's own catalog entries: only its rows, never the public ones."""

from __future__ import annotations

from typing import Any

from django.db.models import JSONField, QuerySet
from django.http import Http404

from catalog.models import Accelerator, LLMModel
from sizing_site.fleet.selectors import Change, HistoryEntry
from sizing_site.tenancy.access import Tenant


def own_model_list(*, tenant: Tenant) -> QuerySet[LLMModel]:
    return LLMModel.objects.for_organization(tenant.organization).order_by("name", "id")


def own_accelerator_list(*, tenant: Tenant) -> QuerySet[Accelerator]:
    return Accelerator.objects.for_organization(tenant.organization).order_by(
        "vendor", "name", "id"
    )


def own_model_get(*, tenant: Tenant, slug: str) -> LLMModel:
    row = own_model_list(tenant=tenant).filter(slug=slug).first()
    if row is None:
        raise Http404
    return row


def own_accelerator_get(*, tenant: Tenant, slug: str) -> Accelerator:
    row = own_accelerator_list(tenant=tenant).filter(slug=slug).first()
    if row is None:
        raise Http404
    return row


def row_history(*, row: LLMModel | Accelerator) -> list[HistoryEntry]:
    """Who changed what and when, newest first: each record against the one before it
    (django-simple-history), as on the fleet's history page. A changed config.json or
    sources reads as "changed", not as the whole JSON."""
    history: Any = row.history
    records = list(history.select_related("history_user").order_by("history_date", "history_id"))
    fields = {f.name: f for f in type(row)._meta.fields}
    entries = []
    previous = None
    for record in records:
        changes: list[Change] = []
        if previous is not None:
            for c in record.diff_against(previous, foreign_keys_are_objs=True).changes:
                field = fields.get(c.field)
                label = str(field.verbose_name) if field is not None else c.field
                if isinstance(field, JSONField):
                    changes.append(Change(label, None, "…"))
                else:
                    changes.append(Change(label, c.old, c.new))
        user = record.history_user
        entries.append(
            HistoryEntry(
                record.history_date,
                user.get_username() if user is not None else "",
                record.history_type,
                changes,
            )
        )
        previous = record
    return entries[::-1]
