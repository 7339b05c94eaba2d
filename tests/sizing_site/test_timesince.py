"""The project's own time-since filters (sizing_site.core.templatetags.timeago): our msgids
with proper plural forms, one or two adjacent units, calendar months; and no template
uses Django's timesince or naturaltime any more."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from django.template import Context, Template
from django.utils import timezone, translation

from sizing_site.core.templatetags.timeago import age, parts, time_ago, timeago

NOW = dt.datetime(2026, 12, 1, 13, 24, tzinfo=dt.UTC)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _english() -> object:
    with translation.override("en"):
        yield


@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        (dt.timedelta(days=1), "1 day ago"),  # singular
        (dt.timedelta(days=2), "2 days ago"),  # plural
        # 22 days = 3 weeks (21 days) + 1 day: the second unit in its singular.
        (dt.timedelta(days=22), "3 weeks, 1 day ago"),
        (dt.timedelta(days=14), "2 weeks ago"),  # no "0 days"
        (dt.timedelta(hours=1, minutes=5), "1 hour, 5 minutes ago"),
        (dt.timedelta(minutes=1), "1 minute ago"),
        (dt.timedelta(seconds=59), "just now"),
    ],
)
def test_time_ago_picks_the_plural_form_by_count(delta: dt.timedelta, expected: str) -> None:
    assert time_ago(NOW - delta, NOW) == expected


def test_months_are_counted_on_the_calendar() -> None:
    # October 1 to December 1 (same time of day): 2 calendar months, 61 days; "2 months",
    # not "8 weeks, 5 days" and not the month's name.
    assert time_ago(dt.datetime(2026, 10, 1, 13, 24, tzinfo=dt.UTC), NOW) == "2 months ago"
    assert parts(dt.datetime(2026, 10, 1, 13, 24, tzinfo=dt.UTC), NOW) == {
        "year": 0,
        "month": 2,
        "week": 0,
        "day": 0,
        "hour": 0,
        "minute": 0,
    }
    # September 24 -> November 24 is 2 months, then 7 days to December 1: one week.
    assert time_ago(dt.datetime(2026, 9, 24, 13, 24, tzinfo=dt.UTC), NOW) == "2 months, 1 week ago"
    # 2025-10-01 -> 2026-12-01: 14 months = 1 year and 2 months.
    assert time_ago(dt.datetime(2025, 10, 1, 13, 24, tzinfo=dt.UTC), NOW) == "1 year, 2 months ago"


def test_only_adjacent_units_are_shown() -> None:
    # 1 month and 3 hours: the unit after months is weeks (0), so the hours are left out.
    then = dt.datetime(2026, 11, 1, 10, 24, tzinfo=dt.UTC)
    assert time_ago(then, NOW) == "1 month ago"


def test_a_future_moment_reads_in() -> None:
    assert time_ago(NOW + dt.timedelta(days=2, hours=3), NOW) == "in 2 days, 3 hours"


def test_age_is_the_bare_duration() -> None:
    assert age(NOW - dt.timedelta(days=22), NOW) == "3 weeks, 1 day"
    assert age(NOW - dt.timedelta(days=1), NOW) == "1 day"
    assert age(NOW - dt.timedelta(seconds=5), NOW) == "less than a minute"


def test_a_date_and_a_missing_value() -> None:
    # A date counts from its midnight: 2026-11-29 00:00 -> 2026-12-01 13:24 = 2 days, 13 h.
    assert time_ago(dt.date(2026, 11, 29), NOW) == "2 days, 13 hours ago"
    # A missing template variable reaches a filter as "".
    assert timeago("") == ""
    assert age(None) == ""


def test_the_template_filter_renders_our_words() -> None:
    template = Template("{% load timeago %}{{ then|timeago }} / {{ then|age }}")
    then = timezone.now() - dt.timedelta(days=2, minutes=1)
    assert template.render(Context({"then": then})) == "2 days ago / 2 days"


def test_german_plural_forms_come_from_our_catalogue_context() -> None:
    # The relative words carry their own context ("relative time"), so a language can
    # inflect them ("vor 2 Tagen"); until the lead translates them they read as English,
    # never as Django's "1 Tage".
    with translation.override("de"):
        text = time_ago(NOW - dt.timedelta(days=22), NOW)
    assert "1 Tage" not in text


def test_no_template_uses_djangos_timesince_or_naturaltime() -> None:
    templates = [*ROOT.glob("templates/**/*.html"), *ROOT.glob("sizing_site/*/templates/**/*.html")]
    assert len(templates) > 20
    offenders = [
        str(path.relative_to(ROOT))
        for path in templates
        if re.search(r"\|\s*(timesince|timeuntil|naturaltime)\b", path.read_text())
    ]
    assert offenders == []


def test_the_prices_page_template_uses_our_filter() -> None:
    for name in ("templates/pricing/prices.html", "templates/pricing/org_feed.html"):
        text = (ROOT / name).read_text()
        assert re.search(r"{% load [^%]*\btimeago\b", text), name
        assert "|timeago" in text, name
