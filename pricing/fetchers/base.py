"""What every fetcher shares: the offer it yields, its input, HTTP with classified errors.

Fetchers never touch the ORM: they turn a provider's response into `FetchedOffer`s and
reasons for the rows they skipped; `pricing.services` does the writing.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.utils import formats
from django.utils.translation import gettext as _

from catalog.limits import LimitError, json_loads_bounded
from pricing import outbound
from pricing.outbound import FetchError as FetchError
from pricing.outbound import NotAllowed as NotAllowed
from pricing.outbound import TooLarge as TooLarge
from pricing.outbound import TransientFetchError as TransientFetchError

USER_AGENT = "rightsize-pricing/1 (+https://github.com/; price refresh)"

# Sanity bounds on what a source may state; outside them a row is refused, not stored.
MAX_GPU_COUNT = 4096
# USD per instance-hour; the dearest offer in the seed data, Azure's 8-GPU H100
# ND96isr_H100_v5, is 98.32, so this is about 100 times any real price.
MAX_PER_HOUR = Decimal(10_000)
# Currencies with many units to the dollar get a wider cap: an upper bound, not a rate.
CURRENCY_SCALE = {"JPY": 200, "INR": 100, "CNY": 10, "SEK": 15, "NOK": 15, "DKK": 10}
MAX_VRAM_TOTAL_GB = float(MAX_GPU_COUNT * 1024)  # 4096 GPUs of 1 TiB each
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
CLOCK_SKEW = timedelta(minutes=10)


@dataclass(frozen=True)
class SourceConfig:
    base_url: str
    api_key: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    feed_content: str = ""
    # The whole fetch's deadline and byte cap; None: OUTBOUND_DEADLINE_S, OUTBOUND_MAX_BYTES.
    timeout_s: float | None = None
    max_bytes: int | None = None
    now: datetime = field(default_factory=lambda: datetime.now(UTC))


@dataclass(frozen=True)
class FetchedOffer:
    sku: str
    region: str
    gpu_name: str
    gpu_count: int
    on_demand_per_hour: Decimal | None
    observed_at: datetime
    spot_per_hour: Decimal | None = None
    vram_total_gb: float | None = None
    currency: str = "USD"
    billing_granularity: str = ""
    source_note: str = ""
    provider: str = ""  # only the trusted seed file names a provider per row
    # When the price was confirmed; None means "now" (a live fetch). Staleness reads this,
    # while observed_at keys the history (e.g. Azure's effectiveStartDate).
    checked_at: datetime | None = None


@dataclass
class FetchResult:
    offers: list[FetchedOffer] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def spot_above_on_demand(spot: Decimal | None, on_demand: Decimal | None) -> bool:
    """Spot capacity is the interruptible discount on the same instance: a spot price above
    the on-demand one is a transcription or feed error (a different SKU's figure). The one
    rule behind the feed import (offer_check) and the admin form (forms.spot_price_check)."""
    return spot is not None and on_demand is not None and spot > on_demand


def offer_check(offer: FetchedOffer, *, now: datetime) -> None:
    """Raise ValueError naming the field when a value is out of range or not finite."""
    if not 1 <= offer.gpu_count <= MAX_GPU_COUNT:
        raise ValueError(gpu_count_error())
    cap = MAX_PER_HOUR * CURRENCY_SCALE.get(offer.currency, 1)
    for name, price in (
        ("on_demand_per_hour", offer.on_demand_per_hour),
        ("spot_per_hour", offer.spot_per_hour),
    ):
        if price is not None:
            _price_check(name, price, cap, offer.currency)
    spot, on_demand = offer.spot_per_hour, offer.on_demand_per_hour
    if spot_above_on_demand(spot, on_demand):
        raise ValueError(
            _("spot_per_hour (%(spot)s) is above on_demand_per_hour (%(on_demand)s)")
            % {"spot": spot, "on_demand": on_demand}
        )
    vram = offer.vram_total_gb
    if vram is not None and not (math.isfinite(vram) and 0 < vram <= MAX_VRAM_TOTAL_GB):
        raise ValueError(
            _("vram_total_gb must be more than 0 and at most %(max)d") % {"max": MAX_VRAM_TOTAL_GB}
        )
    for name, moment in (("checked_at", offer.checked_at), ("observed_at", offer.observed_at)):
        if moment is not None:
            time_check(name, moment, now=now)


def gpu_count_error() -> str:
    return _("gpu_count must be a whole number from 1 to %(max)d") % {"max": MAX_GPU_COUNT}


def _price_check(name: str, price: Decimal, cap: Decimal, currency: str) -> None:
    if not price.is_finite():
        raise ValueError(_("%(field)s is not a finite number") % {"field": name})
    if price < 0:
        raise ValueError("negative price")
    if not 0 < price < cap:
        raise ValueError(
            _("%(field)s must be more than 0 and less than %(cap)s %(currency)s per hour")
            % {"field": name, "cap": grouped(cap), "currency": currency}
        )


def grouped(number: Decimal | int) -> str:
    """A whole number with the active language's thousands separator, for a message
    a form or the run shows (10,000 in English, 10.000 in German)."""
    return formats.number_format(number, decimal_pos=0, use_l10n=True, force_grouping=True)


def time_check(name: str, moment: datetime, *, now: datetime) -> None:
    if moment < EARLIEST:
        raise ValueError(_("%(field)s is before 2000") % {"field": name})
    if moment > now + CLOCK_SKEW:
        raise ValueError(_("%(field)s is in the future") % {"field": name})


def positive_number(value: Any) -> float | None:
    """A number from an admin-edited JSON config; anything else means "the default"."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if value > 0 else None


def fetch_day(now: datetime) -> datetime:
    """Observation time for sources that state none: one observation per UTC day, so a
    second run the same day updates the day's snapshot instead of adding one."""
    return now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def parse_time(value: str) -> datetime:
    """ISO date or date-time; naive values are UTC."""
    parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def money(value: Any) -> Decimal | None:
    """A price as Decimal (AWS sends strings, others floats); None when absent."""
    if value is None or value == "":
        return None
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"not a number: {value!r}") from None
    if not amount.is_finite():
        raise ValueError(f"not a number: {value!r}")
    return amount


def open_url(
    url: str,
    *,
    timeout_s: float | None = None,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    max_bytes: int | None = None,
) -> outbound.Response:
    """Open a URL under the outbound policy; `timeout_s` is the whole fetch's deadline."""
    sent = {"User-Agent": USER_AGENT, "Accept": "application/json", **(headers or {})}
    return outbound.fetch(
        url,
        method="POST" if body is not None else "GET",
        headers=sent,
        body=body,
        max_bytes=max_bytes,
        deadline_s=timeout_s,
    )


def read_body(response: outbound.Response) -> bytes:
    with response:
        return response.read_all()


def get_json(
    url: str,
    *,
    timeout_s: float | None = None,
    headers: dict[str, str] | None = None,
    body: Any = None,
    max_bytes: int | None = None,
) -> Any:
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers = {**(headers or {}), "Content-Type": "application/json"}
    response = open_url(url, timeout_s=timeout_s, headers=headers, body=data, max_bytes=max_bytes)
    raw = read_body(response)
    try:
        return json_loads_bounded(raw, max_bytes=response.max_bytes)
    except LimitError as exc:
        raise FetchError(_("malformed JSON: %(reason)s") % {"reason": exc}) from None


def bearer(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}
