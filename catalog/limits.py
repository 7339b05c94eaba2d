"""Bounded parsing of untrusted text: uploads, feeds and imported config files.

Python's json accepts NaN, Infinity and 1e999999 (as inf), nests until the recursion limit
(a RecursionError, not a ValueError) and reads any size; csv reads fields up to 128 KiB and
raises on a NUL byte. Every parser of outside data goes through these helpers, which raise
LimitError (a ValueError) with a message fit to show the person who sent the data.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django.utils.translation import gettext as _

MAX_JSON_DEPTH = 64  # config.json files nest 3-4 levels; feeds 3
# Half of a UTF-16 pair: JSON may escape one alone ("\ud800"), and json.loads then makes a
# str that no UTF-8 encoder takes (a page, a database or a JSON response fails on it).
_SURROGATE = re.compile("[\ud800-\udfff]")


class LimitError(ValueError):
    """Input over a limit or not finite; the message says which, for a form or API error."""


def _reject_constant(name: str) -> float:
    raise LimitError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise LimitError(f"the number {text[:40]} is out of range")
    return value


def json_depth(text: str) -> int:
    """The deepest nesting of [ and { outside strings, in one pass (no recursion); also for
    parsers with their own rules on values (catalog.services.configs keeps NaN as text)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def has_lone_surrogate(data: Any) -> bool:
    """Whether parsed JSON holds an unpaired surrogate in any key or string; iterative, as
    the data may nest as deep as the parser allowed."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def json_loads_bounded(
    data: str | bytes, *, max_bytes: int, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """json.loads with a size cap, a nesting cap, no NUL and finite numbers only."""
    size = len(data)
    if size > max_bytes:
        raise LimitError(f"{size:,} bytes is over the {max_bytes:,}-byte limit")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LimitError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if "\x00" in data:
        raise LimitError("contains a NUL byte")
    if json_depth(data) > max_depth:
        raise LimitError(f"nested deeper than {max_depth} levels")
    try:
        parsed = json.loads(data, parse_constant=_reject_constant, parse_float=_finite_float)
    except LimitError:
        raise
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        raise LimitError(f"not valid JSON: {exc.msg} ({where})") from None
    except (RecursionError, OverflowError) as exc:
        raise LimitError(f"not valid JSON: {exc}") from None
    if has_lone_surrogate(parsed):
        raise LimitError(_("contains an unpaired surrogate (such as \\ud800), which is not text"))
    return parsed
