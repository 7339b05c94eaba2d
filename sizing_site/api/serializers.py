"""The estimate endpoint's output pieces: the sized setup under the configurator's
query-parameter names, and the answer panel's cost. Plain JSON types only."""

from __future__ import annotations

from typing import Any

from catalog.models import Accelerator, LLMModel
from catalog.sizing import Setup
from sizing_site.configurator.selectors import Answer


def setup_data(setup: Setup, *, backend: str) -> dict[str, Any]:
    """The setup that was sized, under the names the request (and the configurator's
    address) uses; `quant` is the one sized, also when the best that fits was asked for."""
    return {
        "quant": setup.quant,
        "ctx": setup.context_tokens,
        "gpus": setup.gpus,
        "seqs": setup.sequences,
        "kv": setup.kv,
        "engine": setup.engine,
        "backend": backend,
        "offload": setup.offload_percent,
        "layers": setup.offload_layers,
        "moe": setup.offload_moe_experts,
        "moe_layers": setup.offload_moe_layers,
        "host_bw": setup.host_bandwidth_gbps,
        "prompt": setup.prompt_tokens,
        "output": setup.output_tokens,
    }


def row_data(row: LLMModel | Accelerator) -> dict[str, str]:
    return {"slug": row.slug, "name": str(row)}


def cost_data(answer: Answer) -> dict[str, Any]:
    """The answer panel's cost per 1M output tokens at the aggregate decode speed: the
    cheapest public USD cloud offer's when there is one, else owning the hardware
    (pricing.costs.owned_usd_per_million). `source` is "cloud", "owned" or None."""
    cloud = answer.cloud
    offer = None
    if cloud is not None:
        row = cloud.offer
        offer = {
            "provider": row.provider.name,
            "sku": row.sku,
            "gpu_count": row.gpu_count,
            "currency": row.currency,
            "usd_per_hour": cloud.per_hour,
            "usd_per_million_one_sequence": cloud.per_million_one,
            "usd_per_million_all_sequences": cloud.per_million_all,
            "checked_at": row.checked_at.isoformat() if row.checked_at else None,
        }
    source = None
    if answer.per_million is not None:
        source = "cloud" if answer.from_cloud else "owned"
    return {
        "usd_per_million_tokens": answer.per_million,
        "source": source,
        "cloud_offer": offer,
        "owned_usd_per_million_tokens": answer.owned_per_million,
        "base_price": answer.base_price,
    }
