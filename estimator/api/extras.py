"""Optional result sections: cost (estimator/cost.py), fine-tuning memory
(estimator/finetune.py) and the batched serving point (estimator/serving.py). Each adds
numbers only."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from estimator import cost, finetune, memory, serving
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
    out.update(_serving_costs(out, result))
    return out


def _serving_costs(out: dict[str, Any], result: Result) -> dict[str, Any]:
    """USD per 1M output tokens at the serving point (result.serving["at_users"]: the most
    users that get the service level), next to the figures at the request's concurrency:
    the same hourly price over that point's aggregate tokens/s."""
    point = (result.serving or {}).get("at_users")
    if point is None:
        return {}
    speed = point["aggregate_tokens_per_s"]
    extra: dict[str, Any] = {"serving_users": point["users"]}
    if "rent_usd_per_hour" in out:
        extra["rent_usd_per_million_output_tokens_at_serving_point"] = _per_million(
            out["rent_usd_per_hour"], speed
        )
    if "own_usd_per_hour" in out:
        extra["own_usd_per_million_output_tokens_at_serving_point"] = _per_million(
            out["own_usd_per_hour"], speed
        )
    return extra


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


# The serving point's default service level when the request names none: 20 tokens/s per
# user (faster than people read, the planner's worked example) and a 1 s first token.
DEFAULT_SERVING_TOKENS_PER_S = 20.0
DEFAULT_SERVING_TTFT_S = 1.0
_CURVE_LADDER = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _point_dict(point: serving.ServingPoint, factors: serving.ServingFactors) -> dict[str, Any]:
    return {
        "users": point.batch,
        "per_user_tokens_per_s": serving.speed_range(point.per_user_tokens_per_s, factors),
        "aggregate_tokens_per_s": serving.speed_range(point.aggregate_tokens_per_s, factors),
        "tpot_s": point.tpot_s,
        "ttft_s": point.ttft_s,
        "compute_bound": point.step.compute_bound,
    }


def most_users(point_at: Any, admission: int, tokens_per_s: float, ttft_s: float) -> int:
    """The most closed-loop users (<= admission) whose per-user speed is at least
    `tokens_per_s` and whose TTFT without queueing is at most `ttft_s`; 0 when one user
    alone misses. Both fall monotonically with the users, so a bisection finds it."""

    def meets(n: int) -> bool:
        p = point_at(n)
        return bool(p.per_user_tokens_per_s >= tokens_per_s and p.ttft_s <= ttft_s)

    if admission < 1 or not meets(1):
        return 0
    low, high = 1, admission
    if meets(high):
        return high
    while high - low > 1:
        middle = (low + high) // 2
        if meets(middle):
            low = middle
        else:
            high = middle
    return low


def serving_section(
    request: Request, inputs: serving.StepInputs, capacity_tokens: int, fits: bool
) -> dict[str, Any]:
    """The batched serving point (serving.py) of a vLLM-like setup: the sequences the KV
    pool admits at prompt + output / 2, the most users that get the service level
    (`serving_targets`), one user and that many users side by side, and the curve of
    per-user and aggregate speed against the users."""
    workload, engine = request.workload, request.engine
    factors = inputs.factors
    targets = request.serving_targets
    tokens_per_s = targets.tokens_per_s_per_user if targets else DEFAULT_SERVING_TOKENS_PER_S
    ttft_s = targets.ttft_s if targets else DEFAULT_SERVING_TTFT_S
    cached = targets.cached_prompt_share if targets else 0.0
    admission = serving.kv_admission_sequences(
        capacity_tokens if fits else 0,
        workload.prompt_tokens,
        workload.output_tokens,
        engine.max_num_seqs or memory.VLLM_MAX_NUM_SEQS,
        engine.block_size,
    )
    chunk = engine.max_num_batched_tokens or serving.DEFAULT_CHUNK_TOKENS

    points: dict[int, serving.ServingPoint] = {}  # the search and the curve share points

    def point_at(n: int) -> serving.ServingPoint:
        if n not in points:
            points[n] = serving.closed_loop_point(
                inputs,
                batch=n,
                prompt_tokens=workload.prompt_tokens,
                output_tokens=workload.output_tokens,
                chunk_tokens=chunk,
                cached_prompt_share=cached,
            )
        return points[n]

    users = most_users(point_at, admission, tokens_per_s, ttft_s)
    ladder = sorted(
        {n for n in _CURVE_LADDER if n <= admission} | ({admission} if admission else set())
    )
    return {
        "group": factors.group,
        "calibrated": serving.serving_calibrated(engine.name, engine.backend),
        "kv_admission_sequences": admission,
        "target_tokens_per_s_per_user": tokens_per_s,
        "target_ttft_s": ttft_s,
        "cached_prompt_share": cached,
        "users": users,
        "one_user": _point_dict(point_at(1), factors),
        "at_users": _point_dict(point_at(users), factors) if users else None,
        "curve": [_point_dict(point_at(n), factors) for n in ladder],
    }
