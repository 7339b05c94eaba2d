"""Every save or delete of an offer, a provider or a price source starts a new price version
(pricing.versions), so the configurator's cached offer rows and price sections are rebuilt
on the next request. Bulk writes send no signals: the services that make them call
`prices_changed()` or run inside `price_changes()`."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save

from pricing.models import CloudOffer, CloudProvider, PriceSource
from pricing.versions import prices_changed


def _on_change(sender: type[Any], **kwargs: Any) -> None:
    if not kwargs.get("raw"):  # fixtures loading rows
        prices_changed()


def connect() -> None:
    """Watch the rows the offers are shown from (snapshots and runs are not shown there)."""
    for model in (CloudOffer, CloudProvider, PriceSource):
        uid = f"price-version-{model._meta.label_lower}"
        post_save.connect(_on_change, sender=model, dispatch_uid=f"{uid}-save")
        post_delete.connect(_on_change, sender=model, dispatch_uid=f"{uid}-delete")
