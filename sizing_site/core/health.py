"""Dependency checks for /health/: database, cache and (when configured) the Celery broker."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import connection

from sizing_site.celery import app as celery_app


@dataclass(frozen=True)
class Check:
    """One dependency's state. `error` is the exception's class name only: its message may
    hold host names, ports or credentials, which no health answer should repeat."""

    name: str
    state: str  # "ok", "down" or "in-process" (eager Celery, no broker to reach)
    error: str = ""


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
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)


def _run(name: str, check: Callable[[], None]) -> Check:
    try:
        check()
    except Exception as exc:  # any failure means "down", whatever raised it
        return Check(name, "down", type(exc).__name__)
    return Check(name, "ok")


def dependency_checks() -> list[Check]:
    checks = [_run("database", check_database), _run("cache", check_cache)]
    if settings.CELERY_TASK_ALWAYS_EAGER:
        checks.append(Check("broker", "in-process"))
    else:
        checks.append(_run("broker", check_broker))
    return checks
