"""A plan as plain values: the API's JSON and what the page's table reads (one shape)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from estimator import capacity
from sizing_site.planner.selectors import LeftOut, Planned, form_field
from sizing_site.planner.sources import CLOUD, INVENTORY, CardSource
from sizing_site.planner.whatif import WhatIf


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
        "machine": source.machine or None,
        "internal_rate": source.internal_rate,
    }


def hardware_per_replica(plan: capacity.Plan, source: CardSource | None) -> dict[str, Any]:
    """What one replica runs on: `cards` of the accelerator in a `machine` ("host": cards in
    a server of their own, as priced with its host allowance; "server": modules sharing an
    HGX / OAM server of `cards_per_machine`; "system": a whole computer a device; "instance":
    GPUs of a cloud instance of `cards_per_machine`; "machine": the organization's own), and
    `machines` for the whole plan where it is known (bought hardware)."""
    kind = source.kind if source is not None else ""
    per_machine = None
    if kind == INVENTORY:
        machine = "machine"
    elif kind == CLOUD:
        machine, per_machine = "instance", source.offer_gpus if source else None
    elif source is not None and source.host_included:
        machine = "system" if source.cards_per_host == 1 else "server"
        per_machine = source.cards_per_host
    else:
        machine = "host"
    return {
        "cards": plan.tensor_parallel,
        "machine": machine,
        "cards_per_machine": per_machine,
        "machines": plan.hosts,
    }


def plan_row(plan: capacity.Plan, sources: dict[str, CardSource]) -> dict[str, Any]:
    """Every figure of capacity.Plan, what one replica runs on, and where its cards come
    from."""
    row = {name: _finite(value) for name, value in asdict(plan).items()}
    source = sources.get(plan.label)
    return {
        **row,
        "hardware_per_replica": hardware_per_replica(plan, source),
        "source": source_data(source),
    }


# The left-out candidates listed (the count is always whole).
LEFT_OUT_LISTED = 100


def left_out_rows(left_out: Sequence[LeftOut]) -> list[dict[str, Any]]:
    """The candidates not planned, and why (at most LEFT_OUT_LISTED)."""
    return [
        {
            "label": item.label,
            "engine": item.engine,
            "quant": item.quant,
            "tensor_parallel": item.tensor_parallel,
            "reason": item.reason,
            "message": item.message,
        }
        for item in left_out[:LEFT_OUT_LISTED]
    ]


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


def planned_data(
    planned: Planned, *, model_slug: str, what_if: WhatIf | None = None
) -> dict[str, Any]:
    """The answer: the ranked plans (cheapest first) and the three picks, or no plan with
    the nearest miss; how many candidates were considered and left out by the bound; the
    organization's machines planned alone (`inventory`, null without any); the cheapest
    plan's what-ifs (`what_if`, null without a plan)."""
    result, sources = planned.result, planned.candidates.sources

    def pick(plan: capacity.Plan | None) -> dict[str, Any] | None:
        return None if plan is None else plan_row(plan, sources)

    return {
        "model": model_slug,
        "feasible": result.cheapest is not None,
        "candidates_considered": planned.candidates.considered,
        "candidates_left_out": planned.candidates.left_out,
        "left_out": left_out_rows(planned.candidates.left_out_candidates),
        "totals": totals(result.cheapest),
        "plans": [plan_row(plan, sources) for plan in result.plans],
        "cheapest": pick(result.cheapest),
        "fastest": pick(result.fastest),
        "most_headroom": pick(result.most_headroom),
        "nearest_miss": (
            None if result.nearest_miss is None else miss_row(result.nearest_miss, sources)
        ),
        "misses": [miss_row(miss, sources) for miss in result.misses],
        "inventory": None if planned.ours is None else ours_data(planned.ours, sources),
        "what_if": None if what_if is None else what_if_data(what_if, sources),
    }


def totals(plan: capacity.Plan | None) -> dict[str, Any] | None:
    """The cheapest plan's hardware in one line: its cards, the machines they go in, the
    purchase price (bought hardware) and the monthly rent (rented), null without a plan."""
    if plan is None:
        return None
    return {
        "cards": plan.cards,
        "replicas": plan.replicas,
        "machines": plan.hosts,
        "purchase_usd": _finite(plan.purchase_usd),
        "monthly_rent_usd": _finite(plan.monthly_rent_usd),
        "monthly_usd": _finite(plan.monthly_usd),
    }


def what_if_data(what_if: WhatIf, sources: dict[str, CardSource]) -> dict[str, Any]:
    """The what-if cases and the chart's points (monthly cost against the load)."""
    return {
        "label": what_if.label,
        "engine": what_if.engine,
        "quant": what_if.quant,
        "tensor_parallel": what_if.tensor_parallel,
        "cards": what_if.cards,
        "axis": what_if.axis,
        "amount": what_if.amount,
        "boundary": what_if.boundary,
        "cases": [
            {
                "case": case.case,
                "title": case.title,
                "amount": case.amount,
                "quant": case.quant,
                "feasible": case.plan is not None,
                "plan": None if case.plan is None else plan_row(case.plan, sources),
                "miss": None if case.miss is None else miss_row(case.miss, sources),
                "refused": case.refused,
            }
            for case in what_if.cases
        ],
        "points": [
            {"amount": point.amount, "monthly_usd": _finite(point.monthly_usd)}
            for point in what_if.points
        ],
    }


# The chart's box (SVG user units) and its margins for the axis labels.
_W, _H, _LEFT, _BOTTOM, _TOP = 100.0, 60.0, 14.0, 8.0, 4.0


def what_if_chart(data: dict[str, Any]) -> dict[str, Any]:
    """Coordinates for the page's small SVG: the priced points as a polyline (x the load,
    y the monthly cost, both from 0) and the SLO boundary as a vertical line."""
    priced = [p for p in data["points"] if p["monthly_usd"] is not None]
    top_x = max([p["amount"] for p in data["points"]] + [float(data["boundary"]), 1.0])
    top_y = max([p["monthly_usd"] for p in priced] + [1.0])

    def x(value: float) -> float:
        return round(_LEFT + (_W - _LEFT - 2) * value / top_x, 2)

    def y(value: float) -> float:
        return round(_H - _BOTTOM - (_H - _BOTTOM - _TOP) * value / top_y, 2)

    dots = [{"x": x(p["amount"]), "y": y(p["monthly_usd"]), **p} for p in priced]
    return {
        "dots": dots,
        "line": " ".join(f"{d['x']},{d['y']}" for d in dots),
        "boundary_x": x(float(data["boundary"])),
        "top_y": top_y,
        "top_x": top_x,
        "axis_y": _H - _BOTTOM,
        "left": _LEFT,
        "right": _W - 2,
        "top": _TOP,
    }


def ours_data(result: capacity.PlanResult, sources: dict[str, CardSource]) -> dict[str, Any]:
    """The organization's machines planned alone: their plans, cheapest first, or the
    nearest miss and the misses with what would make each feasible."""
    return {
        "feasible": result.cheapest is not None,
        "plans": [plan_row(plan, sources) for plan in result.plans],
        "nearest_miss": (
            None if result.nearest_miss is None else miss_row(result.nearest_miss, sources)
        ),
        "misses": [miss_row(miss, sources) for miss in result.misses],
    }
