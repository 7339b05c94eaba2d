"""Time since (and until) a moment, in our own strings with proper plural forms.

Django's `timesince` and humanize's `naturaltime` read their words from Django's own
catalogues, which gave "3 Wochen, 1 Tage her" in German and "2 月前" ("February") in
Chinese. These filters use msgids of this project, translated in its catalogues:

- `age`: a duration, "3 weeks, 1 day" (for "stale for 3 weeks, 1 day").
- `timeago`: a moment relative to now, "3 weeks, 1 day ago" or "in 2 hours".

One or two adjacent units (years and months, months and weeks, weeks and days, days and
hours, hours and minutes), like Django's. Years and months are counted on the calendar
(October 1 to December 1 is 2 months), the rest in fixed lengths. The relative words use
the context "relative time", so that a language can inflect them ("vor 2 Tagen").
"""

from __future__ import annotations

import calendar
import datetime as dt

from django import template
from django.utils import timezone
from django.utils.translation import ngettext, npgettext, pgettext

register = template.Library()

UNITS = ("year", "month", "week", "day", "hour", "minute")


def _as_datetime(value: dt.date | dt.datetime) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value
    return dt.datetime(value.year, value.month, value.day)


def _add_months(moment: dt.datetime, months: int) -> dt.datetime:
    """`moment` `months` calendar months later, the day clamped to the month's length."""
    index = moment.month - 1 + months
    year, month = moment.year + index // 12, index % 12 + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


def _pair(
    start: dt.date | dt.datetime, end: dt.date | dt.datetime
) -> tuple[dt.datetime, dt.datetime]:
    """Two comparable datetimes: aware ones in the active time zone (its calendar decides
    where a month ends), else both naive (a date is its midnight)."""
    a, b = _as_datetime(start), _as_datetime(end)
    if timezone.is_aware(a):
        a = timezone.localtime(a)
    if timezone.is_aware(b):
        b = timezone.localtime(b)
    if timezone.is_aware(a) != timezone.is_aware(b):
        a, b = a.replace(tzinfo=None), b.replace(tzinfo=None)
    return a, b


def parts(start: dt.date | dt.datetime, end: dt.date | dt.datetime) -> dict[str, int]:
    """The whole years, months, weeks, days, hours and minutes from `start` to `end`
    (start <= end); each unit is the remainder after the larger ones."""
    a, b = _pair(start, end)
    months = (b.year - a.year) * 12 + b.month - a.month
    if months > 0 and _add_months(a, months) > b:
        months -= 1
    months = max(months, 0)
    rest = b - _add_months(a, months)
    weeks, days = divmod(rest.days, 7)
    hours, seconds = divmod(rest.seconds, 3600)
    years, months = divmod(months, 12)
    return {
        "year": years,
        "month": months,
        "week": weeks,
        "day": days,
        "hour": hours,
        "minute": seconds // 60,
    }


def _unit(unit: str, n: int, *, relative: bool) -> str:
    # Literal msgids, one pair per unit, so that makemessages finds them.
    if relative:
        words = {
            "year": npgettext("relative time", "%(n)d year", "%(n)d years", n),
            "month": npgettext("relative time", "%(n)d month", "%(n)d months", n),
            "week": npgettext("relative time", "%(n)d week", "%(n)d weeks", n),
            "day": npgettext("relative time", "%(n)d day", "%(n)d days", n),
            "hour": npgettext("relative time", "%(n)d hour", "%(n)d hours", n),
            "minute": npgettext("relative time", "%(n)d minute", "%(n)d minutes", n),
        }
    else:
        words = {
            "year": ngettext("%(n)d year", "%(n)d years", n),
            "month": ngettext("%(n)d month", "%(n)d months", n),
            "week": ngettext("%(n)d week", "%(n)d weeks", n),
            "day": ngettext("%(n)d day", "%(n)d days", n),
            "hour": ngettext("%(n)d hour", "%(n)d hours", n),
            "minute": ngettext("%(n)d minute", "%(n)d minutes", n),
        }
    return words[unit] % {"n": n}


def duration(
    start: dt.date | dt.datetime, end: dt.date | dt.datetime, *, relative: bool = False
) -> str:
    """ "3 weeks, 1 day": the largest non-zero unit and the next one if it is not zero;
    "" under a minute."""
    counts = parts(start, end)
    for i, unit in enumerate(UNITS):
        if counts[unit]:
            first = _unit(unit, counts[unit], relative=relative)
            following = UNITS[i + 1] if i + 1 < len(UNITS) else None
            if following is None or not counts[following]:
                return first
            second = _unit(following, counts[following], relative=relative)
            if relative:
                return pgettext("relative time", "%(first)s, %(second)s") % {
                    "first": first,
                    "second": second,
                }
            return pgettext("duration", "%(first)s, %(second)s") % {
                "first": first,
                "second": second,
            }
    return ""


@register.filter
def age(value: object, now: dt.datetime | None = None) -> str:
    """How long ago `value` was, as a bare duration ("3 weeks, 1 day"); "" for a value
    that is not a date, "less than a minute" under a minute."""
    if not isinstance(value, dt.date):
        return ""
    start, end = sorted(_pair(value, now or timezone.now()))
    return duration(start, end) or pgettext("duration", "less than a minute")


def time_ago(value: dt.date | dt.datetime, now: dt.datetime | None = None) -> str:
    """ "3 weeks, 1 day ago", "in 2 hours", or "just now" (under a minute either way)."""
    moment, current = _pair(value, now or timezone.now())
    if moment <= current:
        delta = duration(moment, current, relative=True)
        if not delta:
            return pgettext("relative time", "just now")
        return pgettext("relative time", "%(delta)s ago") % {"delta": delta}
    delta = duration(current, moment, relative=True)
    if not delta:
        return pgettext("relative time", "just now")
    return pgettext("relative time", "in %(delta)s") % {"delta": delta}


@register.filter
def timeago(value: object, now: dt.datetime | None = None) -> str:
    """`value` relative to now: "3 weeks, 1 day ago", "in 2 hours", "just now"; "" for a
    value that is not a date (a missing variable reaches a filter as "")."""
    if not isinstance(value, dt.date):
        return ""
    return time_ago(value, now)
