"""Reads for the configurator: the two catalog rows, then every figure from the estimator
through catalog.adapters. The query count is fixed (model + its weights, accelerator,
curated accelerators), whatever the catalog's size."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Prefetch

from catalog import adapters, hardware
from catalog.models import Accelerator, LLMModel, ModelWeights, Segment
from pricing import selectors as pricing_selectors
from sizing_site.configurator import commands
from sizing_site.configurator.forms import RentBuyForm
from sizing_site.explore.selectors import default_floor, ladder_down_to, quant_ladder

FAQ_CONTEXT_TOKENS = 32768


def configuration_rows(*, model_slug: str, accelerator_slug: str) -> tuple[LLMModel, Accelerator]:
    """Raises LLMModel.DoesNotExist or Accelerator.DoesNotExist."""
    weights = Prefetch("weights", queryset=ModelWeights.objects.order_by("format", "quant"))
    model = LLMModel.objects.prefetch_related(weights).get(slug=model_slug)
    return model, Accelerator.objects.get(slug=accelerator_slug)


def curated_accelerators() -> list[Accelerator]:
    return list(Accelerator.objects.filter(curated=True).order_by("vendor", "name"))


def _scale(*sizes: int) -> float:
    return max(max(sizes), 1) / 100


def memory_segments(result: dict[str, Any], usable_bytes: int) -> dict[str, Any]:
    """The stacked bar: every device's memory plus what stays in host memory, as shares of
    the larger of that total and the usable memory of all devices (percent of bar width)."""
    on_device_weights = (
        result["weights_bytes"] + result["multimodal_bytes"] - result["offloaded_bytes"]
    )
    parts = [
        ("weights", on_device_weights),
        ("kv", result["kv_cache_bytes"]),
        ("overhead", result["overhead_bytes"]),
        ("offloaded", result["offloaded_bytes"]),
    ]
    scale = _scale(result["total_bytes"], usable_bytes)
    segments: list[dict[str, Any]] = []
    start = 0.0  # x: where each segment starts on the SVG bar (the CSP allows no inline style)
    for key, size in parts:
        if size:
            share = size / scale
            segments.append(
                {"key": key, "bytes": size, "percent": round(share, 2), "x": round(start, 2)}
            )
            start += share
    return {
        "parts": segments,
        "usable_bytes": usable_bytes,
        "usable_percent": round(usable_bytes / scale, 2),
    }


def configuration_results(
    *, model: LLMModel, accelerator: Accelerator, setup: adapters.Setup
) -> dict[str, Any]:
    """The main estimate and what is read straight off it. Raises RequestError."""
    measured = adapters.measured_weights(model)
    request = adapters.configurator_request(
        model=model, accelerator=accelerator, setup=setup, measured=measured
    )
    result = adapters.estimate_result(request)
    parsed = adapters.parsed_request(request)
    gguf_row = measured.get(setup.quant)
    repo = next((w.repo for w in model.weights.all() if w.quant == setup.quant and w.repo), "")
    gguf = adapters.is_gguf(setup.quant)
    launch = commands.launch_config(
        request,
        result,
        hf_repo=model.hf_repo or model.slug,
        gguf_repo=repo if gguf else "",
        weights_repo="" if gguf else repo,
        layers=adapters.offloaded_layers(parsed),
        backend=parsed.engine.backend,
    )
    usable_all = result["usable_bytes_per_device"] * parsed.device.count
    return {
        "estimator_request": request,
        "result": result,
        "backend": parsed.engine.backend,
        "measured": gguf_row is not None and adapters.is_gguf(setup.quant),
        "weights_row": gguf_row,
        "bar": memory_segments(result, usable_all),
        "device_memory": {
            "bytes": hardware.device_memory_bytes(accelerator),
            "basis": hardware.memory_basis(accelerator),
            "devices": parsed.device.count,
        },
        "commands": commands.launch_commands(launch),
    }


def recommendations(
    *,
    model: LLMModel,
    cards: Sequence[Accelerator],
    context_tokens: int,
    matrix: hardware.SupportMatrix,
) -> dict[str, Any]:
    """Best single card (fastest that fits), cheapest fit (purchase price) and the smallest
    Apple machine that fits, each under the card's own default engine with the least
    compressed quant that fits it: the explore tables' sweep (adapters.model_on_cards), so
    a card's figure here is the one every other page shows."""
    ladder = quant_ladder()
    quants = ladder_down_to(ladder, default_floor(ladder))
    sizable = [c for c in cards if adapters.can_size_accelerator(c)]
    fits = adapters.model_on_cards(
        model, sizable, quants=quants, context_tokens=context_tokens, matrix=matrix
    )
    # Only speeds published measurements back are ranked (CardFit.calibrated_speed).
    rows: list[dict[str, Any]] = [
        {"accelerator": card, "fit": fit, "decode_tokens_per_s": fit.calibrated_speed}
        for card, fit in zip(sizable, fits, strict=True)
        if fit.quant is not None and fit.calibrated_speed is not None
    ]
    apple = [r for r in rows if r["accelerator"].vendor.lower() == "apple"]
    priced = [r for r in rows if r["accelerator"].price_usd]
    return {
        "fastest": max(rows, key=lambda r: r["decode_tokens_per_s"], default=None),
        "cheapest": min(priced, key=lambda r: r["accelerator"].price_usd, default=None),
        "apple": min(apple, key=lambda r: r["accelerator"].memory_gb or 0, default=None),
        "cloud": None,  # configuration_costs fills it: cloud offers need the GPU count
    }


