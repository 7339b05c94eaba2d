"""Generic price feed: CSV or JSON, fetched from <base_url> or uploaded by an org admin.

The format (one row per offer) is documented in docs/pricing.md, "Generic feed". Bad rows
are skipped with a reason ("row 3: negative price") and never stop the run.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext as _

from catalog.limits import LimitError, json_loads_bounded
from pricing.fetchers.base import (
    FetchedOffer,
    FetchError,
    FetchResult,
    SourceConfig,
    fetch_day,
    gpu_count_error,
    grouped,
    money,
    offer_check,
    open_url,
    parse_time,
    read_body,
)

CURRENCIES = {"USD", "EUR", "GBP", "CHF", "JPY", "CNY", "CAD", "AUD", "SEK", "NOK", "DKK", "INR"}
GRANULARITIES = {"", "second", "minute", "hour", "month"}
MAX_ROWS = 10_000
MAX_DEPTH = 8  # a feed nests 3 levels: {"offers": [{...}]}
MAX_TEXT_CHARS = 64 * 1024 * 1024  # a belt: fetches and uploads have smaller caps
# A date without a time is midnight UTC; where the provider's day starts earlier (up to
# UTC+14) today's date is hours ahead, so a date may lead by this much.
DATE_LEAD = timedelta(hours=14)


def fetch(config: SourceConfig) -> FetchResult:
    if config.base_url:
        response = open_url(config.base_url, timeout_s=config.timeout_s, max_bytes=config.max_bytes)
        text = read_body(response).decode("utf-8-sig", errors="replace")
    else:
        text = config.feed_content
    return parse(text, now=config.now)


def parse(text: str, *, now: datetime) -> FetchResult:
    rows = _rows(text)
    if len(rows) > MAX_ROWS:
        raise FetchError(_("the feed has more than %(max)s rows") % {"max": grouped(MAX_ROWS)})
    result = FetchResult()
    for number, row in enumerate(rows, start=1):
        try:
            result.offers.append(_offer(row, now))
        except (ValueError, TypeError, AttributeError) as exc:
            result.skipped.append(f"row {number}: {exc}")
    return result


def _rows(text: str) -> list[Any]:
    stripped = text.lstrip("\ufeff \t\r\n")
    if not stripped:
        return []
    if "\x00" in stripped:
        raise FetchError(_("the feed contains a NUL byte"))
    if stripped[0] in "[{":
        return _json_rows(stripped)
    return _csv_rows(stripped)


def _json_rows(text: str) -> list[Any]:
    try:
        data = json_loads_bounded(text, max_bytes=MAX_TEXT_CHARS, max_depth=MAX_DEPTH)
    except LimitError as exc:
        raise FetchError(_("malformed JSON feed: %(reason)s") % {"reason": exc}) from None
    rows = data.get("offers") if isinstance(data, dict) else data
    if not isinstance(rows, list):
        raise FetchError('malformed JSON feed: expected a list or {"offers": [...]}')
    return rows


def _csv_rows(text: str) -> list[Any]:
    # csv's field_size_limit is process-wide, so it stays at its 128 KiB default and a
    # longer field is reported here instead of being raised past the caller.
    reader = csv.DictReader(io.StringIO(text))
    try:
        if not reader.fieldnames or "sku" not in reader.fieldnames:
            raise FetchError("CSV feed needs a header row with at least sku and on_demand_per_hour")
        rows = []
        for row in reader:
            rows.append(row)
            if len(rows) > MAX_ROWS:
                break
        return rows
    except csv.Error as exc:
        raise FetchError(
            _("malformed CSV feed near line %(line)d: %(reason)s")
            % {"line": reader.line_num + 1, "reason": exc}
        ) from None


def _text(row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    return "" if value is None else str(value).strip()


def _offer(row: Any, now: datetime) -> FetchedOffer:
    if not isinstance(row, dict):
        raise ValueError("not an object")
    sku = _text(row, "sku")
    if not sku:
        raise ValueError("missing sku")
    on_demand, spot = _money(row, "on_demand_per_hour"), _money(row, "spot_per_hour")
    if on_demand is None and spot is None:
        raise ValueError("no price")
    if (on_demand is not None and on_demand < 0) or (spot is not None and spot < 0):
        raise ValueError("negative price")
    currency = (_text(row, "currency") or "USD").upper()
    if currency not in CURRENCIES:
        raise ValueError(f"unknown currency {currency!r}")
    granularity = _text(row, "billing_granularity").lower()
    if granularity not in GRANULARITIES:
        raise ValueError(f"unknown billing granularity {granularity!r}")
    checked = _checked_at(_text(row, "checked_at"), now)
    offer = FetchedOffer(
        sku=sku[:160],
        region=_text(row, "region")[:60],
        gpu_name=_text(row, "accelerator")[:120],
        gpu_count=_count(_text(row, "gpu_count")),
        vram_total_gb=_vram(_text(row, "vram_total_gb")),
        on_demand_per_hour=on_demand,
        spot_per_hour=spot,
        currency=currency,
        billing_granularity=granularity,
        observed_at=checked or fetch_day(now),
        checked_at=checked,
        source_note=_text(row, "source")[:300],
        provider=_text(row, "provider"),
    )
    offer_check(offer, now=now)
    return offer


def _money(row: dict[str, Any], key: str) -> Decimal | None:
    try:
        return money(_text(row, key))
    except ValueError:
        raise ValueError(_("%(field)s is not a finite number") % {"field": key}) from None


def _count(text: str) -> int:
    if not text:
        return 1
    # isascii: str.isdigit() accepts superscripts, which int() refuses.
    if not (text.isascii() and text.isdigit() and len(text) <= 6):
        raise ValueError(gpu_count_error())
    return int(text)


def _vram(text: str) -> float | None:
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(_("vram_total_gb is not a number")) from None


def _checked_at(text: str, now: datetime) -> datetime | None:
    if not text:
        return None
    try:
        checked = parse_time(text)
    except (ValueError, OverflowError):
        raise ValueError(_("checked_at is not an ISO date or date-time")) from None
    if len(text) <= 10 and now < checked <= now + DATE_LEAD:
        return now  # today's date in a time zone ahead of UTC
    return checked
