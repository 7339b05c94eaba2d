"""Vast.ai marketplace offer search: GET <base_url>?q=<url-encoded JSON>.

Response {"offers": [{id, gpu_name, num_gpus, gpu_ram (MB), dph_total, ...}]}; errors come
as {"success": false, "msg": ...}; some clients see a single offer dict instead of a list.
`dph_total` is per offer (all its GPUs, storage included). Listings are volatile, so the
offers are grouped by (GPU, count) and the median becomes the price. Source: docs/pricing.md §6.
"""

from __future__ import annotations

import json
import statistics
import urllib.parse
from collections import defaultdict
from decimal import Decimal
from typing import Any

from pricing.fetchers.base import (
    FetchedOffer,
    FetchError,
    FetchResult,
    SourceConfig,
    bearer,
    fetch_day,
    get_json,
    money,
)

DEFAULT_QUERY: dict[str, Any] = {
    "verified": {"eq": True},
    "rentable": {"eq": True},
    "external": {"eq": False},
    "type": "on-demand",
    "order": [["dph_total", "asc"]],
    "limit": 1000,
}


def fetch(config: SourceConfig) -> FetchResult:
    query = {**DEFAULT_QUERY, **config.config.get("query", {})}
    url = f"{config.base_url}?{urllib.parse.urlencode({'q': json.dumps(query)})}"
    data = get_json(
        url, timeout_s=config.timeout_s, max_bytes=config.max_bytes, headers=bearer(config.api_key)
    )
    if isinstance(data, dict) and data.get("success") is False:
        raise FetchError(f"Vast.ai refused the search: {data.get('msg') or data.get('error')}")
    offers = data.get("offers") if isinstance(data, dict) else None
    if isinstance(offers, dict):
        offers = [offers]
    if not isinstance(offers, list):
        raise FetchError("malformed Vast.ai answer: no offers list")
    groups: dict[tuple[str, int], list[Decimal]] = defaultdict(list)
    memory_mb: dict[tuple[str, int], float] = {}
    result = FetchResult()
    for offer in offers:
        try:
            name, count = str(offer["gpu_name"]), int(offer["num_gpus"])
            price = money(offer["dph_total"])
        except (KeyError, TypeError, ValueError) as exc:
            result.skipped.append(f"offer {_id(offer)}: {exc!r}")
            continue
        if count < 1 or price is None or price < 0:
            result.skipped.append(f"offer {_id(offer)}: no GPUs or no price")
            continue
        groups[(name, count)].append(price)
        if offer.get("gpu_ram"):
            memory_mb[(name, count)] = float(offer["gpu_ram"])
    observed = fetch_day(config.now)
    for (name, count), prices in sorted(groups.items()):
        mb = memory_mb.get((name, count))
        gb = round(mb / 1024) if mb else None  # gpu_ram is MiB per GPU: 81920 is 80 GB
        result.offers.append(
            FetchedOffer(
                sku=f"{count}x {name} (marketplace median)",
                region="marketplace",
                gpu_name=f"{name} {gb}GB" if gb else name,
                gpu_count=count,
                vram_total_gb=gb * count if gb else None,
                on_demand_per_hour=Decimal(statistics.median(prices)).quantize(Decimal("0.0001")),
                observed_at=observed,
                billing_granularity="second",
                source_note=f"Vast.ai search, median of {len(prices)} verified offers",
            )
        )
    return result


def _id(offer: Any) -> str:
    return str(offer.get("id", "?")) if isinstance(offer, dict) else "?"
