"""`floatformat`: Django's template filter, the same string for every value and argument,
with the common cases worked out on the digits of the number instead of through Decimal
and `formats.number_format`.

Django's filter builds a Decimal from str(value), quantizes it (ROUND_HALF_UP) and hands the
digits to number_format, which looks up the language and three formats (decimal mark,
grouping, thousand separator) for every number. Here an int, a float or a Decimal written
without an exponent, with an argument of -9..9 (an int or a string, with the "g", "u",
"gu" or "ug" suffixes), is rounded half up on its decimal digits (str(value), the text
Django's Decimal is made of) and grouped with the language's formats, read once per
language and kept as long as Django keeps its own format cache. Anything else (bool, str
and other types, NaN and infinities, exponents, other arguments, a grouping that is not
one number) goes to Django's filter or Django's number formatting.
tests/sizing_site/test_fast_floatformat.py compares both on Hypothesis-drawn values.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.template.defaultfilters import floatformat as django_floatformat
from django.utils import formats, numberformat
from django.utils.safestring import SafeString
from django.utils.translation import get_language

# The arguments worked out here: (precision, localized, grouping forced), as Django reads
# them (defaultfilters.floatformat): an int or its digits, a "g" suffix forces grouping,
# "u" turns localization off, a suffix alone means -1.
SUFFIXES = {"": (True, False), "g": (True, True), "u": (False, False)}
SUFFIXES.update({"gu": (False, True), "ug": (False, True)})


def _arguments() -> dict[int | str, tuple[int, bool, bool]]:
    arguments: dict[int | str, tuple[int, bool, bool]] = {}
    for precision in range(-9, 10):
        arguments[precision] = (precision, True, False)
        for suffix, (localized, grouped) in SUFFIXES.items():
            arguments[f"{precision}{suffix}"] = (precision, localized, grouped)
    for suffix, (localized, grouped) in SUFFIXES.items():
        if suffix:
            arguments[suffix] = (-1, localized, grouped)
    return arguments


ARGUMENTS = _arguments()
# An int of up to 200 digits: Django returns a longer one as it came (and str() of one of
# over 4,300 digits raises).
BIGGEST = 10**200
PLAIN = object()  # the key of the unlocalized formats ("u")

_formats_module = vars(formats)
_cache: dict[object, tuple[str, int, str] | None] = {}
# Django's format cache (formats._format_cache) that _cache was read from: Django replaces it
# when a format setting or USE_THOUSAND_SEPARATOR changes (override_settings) and in
# reset_format_cache(), and _cache is read anew from the new one.
_cached_from: list[object] = [None]


def _formats(key: object, language: str | None, localized: bool) -> tuple[str, int, str] | None:
    """(decimal mark, group size or 0, thousand separator) of a language, or None where
    number_format's own code must group (a sequence of group sizes, a lazy separator)."""
    django_cache = _formats_module["_format_cache"]
    if django_cache is _cached_from[0]:
        try:
            return _cache[key]
        except KeyError:
            pass
    else:  # reset_format_cache() ran: read the formats anew, as Django does
        _cache.clear()
        _cached_from[0] = django_cache
    mark = formats.get_format("DECIMAL_SEPARATOR", language, use_l10n=localized)
    grouping = formats.get_format("NUMBER_GROUPING", language, use_l10n=localized)
    separator = formats.get_format("THOUSAND_SEPARATOR", language, use_l10n=localized)
    found = None
    if type(mark) is str and type(separator) is str and type(grouping) is int:
        # Django groups by `grouping` digits when it is above 0 and not at all otherwise.
        found = (mark, max(grouping, 0), separator)
    _cache[key] = found
    return found


def _digits(value: Any) -> str | None:
    """str(value) for an int, float or Decimal that is written without an exponent, as
    Django's Decimal(str(value)) reads it; None for anything else."""
    kind = type(value)
    if kind is float:
        text = repr(value)
    elif kind is int:
        if not -BIGGEST < value < BIGGEST:
            return None
        return str(value)
    elif kind is Decimal:
        text = str(value)
        if len(text) > 100:  # Django returns one of over 200 digits and exponent as it came
            return None
    else:
        return None
    unsigned = text[1:] if text[0] == "-" else text
    whole, _, fraction = unsigned.partition(".")
    if whole.isdigit() and (fraction.isdigit() or not fraction):
        return text
    return None  # inf, nan, an exponent


def floatformat(text: Any, arg: Any = -1) -> str:
    """Django's floatformat filter (django.template.defaultfilters), the same string."""
    kind = type(arg)
    if kind is int or kind is str or kind is SafeString:
        spec = ARGUMENTS.get(arg)
        if spec is not None:
            digits = _digits(text)
            if digits is not None:
                return _shown(digits, *spec)
    return django_floatformat(text, arg)


def _rounded(whole: str, fraction: str, places: int) -> tuple[str, str]:
    """whole.fraction rounded half up (away from zero) to `places` decimals, padded."""
    if len(fraction) <= places:
        return whole, fraction + "0" * (places - len(fraction))
    kept = fraction[:places]
    if fraction[places] < "5":
        return whole, kept
    up = str(int(whole + kept) + 1)
    if not places:
        return up, ""
    up = up.rjust(places + 1, "0")
    return up[:-places], up[-places:]


def _shown(digits: str, precision: int, localized: bool, grouped: bool) -> str:
    negative = digits[0] == "-"
    whole, _, fraction = (digits[1:] if negative else digits).partition(".")
    if precision <= 0 and not fraction.strip("0"):
        # A whole number with no decimals asked for: "%d" % int(d), no "-0".
        places, decimals = 0, ""
    else:
        places = -precision if precision < 0 else precision
        whole, decimals = _rounded(whole, fraction, places)
    # Django drops the sign of a number that rounded to zero.
    sign = "-" if negative and (whole != "0" or decimals.strip("0")) else ""
    language = get_language() if localized else None
    found = _formats(language if localized else PLAIN, language, localized)
    if found is None:
        number = f"{sign}{whole}.{decimals}"
        return SafeString(
            numberformat.format(
                number,
                formats.get_format("DECIMAL_SEPARATOR", language, use_l10n=localized),
                places,
                formats.get_format("NUMBER_GROUPING", language, use_l10n=localized),
                formats.get_format("THOUSAND_SEPARATOR", language, use_l10n=localized),
                force_grouping=grouped,
                use_l10n=localized,
            )
        )
    mark, size, separator = found
    if size and len(whole) > size and (grouped or (localized and settings.USE_THOUSAND_SEPARATOR)):
        head = len(whole) % size or size
        groups = [whole[:head]]
        groups += [whole[start : start + size] for start in range(head, len(whole), size)]
        whole = separator.join(groups)
    if decimals:
        return SafeString(f"{sign}{whole}{mark}{decimals}")
    return SafeString(sign + whole)
