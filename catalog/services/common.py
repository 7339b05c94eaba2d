"""Shared pieces of the catalog services."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django.core.exceptions import ValidationError


class CatalogError(Exception):
    """Input the catalog refuses; the message is shown to the user as is."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def snapshot_value(value: Any) -> Any:
    """A JSON-safe form of a field value, equal for equal values (dates as ISO strings,
    whole floats as ints) so seed snapshots compare stably across databases."""
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list | dict):
        # Numbers inside JSON as floats: PostgreSQL's jsonb hands 1e308 back as a
        # 309-digit integer, and the two must compare equal.
        return json.loads(json.dumps(value, sort_keys=True), parse_int=float)
    return value


def parse_date(value: Any) -> dt.date | None:
    """Seed dates: YYYY-MM-DD, or YYYY-MM / YYYY (stored as the first day)."""
    if value in (None, ""):
        return None
    if isinstance(value, dt.date):
        return value
    text = str(value).strip()
    parts = text.split("-")
    try:
        numbers = [int(p) for p in parts] + [1] * (3 - len(parts))
        return dt.date(*numbers[:3])
    except (TypeError, ValueError):
        raise CatalogError(f"not a date: {text!r}") from None


def validation_text(exc: ValidationError) -> str:
    """A model ValidationError as one line: 'field: message; field: message'."""
    if not hasattr(exc, "error_dict"):
        return " ".join(exc.messages)
    return "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