def chart(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Memory against context as SVG coordinates (viewBox 0..100 x 0..60): one bar per
    context point, the usable memory as a horizontal line."""
    usable = points[0]["usable_bytes_per_device"] if points else 0
    scale = _scale(usable, *(p["per_device_bytes"] for p in points)) / 0.55
    width = 90 / max(len(points), 1)
    bars = []
    for i, point in enumerate(points):
        height = round(point["per_device_bytes"] / scale, 2)
        bars.append(
            {
                **point,
                "x": round(8 + i * width + width * 0.15, 2),
                "width": round(width * 0.7, 2),
                "height": height,
                "y": round(58 - height, 2),
                "label_x": round(8 + i * width + width / 2, 2),
            }
        )
    return {"bars": bars, "usable_bytes": usable, "usable_y": round(58 - usable / scale, 2)}


def configuration_analysis(
    *,
    model: LLMModel,
    accelerator: Accelerator,
    setup: adapters.Setup,
    results: dict[str, Any],
    max_context_tokens: int,
    rent: RentBuyForm,
) -> dict[str, Any]:
    """The deeper sections: quant matrix, memory by context, recommendations, cloud offers
    and rent vs buy, make-it-fit, KV tuning, fine-tuning, FAQ. Several estimates each, so
    the page loads them after the main figures (an HTMX partial; inline without JavaScript)."""
    request, result = results["estimator_request"], results["result"]
    measured = adapters.measured_weights(model)
    points = adapters.memory_by_context(request, max_context_tokens)
    at_faq = next((p for p in points if p["context_tokens"] == FAQ_CONTEXT_TOKENS), None)
    fits = result["fit"]["verdict"] != "does_not_fit"
    curated = curated_accelerators()
    matrix = hardware.support_matrix()
    cards = adapters.smallest_cards(request, curated, measured, matrix)
    finetune = [
        {**row, "card": cards.smallest_holding(row["per_device_bytes"])}
        for row in adapters.finetune_memory(request)
    ]
    costs = configuration_costs(accelerator=accelerator, setup=setup, result=result, rent=rent)
    recommended = {
        **recommendations(
            model=model, cards=curated, context_tokens=setup.context_tokens, matrix=matrix
        ),
        "cloud": costs["cloud"],
    }
    return {
        **costs,
        "matrix": [
            {**row, "card": cards.by_quant.get(row["quant"])}
            for row in adapters.quant_matrix(request, measured)
        ],
        "chart": chart(points),
        "recommended": recommended,
        "plan": [] if fits else adapters.make_it_fit(request).get("make_it_fit", []),
        "kv_alternatives": adapters.kv_alternatives(request, result),
        "finetune": finetune,
        "faq_point": at_faq,
        "faq_context_tokens": FAQ_CONTEXT_TOKENS,
        "datacenter": accelerator.segment == Segment.DATACENTER,
    }


def default_quant(*, model: LLMModel, accelerator: Accelerator, setup: adapters.Setup) -> str:
    """The least-compressed quant that fits this setup (Q4_K_M or bf16 when none does)."""
    request = adapters.configurator_request(
        model=model, accelerator=accelerator, setup=setup, measured={}
    )
    return adapters.default_quant(request)


def configuration_costs(
    *, accelerator: Accelerator, setup: adapters.Setup, result: dict[str, Any], rent: RentBuyForm
) -> dict[str, Any]:
    """Public cloud offers of this accelerator with at least the configured GPUs (one
    query) and their cost per 1M output tokens; the cheapest hourly USD offer; owning the
    hardware against renting that offer for the same hours. Nothing runs a configuration
    that does not fit, so it gets no offers."""
    if result["fit"]["verdict"] == "does_not_fit":
        return {"offers": [], "cloud": None, "rent": rent, "rent_vs_buy": None}
    offers = adapters.offer_costs(
        pricing_selectors.offers_for(accelerator=accelerator, gpu_count=setup.gpus), result
    )
    usd = [row for row in offers if row["offer"].currency == "USD"]
    cloud = min(usd, key=lambda row: row["per_hour"]) if usd else None
    compared = None
    if cloud is not None and rent.is_bound and rent.is_valid():
        data = rent.cleaned_data
        compared = adapters.rent_vs_buy(
            purchase_usd=data["hw_usd"],
            power_w=data["power_w"],
            usd_per_kwh=data["kwh_usd"],
            pue=data["pue"],
            hours_per_day=data["hours"],
            rent_usd_per_hour=cloud["per_hour"],
        )
    return {"offers": offers, "cloud": cloud, "rent": rent, "rent_vs_buy": compared}
