"""Lambda Cloud instance types: GET <base_url> with a Bearer key.

Response {"data": {"gpu_8x_h100_sxm5": {"instance_type": {name, description,
gpu_description, price_cents_per_hour, specs: {vcpus, memory_gib, storage_gib, gpus}},
"regions_with_capacity_available": [...]}}}. The price is cents per instance-hour and the
same in every region. Source: docs/pricing.md §7.
"""

from __future__ import annotations

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


def fetch(config: SourceConfig) -> FetchResult:
    if not config.api_key:
        raise FetchError("Lambda needs an API key (LAMBDA_API_KEY)")
    data = get_json(
        config.base_url,
        timeout_s=config.timeout_s,
        max_bytes=config.max_bytes,
        headers=bearer(config.api_key),
    )
    if not isinstance(data, dict) or not isinstance(data.get("data"), dict):
        raise FetchError("malformed Lambda answer: no data object")
    result = FetchResult()
    observed = fetch_day(config.now)
    for key, entry in sorted(data["data"].items()):
        offer = _offer(key, entry, observed, result)
        if offer:
            result.offers.append(offer)
    return result


def _offer(key: str, entry: Any, observed: Any, result: FetchResult) -> FetchedOffer | None:
    try:
        instance = entry["instance_type"]
        cents = money(instance["price_cents_per_hour"])
        count = int(instance.get("specs", {}).get("gpus") or 0)
        gpu = str(instance.get("gpu_description") or instance.get("description", ""))
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        result.skipped.append(f"{key}: {exc!r}")
        return None
    if cents is None or cents < 0 or count < 1:
        result.skipped.append(f"{key}: no price or no GPUs")
        return None
    return FetchedOffer(
        sku=str(instance.get("name") or key),
        region="all",
        gpu_name=gpu,
        gpu_count=count,
        on_demand_per_hour=(cents / 100).quantize(Decimal("0.0001")),
        observed_at=observed,
        billing_granularity="minute",
        source_note="Lambda instance-types API",
    )
