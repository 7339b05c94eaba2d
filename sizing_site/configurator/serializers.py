"""The estimate endpoint's output pieces: the sized setup under the configurator's
query-parameter names, the answer panel's cost, the launch commands and the configurator's
deeper sections. Plain JSON types only."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from django.db.models import Model
from django.utils.functional import Promise

from catalog.models import Accelerator, LLMModel
from catalog.sizing import Setup
from pricing import costs
from pricing.models import CloudOffer
from sizing_site.configurator.commands import ShownCommand
from sizing_site.configurator.rent_forms import RentBuyForm
from sizing_site.configurator.selectors import Answer, ConfigurationAnalysis


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


def offer_data(row: CloudOffer) -> dict[str, Any]:
    return {
        "provider": row.provider.name,
        "sku": row.sku,
        "gpu_count": row.gpu_count,
        "currency": row.currency,
        "checked_at": row.checked_at.isoformat() if row.checked_at else None,
    }


def plain(value: Any) -> Any:
    """A sizing figure as JSON types: a dataclass as its fields, a catalog row as its slug
    and name, a cloud offer as offer_data, a translated text in the active language."""
    if isinstance(value, CloudOffer):
        return offer_data(value)
    if isinstance(value, Accelerator | LLMModel):
        return row_data(value)
    if isinstance(value, Model):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Promise):
        return str(value)
    return value


def commands_data(commands: Mapping[str, ShownCommand]) -> dict[str, Any]:
    """The configurator's launch commands, by engine: the command line (null when the
    engine refuses the setup, with the reason in `refused`) and its notes."""
    return {name: plain(command) for name, command in commands.items()}


def offer_cost_data(row: costs.OfferCost | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        **offer_data(row.offer),
        "usd_per_hour": row.per_hour,
        "usd_per_million_one_sequence": row.per_million_one,
        "usd_per_million_all_sequences": row.per_million_all,
        "usd_per_month": row.monthly,
        **_split_data(row),
    }


def _split_data(row: costs.OfferCost) -> dict[str, Any]:
    """How the offer's price was split: the setup's GPUs of the instance's, and the
    instance's own hour (usd_per_hour = instance / offer GPUs x setup GPUs)."""
    return {
        "gpus_used": row.gpus or row.offer_gpus,
        "usd_per_instance_hour": row.instance_per_hour,
    }


def analysis_data(analysis: ConfigurationAnalysis, rent: RentBuyForm) -> dict[str, Any]:
    """The configurator's deeper sections (selectors.configuration_analysis): the cloud
    offers that run the setup with their cost, owning against renting the cheapest (at the
    rent-or-buy fields), the recommended cards, the quant matrix, memory by context, the
    steps that make it fit, the KV cache alternatives and fine-tuning memory."""
    ownership = rent.ownership()
    month = None if ownership is None else costs.owner_month(ownership)
    return {
        "hours_per_day": rent.hours_per_day,
        "offers": [offer_cost_data(row) for row in analysis.costs.offers],
        "cheapest_offer": offer_cost_data(analysis.costs.cloud),
        "rent_vs_buy": plain(analysis.costs.rent_vs_buy),
        "owner_month": plain(month),
        "recommended": {
            "fastest": plain(analysis.recommended.fastest),
            "cheapest": plain(analysis.recommended.cheapest),
            "apple": plain(analysis.recommended.apple),
        },
        "quant_matrix": plain(analysis.matrix),
        "memory_by_context": plain(analysis.memory_by_context),
        "make_it_fit": plain(analysis.plan),
        "kv_alternatives": plain(analysis.kv_alternatives),
        "finetune": plain(analysis.finetune),
    }


def cost_data(answer: Answer) -> dict[str, Any]:
    """The answer panel's cost per 1M output tokens at the aggregate decode speed: the
    cheapest public USD cloud offer's when there is one, else owning the hardware
    (pricing.costs.owned_usd_per_million). `source` is "cloud", "owned" or None."""
    cloud = answer.cloud
    offer = None
    if cloud is not None:
        offer = {
            **offer_data(cloud.offer),
            "usd_per_hour": cloud.per_hour,
            "usd_per_million_one_sequence": cloud.per_million_one,
            "usd_per_million_all_sequences": cloud.per_million_all,
            **_split_data(cloud),
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
