"""Azure Retail Prices API: public JSON, no key, paged by NextPageLink.

GET <base_url>?api-version=2023-01-01-preview&$filter=... returns
{"BillingCurrency", "Items": [...], "NextPageLink": url | null, "Count"}. GPU count and VRAM
are not in the response, so `GPU_SKUS` maps armSkuName to the GPUs it carries.
Per armSkuName there are Linux and Windows items and Spot / Low Priority meters: keep
Linux; Spot becomes the spot price, Low Priority is skipped. Source: docs/pricing.md §2.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from pricing.fetchers.base import (
    FetchedOffer,
    FetchError,
    FetchResult,
    SourceConfig,
    get_json,
    money,
    parse_time,
)

API_VERSION = "2023-01-01-preview"
DEFAULT_REGIONS = ["eastus", "westeurope"]
MAX_PAGES = 200  # ~4k items per region at 100 per page; a loop guard, not a quota

# armSkuName -> (GPU as we name it for matching, GPU count, GB per GPU).
# From Azure's VM size pages; extend per source with config["sku_map"].
GPU_SKUS: dict[str, tuple[str, int, float]] = {
    "Standard_ND96isr_H100_v5": ("H100 SXM 80GB", 8, 80),
    "Standard_ND96isr_H200_v5": ("H200 141GB", 8, 141),
    "Standard_ND96is_MI300X_v5": ("MI300X 192GB", 8, 192),
    "Standard_NC40ads_H100_v5": ("H100 NVL 94GB", 1, 94),
    "Standard_NC80adis_H100_v5": ("H100 NVL 94GB", 2, 94),
    "Standard_NC24ads_A100_v4": ("A100 PCIe 80GB", 1, 80),
    "Standard_NC48ads_A100_v4": ("A100 PCIe 80GB", 2, 80),
    "Standard_NC96ads_A100_v4": ("A100 PCIe 80GB", 4, 80),
    "Standard_ND96asr_v4": ("A100 SXM4 40GB", 8, 40),
    "Standard_ND96amsr_A100_v4": ("A100 SXM4 80GB", 8, 80),
    "Standard_NC4as_T4_v3": ("T4 16GB", 1, 16),
    "Standard_NC64as_T4_v3": ("T4 16GB", 4, 16),
}


@dataclass
class _Prices:
    gpu: tuple[str, int, float]
    region: str
    on_demand: Decimal | None = None
    spot: Decimal | None = None
    currency: str = "USD"
    observed_at: datetime | None = None


def first_url(config: SourceConfig, region: str) -> str:
    odata = (
        "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' "
        f"and armRegionName eq '{region}'"
    )
    query = urllib.parse.urlencode(
        {"api-version": API_VERSION, "$filter": odata, "currencyCode": "USD"}
    )
    return f"{config.base_url}?{query}"


def fetch(config: SourceConfig) -> FetchResult:
    skus = {**GPU_SKUS, **{k: tuple(v) for k, v in config.config.get("sku_map", {}).items()}}
    prices: dict[tuple[str, str], _Prices] = {}
    result = FetchResult()
    for region in config.config.get("regions", DEFAULT_REGIONS):
        url: str | None = first_url(config, region)
        pages = 0
        while url:
            pages += 1
            if pages > MAX_PAGES:
                raise FetchError(f"more than {MAX_PAGES} pages for {region}: NextPageLink loops?")
            page = get_json(url, timeout_s=config.timeout_s, max_bytes=config.max_bytes)
            if not isinstance(page, dict) or not isinstance(page.get("Items"), list):
                raise FetchError("malformed Azure page: no Items list")
            for item in page["Items"]:
                _collect(item, skus, prices, result)
            url = page.get("NextPageLink") or None
    for (sku, region), p in sorted(prices.items()):
        if p.on_demand is None and p.spot is None:
            continue
        name, count, gb = p.gpu
        result.offers.append(
            FetchedOffer(
                sku=sku,
                region=region,
                gpu_name=name,
                gpu_count=count,
                vram_total_gb=gb * count,
                on_demand_per_hour=p.on_demand,
                spot_per_hour=p.spot,
                currency=p.currency,
                observed_at=p.observed_at or config.now,
                source_note="Azure Retail Prices API (Linux, pay-as-you-go)",
            )
        )
    return result


def _collect(
    item: Any,
    skus: dict[str, Any],
    prices: dict[tuple[str, str], _Prices],
    result: FetchResult,
) -> None:
    if not isinstance(item, dict):
        result.skipped.append(f"not an item object: {str(item)[:60]}")
        return
    sku = item.get("armSkuName", "")
    if sku not in skus or item.get("type", "Consumption") != "Consumption":
        return  # not a GPU VM we know, or a reservation
    sku_name = str(item.get("skuName", ""))
    if str(item.get("productName", "")).endswith("Windows") or "Low Priority" in sku_name:
        return
    if item.get("unitOfMeasure") != "1 Hour":
        result.skipped.append(f"{sku}: unit {item.get('unitOfMeasure')!r} is not '1 Hour'")
        return
    try:
        price = money(item.get("retailPrice"))
        effective = (
            parse_time(item["effectiveStartDate"]) if item.get("effectiveStartDate") else None
        )
    except (ValueError, TypeError) as exc:
        result.skipped.append(f"{sku}: {exc}")
        return
    region = str(item.get("armRegionName", ""))
    p = prices.setdefault((sku, region), _Prices(gpu=skus[sku], region=region))
    if "Spot" in sku_name:
        p.spot = price
    else:
        p.on_demand = price
    p.currency = str(item.get("currencyCode") or "USD")
    if effective and (p.observed_at is None or effective > p.observed_at):
        p.observed_at = effective
