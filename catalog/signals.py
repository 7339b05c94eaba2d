"""Every catalog edit starts a new catalog version (catalog.sizing.cache), so cached sizing
results are never read again after the edit commits, and, where a Celery worker runs,
queues one warm-up of the pages' sweeps (catalog.tasks.warm_sizing_cache).

Row saves and deletes arrive here as signals (admin, imports, the API). Bulk writes send
no signals; the services that make them (catalog.services.seed.catalog_load) call
`catalog_changed()` themselves.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save

from catalog.sizing.cache import bump_catalog_version

WARM_DELAY_S = 5  # edits in a burst (an admin bulk action) share one warm-up


def catalog_changed() -> None:
    """A new catalog version now and again after the current transaction commits (a request
    that read the rows before the commit may have cached under the first one), then a
    warm-up. Without a transaction on_commit runs at once."""
    bump_catalog_version()
    transaction.on_commit(_after_commit)


def _after_commit() -> None:
    bump_catalog_version()
    if settings.SIZING_WARM_AFTER_EDIT:
        from catalog.tasks import schedule_warm_up

        schedule_warm_up(countdown=WARM_DELAY_S)


def _on_change(sender: type[Any], **kwargs: Any) -> None:
    if not kwargs.get("raw"):  # fixtures loading rows: the loader bumps once at its end
        catalog_changed()


def connect() -> None:
    """Watch every catalog model (their history tables change only along with them)."""
    for model in apps.get_app_config("catalog").get_models():
        if model.__name__.startswith("Historical"):
            continue
        uid = f"catalog-version-{model._meta.label_lower}"
        post_save.connect(_on_change, sender=model, dispatch_uid=f"{uid}-save")
        post_delete.connect(_on_change, sender=model, dispatch_uid=f"{uid}-delete")
        for field in model._meta.local_many_to_many:
            m2m_changed.connect(
                _on_change, sender=field.remote_field.through, dispatch_uid=f"{uid}-{field.name}"
            )
