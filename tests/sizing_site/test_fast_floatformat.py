"""The portal's `floatformat` (sizing_site/core/numbers.py) writes Django's string, and its
type (a safe string, or the value as it came), for drawn numbers of every kind and the
arguments the templates use and more, in the four languages, with and without the
thousand separator; and it is the filter every template calls."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any
from unittest import mock

import pytest
from django.conf import settings
from django.core.cache import caches
from django.template import Context, Template
from django.template.defaultfilters import floatformat as django_floatformat
from django.test import override_settings
from django.utils import formats, translation
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from sizing_site.configurator.templatetags import configurator_matrix
from sizing_site.core import numbers
from sizing_site.core.numbers import floatformat
from sizing_site.reports.templatetags import reports_tags
from tests.configurator.test_views import GlmOnA100

LANGUAGES = ["en", "de", "it", "zh-hans"]
DEFAULT = object()  # no argument: the filter's default, -1
ARGS: list[Any] = [DEFAULT, *range(-3, 4), "0", "1", "2", "3", "-1", "-2", "-3"]
ARGS += ["g", "u", "gu", "ug", "2g", "2u", "-2gu", "1ug", "0g", "-1g", "0u", "12", "-10g"]
ARGS += ["abc", "-g", "2.0", " 2", "-0", "+1", "", 2.0, 2.5, True, None, "٢"]

decimals = st.decimals(allow_nan=True, allow_infinity=True)
numbers_drawn = st.one_of(
    st.floats(),
    st.floats(-1e7, 1e7),
    st.floats(-1.0, 1.0),
    # Halves at the rounded place: 0.125, 2.675, -1234.5 round up, away from zero.
    st.integers(-(10**8), 10**8).map(lambda n: n / 1000),
    st.integers(),
    st.integers(-(10**210), 10**210),
    st.sampled_from([0, -0.0, 10**200 - 1, 10**200, -(10**200), 1e16, 1e-5, 5e-324]),
    decimals,
    st.decimals(places=4, allow_nan=False, allow_infinity=False),
    st.sampled_from([Decimal("-0.00"), Decimal("0E-7"), Decimal("1E+3"), Decimal("sNaN")]),
    st.integers(-(10**6), 10**6).map(lambda n: str(n / 100)),
    decimals.map(str),
    st.sampled_from(["", "abc", "1e3", " 12.5 ", "inf", "-nan", None, True, False, [1]]),
)


def both(value: Any, arg: Any) -> tuple[Any, Any]:
    """(ours, Django's), each the string or the exception's type."""
    results: list[tuple[type, Any]] = []
    for function in (floatformat, django_floatformat):
        try:
            shown = function(value) if arg is DEFAULT else function(value, arg)
            results.append((type(shown), shown))
        except Exception as error:  # Django raises for "" and None: ours must too
            results.append((type(error), None))
    return results[0], results[1]


@hsettings(max_examples=1500, deadline=None)
@given(
    value=numbers_drawn,
    arg=st.sampled_from(ARGS) | st.sampled_from(sorted(numbers.ARGUMENTS, key=str)),
    language=st.sampled_from(LANGUAGES),
    grouped=st.booleans(),
)
def test_the_same_string_as_django(value: Any, arg: Any, language: str, grouped: bool) -> None:
    with override_settings(USE_THOUSAND_SEPARATOR=grouped), translation.override(language):
        ours, django = both(value, arg)
    assert ours == django


whole_numbers = st.integers(-(10**12), 10**12)
page_numbers = whole_numbers | whole_numbers.map(lambda n: n / 1000)  # floats down to 0.001


@given(value=page_numbers, places=st.integers(-3, 3))
def test_the_fast_path_takes_page_numbers(value: float, places: int) -> None:
    # Ints, floats and Decimals of a page never reach Django's filter.
    with mock.patch.object(numbers, "django_floatformat") as django, translation.override("de"):
        floatformat(value, places)
        floatformat(Decimal(str(value)), f"{places}g")
    assert not django.called


@pytest.mark.parametrize(
    ("value", "arg", "language", "expected"),
    [
        # 1234.5 to 2 decimals: "1234.50", grouped by three with the language's marks.
        (1234.5, "2", "de", "1.234,50"),
        (1234.5, "2", "it", "1.234,50"),
        (1234.5, "2", "en", "1,234.50"),
        (1234.5, "2", "zh-hans", "1,234.50"),
        # Half up on the decimal digits as written: 2.675 -> 2.68 ("%.2f" gives 2.67,
        # the float being 2.67499...), 0.125 -> 0.13, -2.5 -> -3 (away from zero).
        (2.675, 2, "en", "2.68"),
        (0.125, "2", "de", "0,13"),
        (-2.5, 0, "en", "-3"),
        # 999.995 -> 1000.00: the carry reaches a new group.
        (999.995, "2", "de", "1.000,00"),
        # Negative precision: decimals only for a number that is not whole, even when
        # they round to zeros (34.001 -> "34.00"); none for 34.0.
        (34.001, "-2", "en", "34.00"),
        (34.0, "-2", "en", "34"),
        (34.26, -3, "de", "34,260"),
        # No "-0": -0.001 rounds to 0.00, -0.0 is 0.
        (-0.001, "2", "en", "0.00"),
        (-0.0, None, "en", "0"),
        # "u": Django's settings, a point and no grouping; "g" groups even when off.
        (1234567.891, "2u", "de", "1234567.89"),
        (Decimal("1234567.891"), "-1g", "de", "1.234.567,9"),
        (12, "0g", "zh-hans", "12"),
        # An exponent goes to Django's filter: 1e16 is 10000000000000000.
        (1e16, "0", "en", "10,000,000,000,000,000"),
        # Invalid values and arguments: "", the value as it came, the float's name.
        ("abc", "2", "en", ""),
        (12.5, "abc", "en", "12.5"),
        (math.inf, "2", "de", "inf"),
    ],
)
def test_worked_examples(value: Any, arg: Any, language: str, expected: str) -> None:
    with translation.override(language):
        ours, django = both(value, DEFAULT if arg is None else arg)
    assert ours == django
    assert ours[1] == expected


def test_settings_changes_reach_the_cached_formats() -> None:
    with translation.override("en"):
        assert floatformat(1234.5, "2") == "1,234.50"  # the formats of en are now cached
        with override_settings(USE_THOUSAND_SEPARATOR=False):
            assert floatformat(1234.5, "2") == "1234.50"
            assert floatformat(1234.5, "2g") == "1,234.50"
        # Unlocalized ("u"): Django's settings, read anew when they change.
        assert floatformat(1234.5, "2u") == "1234.50"
        with override_settings(DECIMAL_SEPARATOR=",", NUMBER_GROUPING=3, THOUSAND_SEPARATOR="'"):
            assert floatformat(1234.5, "2gu") == "1'234,50"
        # Groups of 3, then of 2 (a sequence: Django's own grouping code).
        with override_settings(NUMBER_GROUPING=(3, 2, 0)):
            assert floatformat(12345678.5, "2gu") == "1,23,45,678.50"
        assert floatformat(12345678.5, "2gu") == "12345678.50"
        # Django's format cache dropped by hand: ours follows it.
        formats.reset_format_cache()
        assert floatformat(1234.5, "2") == "1,234.50"


def test_templates_call_it() -> None:
    text = (
        "{% load i18n %}{{ x|floatformat:2 }} {{ x|floatformat:'-1g' }} "
        "{% blocktranslate with n=x|floatformat:'2g' %}{{ n }} GiB{% endblocktranslate %}"
    )
    spy = mock.patch.object(numbers, "_shown", wraps=numbers._shown)
    with spy as shown, translation.override("de"):
        rendered = Template(text).render(Context({"x": 1234.567}))
    # 1234.567 to 2 decimals: 1234.57 -> "1.234,57"; to 1: 1234.6 -> "1.234,6".
    assert rendered == "1.234,57 1.234,6 1.234,57 GiB"
    assert shown.call_count == 3
    # The Python callers take the same function.
    assert configurator_matrix.floatformat is floatformat
    assert reports_tags.floatformat is floatformat


# Per request: the CSRF token (a form field, htmx's header) and the CSP nonce.
TOKEN = re.compile(r"[A-Za-z0-9_+/=-]{32,}")


class ConfiguratorPage(GlmOnA100):
    def test_the_page_is_the_same_with_djangos_filter(self) -> None:
        self.client.force_login(self.bob)
        template_settings: dict[str, Any] = settings.TEMPLATES[0]
        options = dict(template_settings["OPTIONS"])
        del options["builtins"]
        engine = {**template_settings, "OPTIONS": options}

        def page(language: str) -> str:
            for name in ("default", "fragments"):  # nothing rendered by the other filter
                caches[name].clear()
            url = f"/{language}/models/{self.model.slug}/on/{self.card.slug}/?quant=Q4_K_M"
            response = self.client.get(url)
            assert response.status_code == 200
            return TOKEN.sub("", response.content.decode())

        for language in ("en", "de"):
            with mock.patch.object(numbers, "_shown", wraps=numbers._shown) as shown:
                fast = page(language)
            assert shown.call_count > 100  # the page's numbers (163 in en) went through ours
            # Django's filter in the templates and in the quant matrix's rows.
            with (
                override_settings(TEMPLATES=[engine]),
                mock.patch.object(configurator_matrix, "floatformat", django_floatformat),
                mock.patch.object(numbers, "_shown", wraps=numbers._shown) as shown,
            ):
                django = page(language)
            assert shown.call_count == 0
            assert fast == django
