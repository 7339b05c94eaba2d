"""RunPod GraphQL catalogue: POST <base_url> {"query": ...} with a Bearer key.

Response {"data": {"gpuTypes": [{id, displayName, memoryInGb, secureCloud, communityCloud,
securePrice, communityPrice, secureSpotPrice, communitySpotPrice}]}} in USD per GPU-hour;
errors come as {"errors": [{"message": ...}]}. The catalogue shows placeholder prices for
clouds where a GPU is not offered, so a price is kept only where its cloud flag is true.
Source: docs/pricing.md §5b (the REST v2 field names are not settled yet, §5a).
"""

from __future__ import annotations

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

QUERY = """query GpuTypes {
  gpuTypes {
    id displayName memoryInGb secureCloud communityCloud
    securePrice communityPrice secureSpotPrice communitySpotPrice
  }
}"""
CLOUDS = (("secure", "Secure Cloud pod"), ("community", "Community Cloud pod"))


def fetch(config: SourceConfig) -> FetchResult:
    if not config.api_key:
        raise FetchError("RunPod needs an API key (RUNPOD_API_KEY)")
    data = get_json(
        config.base_url,
        timeout_s=config.timeout_s,
        max_bytes=config.max_bytes,
        headers=bearer(config.api_key),
        body={"query": QUERY},
    )
    if isinstance(data, dict) and data.get("errors"):
        raise FetchError(f"RunPod: {data['errors'][0].get('message', data['errors'][0])}")
    try:
        gpu_types = data["data"]["gpuTypes"]
        assert isinstance(gpu_types, list)
    except (KeyError, TypeError, AssertionError):
        raise FetchError("malformed RunPod answer: no data.gpuTypes list") from None
    result = FetchResult()
    observed = fetch_day(config.now)
    for gpu in gpu_types:
        for cloud, label in CLOUDS:
            _add(gpu, cloud, label, observed, result)
    return result


def _add(gpu: Any, cloud: str, label: str, observed: Any, result: FetchResult) -> None:
    try:
        if not gpu.get(f"{cloud}Cloud"):
            return
        price = money(gpu.get(f"{cloud}Price"))
        spot = money(gpu.get(f"{cloud}SpotPrice"))
        name, memory = str(gpu["displayName"]), gpu.get("memoryInGb")
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        result.skipped.append(f"gpu type {gpu!r:.60}: {exc!r}")
        return
    if not price:  # 0 or missing: not actually rentable there
        return
    result.offers.append(
        FetchedOffer(
            sku=f"{name} ({label})",
            region="various",
            gpu_name=f"{name} {memory}GB" if memory else name,
            gpu_count=1,
            vram_total_gb=float(memory) if memory else None,
            on_demand_per_hour=price,
            spot_per_hour=spot or None,
            observed_at=observed,
            billing_granularity="second",
            source_note="RunPod GraphQL gpuTypes (per GPU-hour)",
        )
    )
