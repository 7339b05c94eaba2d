"""Reading one field of a JSON request: presence, type, range and choice checks that
raise RequestError naming the field's dotted path ("device.memory_gb").

Each reader takes the section (a mapping) and the field's dotted path, whose last part is
the key; an absent or null field gives the default, or "is required".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


class RequestError(ValueError):
    """A bad request; `field` is the dotted path of the offending value."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def read_section(
    data: Mapping[str, Any], key: str, allowed: set[str], required: bool = False
) -> dict[str, Any]:
    """A copy of the object at data[key] ({} when absent or null); a key outside
    `allowed` is an error naming it."""
    if key not in data or data[key] is None:
        if required:
            raise RequestError(key, "is required")
        return {}
    value = data[key]
    if not isinstance(value, Mapping):
        raise RequestError(key, "must be a JSON object")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise RequestError(
            f"{key}.{unknown[0]}", f"unknown field; allowed: {', '.join(sorted(allowed))}"
        )
    return dict(value)


def read_number(
    section: Mapping[str, Any],
    path: str,
    *,
    default: float | None = None,
    required: bool = False,
    minimum: float = 0.0,
    exclusive: bool = True,
    maximum: float | None = None,
) -> float | None:
    """A finite number above `minimum` (or at it when not `exclusive`), at most `maximum`."""
    key = path.rsplit(".", 1)[-1]
    if key not in section or section[key] is None:
        if required:
            raise RequestError(path, "is required")
        return default
    value = section[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RequestError(path, f"must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise RequestError(path, "must be a finite number (NaN and Infinity are rejected)")
    if value < minimum or (exclusive and value == minimum):
        relation = "greater than" if exclusive else "at least"
        raise RequestError(path, f"must be {relation} {minimum:g}, got {value:g}")
    if maximum is not None and value > maximum:
        raise RequestError(path, f"must be at most {maximum:g}, got {value:g}")
    return float(value)


def read_integer(
    section: Mapping[str, Any],
    path: str,
    *,
    default: int | None = None,
    required: bool = False,
    minimum: int = 1,
) -> int | None:
    """An integer of at least `minimum` (a float with an integer value counts)."""
    key = path.rsplit(".", 1)[-1]
    if key not in section or section[key] is None:
        if required:
            raise RequestError(path, "is required")
        return default
    value = section[key]
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and not math.isfinite(value):
            raise RequestError(path, "must be a finite integer (NaN and Infinity are rejected)")
        raise RequestError(path, f"must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise RequestError(path, f"must be at least {minimum}, got {value}")
    return value


def read_choice(
    section: Mapping[str, Any],
    path: str,
    choices: tuple[str, ...],
    default: str | None = None,
    required: bool = False,
) -> str | None:
    """One of `choices`, matched without case or surrounding blanks; returned as listed."""
    key = path.rsplit(".", 1)[-1]
    if key not in section or section[key] is None:
        if required:
            raise RequestError(path, "is required")
        return default
    value = section[key]
    if not isinstance(value, str):
        raise RequestError(path, f"must be a string, got {type(value).__name__}")
    normalised = value.strip().lower()
    lowered = {c.lower(): c for c in choices}
    if normalised not in lowered:
        raise RequestError(path, f"unknown value {value!r}; expected one of {', '.join(choices)}")
    return lowered[normalised]


def read_boolean(section: Mapping[str, Any], path: str, default: bool) -> bool:
    """true or false (no 0/1 or strings)."""
    key = path.rsplit(".", 1)[-1]
    if key not in section or section[key] is None:
        return default
    value = section[key]
    if not isinstance(value, bool):
        raise RequestError(path, f"must be true or false, got {type(value).__name__}")
    return value


def read_string(section: Mapping[str, Any], path: str) -> str | None:
    """A non-empty string, stripped; None when absent."""
    key = path.rsplit(".", 1)[-1]
    value = section.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise RequestError(path, "must be a non-empty string")
    return value.strip()
