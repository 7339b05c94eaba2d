"""Dependency checks for /health/: database, cache and (when configured) the Celery broker."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.cache import cache
from django.db import connection


def check_database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def check_cache() -> None:
    key = f"health:{uuid.uuid4().hex}"
    cache.set(key, "ok", timeout=10)
    if cache.get(key) != "ok":
        raise RuntimeError("cache did not return the value just written")
    cache.delete(key)


def check_broker() -> None:
    from sizing_site.celery import app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)


def dependency_status() -> dict[str, str]:
    """Each dependency's state: "ok", "down: <reason>", or "in-process" for eager Celery."""
    checks = {"database": check_database, "cache": check_cache}
    status: dict[str, str] = {}
    for name, check in checks.items():
        try:
            check()
        except Exception as exc:  # any failure means "down"; the reason is reported
            status[name] = f"down: {type(exc).__name__}: {exc}"
        else:
            status[name] = "ok"
    if settings.CELERY_TASK_ALWAYS_EAGER:
        status["broker"] = "in-process"
    else:
        try:
            check_broker()
        except Exception as exc:
            status["broker"] = f"down: {type(exc).__name__}: {exc}"
        else:
            status["broker"] = "ok"
    return status
