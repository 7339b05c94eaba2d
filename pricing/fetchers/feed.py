"""Generic price feed: CSV or JSON, fetched from <base_url> or uploaded by an org admin.

The format (one row per offer) is documented in docs/pricing.md, "Generic feed". Bad rows
are skipped with a reason ("row 3: negative price") and never stop the run.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime
from typing import Any

from pricing.fetchers.base import (
    FetchedOffer,
    FetchError,
    FetchResult,
    SourceConfig,
    fetch_day,
    money,
    open_url,
    parse_time,
    read_body,
)

CURRENCIES = {"USD", "EUR", "GBP", "CHF", "JPY", "CNY", "CAD", "AUD", "SEK", "NOK", "DKK", "INR"}
GRANULARITIES = {"", "second", "minute", "hour", "month"}
MAX_ROWS = 10_000


def fetch(config: SourceConfig) -> FetchResult:
    if config.base_url:
        url = config.base_url
        text = read_body(
            open_url(url, timeout_s=config.timeout_s), url=url, timeout_s=config.timeout_s
        ).decode("utf-8-sig", errors="replace")
    else:
        text = config.feed_content
    return parse(text, now=config.now)


def parse(text: str, *, now: datetime) -> FetchResult:
    rows = _rows(text)
    if len(rows) > MAX_ROWS:
        raise FetchError(f"feed has {len(rows)} rows; the limit is {MAX_ROWS}")
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
    if stripped[0] in "[{":
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise FetchError(f"malformed JSON feed: {exc}") from None
        rows = data.get("offers") if isinstance(data, dict) else data
        if not isinstance(rows, list):
            raise FetchError('malformed JSON feed: expected a list or {"offers": [...]}')
        return rows
    reader = csv.DictReader(io.StringIO(stripped))
    if not reader.fieldnames or "sku" not in reader.fieldnames:
        raise FetchError("CSV feed needs a header row with at least sku and on_demand_per_hour")
    return list(reader)


def _text(row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    return "" if value is None else str(value).strip()


def _offer(row: Any, now: datetime) -> FetchedOffer:
    if not isinstance(row, dict):
        raise ValueError("not an object")
    sku = _text(row, "sku")
    if not sku:
        raise ValueError("missing sku")
    on_demand, spot = money(_text(row, "on_demand_per_hour")), money(_text(row, "spot_per_hour"))
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
    count = int(_text(row, "gpu_count") or 1)
    if count < 1:
        raise ValueError("gpu_count must be at least 1")
    vram = _text(row, "vram_total_gb")
    checked = parse_time(_text(row, "checked_at")) if _text(row, "checked_at") else None
    return FetchedOffer(
        sku=sku[:160],
        region=_text(row, "region")[:60],
        gpu_name=_text(row, "accelerator")[:120],
        gpu_count=count,
        vram_total_gb=float(vram) if vram else None,
        on_demand_per_hour=on_demand,
        spot_per_hour=spot,
        currency=currency,
        billing_granularity=granularity,
        observed_at=checked or fetch_day(now),
        checked_at=checked,
        source_note=_text(row, "source")[:300],
        provider=_text(row, "provider"),
    )
