"""AWS Price List bulk offer file for EC2, one region at a time (no key).

<base_url>/offers/v1.0/aws/AmazonEC2/current/region_index.json names each region's
`currentVersionUrl`; that file is {formatVersion, publicationDate, products: {sku: {sku,
productFamily, attributes}}, terms: {OnDemand: {sku: {term: {priceDimensions: {rate:
{unit: "Hrs", pricePerUnit: {"USD": "<string>"}}}}}}, Reserved: ...}}.
Region files run to gigabytes, so the file is read as a stream (`jsonstream`) and only GPU
instance products and their on-demand terms are kept. Source: docs/pricing.md §3.
"""

from __future__ import annotations

from typing import Any

from pricing.fetchers.base import (
    FetchedOffer,
    FetchError,
    FetchResult,
    SourceConfig,
    get_json,
    money,
    open_url,
    parse_time,
    positive_number,
)
from pricing.fetchers.jsonstream import JsonStream
from pricing.outbound import Response

REGION_INDEX = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
DEFAULT_REGIONS = ["us-east-1"]
# A region file is read as a stream, so its cap bounds transfer, not memory; the EC2
# us-east-1 file runs to several GB. Staff may change both in the source's config
# ("region_max_bytes", "region_deadline_s"); the deadline stays under the task's 240 s
# soft limit.
REGION_MAX_BYTES = 16 * 1024**3
REGION_DEADLINE_S = 220.0

# Instance family -> (GPU as we name it, GB per GPU). Counts come from attributes.gpu.
GPU_FAMILIES: dict[str, tuple[str, float]] = {
    "p6-b200": ("B200 180GB", 180),
    "p5": ("H100 SXM 80GB", 80),
    "p5e": ("H200 141GB", 141),
    "p5en": ("H200 141GB", 141),
    "p4d": ("A100 SXM4 40GB", 40),
    "p4de": ("A100 SXM4 80GB", 80),
    "g6e": ("L40S 48GB", 48),
    "g6": ("L4 24GB", 24),
    "g5": ("A10G 24GB", 24),
    "g4dn": ("T4 16GB", 16),
}
# The plain Linux on-demand price: every other combination is a different product.
WANTED = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
}


def fetch(config: SourceConfig) -> FetchResult:
    base = config.base_url.rstrip("/")
    index = get_json(base + REGION_INDEX, timeout_s=config.timeout_s, max_bytes=config.max_bytes)
    try:
        regions = index["regions"]
    except (KeyError, TypeError):
        raise FetchError("malformed region_index.json: no regions") from None
    result = FetchResult()
    for region in config.config.get("regions", DEFAULT_REGIONS):
        if region not in regions:
            result.skipped.append(f"region {region} is not in region_index.json")
            continue
        try:
            url = base + str(regions[region]["currentVersionUrl"])
        except (KeyError, TypeError):
            raise FetchError("malformed region_index.json: no currentVersionUrl") from None
        with _open_region(url, config) as response:
            _read_region(JsonStream(response), config, result)
    return result


def _open_region(url: str, config: SourceConfig) -> Response:
    return open_url(
        url,
        timeout_s=positive_number(config.config.get("region_deadline_s")) or REGION_DEADLINE_S,
        max_bytes=int(positive_number(config.config.get("region_max_bytes")) or REGION_MAX_BYTES),
    )


def _read_region(stream: JsonStream, config: SourceConfig, result: FetchResult) -> None:
    products: dict[str, dict[str, Any]] = {}
    published = config.now
    for key in stream.members():
        if key == "publicationDate":
            published = parse_time(str(stream.value()))
        elif key == "products":
            for sku in stream.members():
                product = stream.value()
                if _is_gpu_instance(product):
                    products[sku] = product["attributes"]
        elif key == "terms":
            for term_type in stream.members():
                if term_type != "OnDemand":
                    stream.skip_members()  # Reserved: large, and not an hourly price
                    continue
                for sku in stream.members():
                    terms = stream.value()
                    if sku in products:
                        _add_offer(products[sku], terms, published, result)
        else:
            stream.value()


def _is_gpu_instance(product: Any) -> bool:
    if not isinstance(product, dict) or not str(product.get("productFamily", "")).startswith(
        "Compute Instance"
    ):
        return False
    attributes = product.get("attributes") or {}
    if any(attributes.get(k) != v for k, v in WANTED.items()):
        return False
    return str(attributes.get("instanceType", "")).split(".")[0] in GPU_FAMILIES


def _add_offer(attributes: dict[str, Any], terms: Any, published: Any, result: FetchResult) -> None:
    instance = attributes["instanceType"]
    gpu_name, gb = GPU_FAMILIES[instance.split(".")[0]]
    try:
        count = int(attributes.get("gpu") or 0)
        dimensions = [d for term in terms.values() for d in term["priceDimensions"].values()]
        hourly = [d for d in dimensions if d.get("unit") == "Hrs"]
        price = money(hourly[0]["pricePerUnit"]["USD"]) if hourly else None
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        result.skipped.append(f"{instance}: malformed on-demand term ({exc!r})")
        return
    if count < 1 or price is None:
        result.skipped.append(f"{instance}: no GPU count or no hourly USD price")
        return
    result.offers.append(
        FetchedOffer(
            sku=instance,
            region=str(attributes.get("regionCode", "")),
            gpu_name=gpu_name,
            gpu_count=count,
            vram_total_gb=gb * count,
            on_demand_per_hour=price,
            observed_at=published,
            billing_granularity="second",
            source_note="AWS Price List bulk file (Linux, shared tenancy, on-demand)",
        )
    )
