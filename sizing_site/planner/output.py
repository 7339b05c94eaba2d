"""A plan as plain values: the API's JSON and what the page's table reads (one shape)."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from estimator import capacity
from sizing_site.planner.selectors import CardSource, Planned, form_field


def _finite(value: Any) -> Any:
    """JSON has no infinity: a relative gap that cannot be measured is null."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def source_data(source: CardSource | None) -> dict[str, Any] | None:
    if source is None:
        return None
    return {
        "kind": source.kind,
        "accelerator": source.accelerator.slug,
        "accelerator_name": source.accelerator.name,
        "provider": source.provider,
        "sku": source.sku,
        "region": source.region,
        "negotiated": source.negotiated,
    }


def plan_row(plan: capacity.Plan, sources: dict[str, CardSource]) -> dict[str, Any]:
    """Every figure of capacity.Plan, and where its cards come from."""
    row = {name: _finite(value) for name, value in asdict(plan).items()}
    return {**row, "source": source_data(sources.get(plan.label))}


def miss_row(miss: capacity.NearMiss, sources: dict[str, CardSource]) -> dict[str, Any]:
    """A near miss with its field and fixes under the planner's form names."""
    return {
        "label": miss.label,
        "engine": miss.engine,
        "quant": miss.quant,
        "tensor_parallel": miss.tensor_parallel,
        "field": form_field(miss.field),
        "required": _finite(miss.required),
        "achievable": _finite(miss.achievable),
        "shortfall": _finite(miss.shortfall),
        "fixes": [{"field": form_field(name), "value": value} for name, value in miss.fixes],
        "source": source_data(sources.get(miss.label)),
    }


def planned_data(planned: Planned, *, model_slug: str) -> dict[str, Any]:
    """The answer: the ranked plans (cheapest first) and the three picks, or no plan with
    the nearest miss; how many candidates were considered and left out by the bound."""
    result, sources = planned.result, planned.candidates.sources

    def pick(plan: capacity.Plan | None) -> dict[str, Any] | None:
        return None if plan is None else plan_row(plan, sources)

    return {
        "model": model_slug,
        "feasible": result.cheapest is not None,
        "candidates_considered": planned.candidates.considered,
        "candidates_left_out": planned.candidates.left_out,
        "plans": [plan_row(plan, sources) for plan in result.plans],
        "cheapest": pick(result.cheapest),
        "fastest": pick(result.fastest),
        "most_headroom": pick(result.most_headroom),
        "nearest_miss": (
            None if result.nearest_miss is None else miss_row(result.nearest_miss, sources)
        ),
        "misses": [miss_row(miss, sources) for miss in result.misses],
    }
