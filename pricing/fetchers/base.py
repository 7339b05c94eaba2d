"""What every fetcher shares: the offer it yields, its input, HTTP with classified errors.

Fetchers never touch the ORM: they turn a provider's response into `FetchedOffer`s and
reasons for the rows they skipped; `pricing.services` does the writing.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import IO, Any

USER_AGENT = "rightsize-pricing/1 (+https://github.com/; price refresh)"


class FetchError(Exception):
    """The source answered with something we cannot use; retrying will not help."""


class TransientFetchError(FetchError):
    """Timeout, refused connection or HTTP 5xx/429: worth retrying later."""


@dataclass(frozen=True)
class SourceConfig:
    base_url: str
    api_key: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    feed_content: str = ""
    timeout_s: float = 30.0
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
    timeout_s: float,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> IO[bytes]:
    """Open a URL; map failures to FetchError / TransientFetchError."""
    request = urllib.request.Request(
        url, data=body, headers={"User-Agent": USER_AGENT, "Accept": "application/json"}
    )
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        response: IO[bytes] = urllib.request.urlopen(request, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        if exc.code >= 500 or exc.code == 429:
            raise TransientFetchError(f"HTTP {exc.code} from {url}") from None
        raise FetchError(f"HTTP {exc.code} from {url}") from None
    except TimeoutError as exc:
        raise TransientFetchError(f"timed out after {timeout_s:g} s: {url}") from exc
    except (urllib.error.URLError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            raise TransientFetchError(f"timed out after {timeout_s:g} s: {url}") from exc
        raise TransientFetchError(f"cannot reach {url}: {reason}") from exc
    return response


def read_body(response: IO[bytes], *, url: str, timeout_s: float) -> bytes:
    try:
        with response:
            return response.read()
    except TimeoutError as exc:
        raise TransientFetchError(f"timed out after {timeout_s:g} s reading {url}") from exc
    except ConnectionError as exc:
        raise TransientFetchError(f"connection lost reading {url}: {exc}") from exc


def get_json(
    url: str,
    *,
    timeout_s: float,
    headers: dict[str, str] | None = None,
    body: Any = None,
) -> Any:
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers = {**(headers or {}), "Content-Type": "application/json"}
    raw = read_body(
        open_url(url, timeout_s=timeout_s, headers=headers, body=data),
        url=url,
        timeout_s=timeout_s,
    )
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FetchError(f"malformed JSON from {url}: {exc}") from None


def bearer(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}
