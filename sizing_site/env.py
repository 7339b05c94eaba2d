"""Read settings from the environment, failing loudly on values we cannot understand.

A typo such as DEBUG=yes must stop start-up rather than silently mean False.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw == "True":
        return True
    if raw == "False":
        return False
    raise ImproperlyConfigured(f"{name} must be 'True' or 'False', got {raw!r}")


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str, default: str = "") -> list[str]:
    """Comma-separated list; blanks are dropped so a trailing comma is harmless."""
    raw = os.environ.get(name, default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_url(name: str, default: str, *, schemes: tuple[str, ...]) -> str:
    raw = os.environ.get(name) or default
    scheme = raw.split("://", 1)[0] if "://" in raw else ""
    if scheme not in schemes:
        raise ImproperlyConfigured(
            f"{name} must be a URL starting with one of {', '.join(s + '://' for s in schemes)}"
        )
    return raw


def env_timezone(name: str, default: str) -> str:
    import zoneinfo

    raw = os.environ.get(name) or default
    try:
        zoneinfo.ZoneInfo(raw)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ImproperlyConfigured(f"{name} is not a known time zone: {raw!r}") from None
    return raw
