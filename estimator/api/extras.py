"""Optional result sections: cost (estimator/cost.py) and fine-tuning memory
(estimator/finetune.py). Each takes the already computed result and adds numbers only."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from estimator import cost, finetune, memory
from estimator.api.schema import FinetuneSpec, Pricing, Request, Result
from estimator.model import ModelSpec
from estimator.units import Range


def _per_million(usd_per_hour: float, speed: Range | None) -> dict[str, float] | None:
    """cost.usd_per_million_tokens for the estimate and both bounds (the fast bound is the
    cheap one)."""
    if speed is None or speed.low <= 0:
        return None
    return {
        "estimate": cost.usd_per_million_tokens(usd_per_hour, speed.estimate),
        "low": cost.usd_per_million_tokens(usd_per_hour, speed.high),
        "high": cost.usd_per_million_tokens(usd_per_hour, speed.low),
    }


def ownership(pricing: Pricing) -> cost.Ownership:
    """The cost module's Ownership from the request's pricing section."""
    return cost.Ownership(
        purchase_usd=pricing.purchase_usd or 0.0,
        power_w=pricing.power_w or 0.0,
        electricity_usd_per_kwh=pricing.usd_per_kwh,
        pue=pricing.pue,
        hours_per_day=pricing.hours_per_day,
        utilization=pricing.utilisation,
        amortization_months=round(pricing.amortisation_years * 12),
    )


def cost_section(pricing: Pricing, result: Result) -> dict[str, Any]:
    """Rent: USD per 1M output tokens at the aggregate decode speed and per 1M input tokens
    at the prefill speed, for usd_per_hour. Buy: the owned hourly cost (energy + purchase
    amortised over the busy hours) per 1M tokens, and rent vs buy when both are given.
    Assumes the deployment is busy for every hour counted."""
    out: dict[str, Any] = {}
    if pricing.usd_per_hour is not None:
        out["rent_usd_per_hour"] = pricing.usd_per_hour
        out["rent_usd_per_million_output_tokens"] = _per_million(
            pricing.usd_per_hour, result.aggregate_decode_tokens_per_s
        )
        out["rent_usd_per_million_input_tokens"] = _per_million(
            pricing.usd_per_hour, result.prefill_tokens_per_s
        )
    if pricing.purchase_usd is not None:
        own = ownership(pricing)
        hours = pricing.hours_per_day * cost.DAYS_PER_MONTH
        monthly = cost.monthly_energy_usd(own) + own.purchase_usd / max(
            1, own.amortization_months or 1
        )
        owned_per_hour = monthly / hours
        out["own_usd_per_hour"] = owned_per_hour
        out["own_usd_per_million_output_tokens"] = _per_million(
            owned_per_hour, result.aggregate_decode_tokens_per_s
        )
        if pricing.usd_per_hour is not None:
            out["rent_vs_buy"] = asdict(cost.rent_vs_buy(own, pricing.usd_per_hour))
    return out


@dataclass(frozen=True)
class FinetuneEstimate:
    """Training memory of one method (finetune.FinetuneMemory in whole bytes), the total
    and its even share per device, and whether that share fits."""

    method: str
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    adapter_params: int
    total_bytes: int
    per_device_bytes: int
    fit: memory.Fit


def finetune_estimate(
    spec: FinetuneSpec, model: ModelSpec, request: Request, usable_bytes_per_device: int
) -> FinetuneEstimate:
    """Training memory (finetune.py) for full / LoRA / QLoRA, and whether it fits when the
    state is sharded evenly over the devices (FSDP / ZeRO-3); LoRA targets the seven
    Llama-style projections, not MoE experts."""
    activations = finetune.model_activation_bytes(
        model,
        seq_len=spec.sequence_tokens,
        micro_batch=spec.batch_size,
        flash_attention=True,
        checkpointing=spec.gradient_checkpointing,
    )
    params = model.params_total
    if spec.method == "full":
        need = finetune.full_finetune_memory(
            params, activations, eight_bit_adam=spec.optimizer == "adamw8bit"
        )
    else:
        adapters = finetune.model_lora_params(model, spec.lora_rank)
        need = (
            finetune.qlora_memory(params, adapters, activations)
            if spec.method == "qlora"
            else finetune.lora_memory(params, adapters, activations)
        )
    total = round(need.total_bytes)
    per_device = -(-total // request.device.count)
    return FinetuneEstimate(
        method=spec.method,
        weights_bytes=round(need.weights_bytes),
        gradients_bytes=round(need.gradients_bytes),
        optimizer_bytes=round(need.optimizer_bytes),
        activations_bytes=round(need.activations_bytes),
        adapter_params=round(need.adapter_params),
        total_bytes=total,
        per_device_bytes=per_device,
        fit=memory.fit_verdict(per_device, usable_bytes_per_device),
    )


def finetune_section(
    spec: FinetuneSpec, model: ModelSpec, request: Request, usable_bytes_per_device: int
) -> dict[str, Any]:
    """The result's "finetune" section: finetune_estimate as JSON types."""
    return asdict(finetune_estimate(spec, model, request, usable_bytes_per_device))
