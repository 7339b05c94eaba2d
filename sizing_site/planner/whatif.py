"""The what-if view of a plan: the cheapest plan's candidate (same
cards, engine and TP) at 2x and 0.5x the load and with the next quant down and up, each
sized again by estimator.capacity.plan; the monthly cost of that candidate against the
load for a small chart; and the SLO boundary, the most users (or requests a minute) the
chosen plan's cards serve within the service level.

The quant ladder is the engine's: for engines that load GGUF files the catalog's
(catalog.sizing.candidates.quant_ladder), else the Hugging Face ladder down to the
estimator's floor (catalog.sizing.requests.family_ladder). "Down" is the next rung with
fewer bits a weight, "up" the next with more. A rung the estimator refuses for the model
is reported, not planned.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from django.utils.translation import gettext as _

from catalog import hardware
from catalog.models import LLMModel
from catalog.sizing.candidates import quant_ladder
from catalog.sizing.requests import family_ladder
from estimator import capacity, recommend
from estimator.api import RequestError
from estimator.engines import runs_gguf
from sizing_site.planner.curves import CurveInputs, replica_curve_for
from sizing_site.planner.selectors import Planned

LOAD_FACTORS = (2.0, 0.5)  # the table's rows
CHART_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)  # the chart's points


@dataclass(frozen=True)
class Case:
    """One what-if: its name (load_2x, load_0.5x, quant_down, quant_up), the load (users
    or requests a minute) and quant it was planned at, and the plan or why there is none."""

    case: str
    title: str
    amount: float
    quant: str
    plan: capacity.Plan | None
    miss: capacity.NearMiss | None
    refused: str = ""


@dataclass(frozen=True)
class Point:
    amount: float
    monthly_usd: float | None


@dataclass(frozen=True)
class WhatIf:
    """The chosen plan's what-ifs. axis: "users" or "requests_per_minute" (the load's
    kind); amount: the planned load; boundary: the most of it the chosen plan's cards
    (replicas fixed) serve within the service level."""

    label: str
    engine: str
    quant: str
    tensor_parallel: int
    cards: int
    axis: str
    amount: float
    boundary: int
    cases: tuple[Case, ...]
    points: tuple[Point, ...]


def _amount(load: capacity.Load) -> float:
    return float(load.users if load.users is not None else load.requests_per_minute or 0)


def _scaled(load: capacity.Load, amount: float) -> capacity.Load:
    if load.users is not None:
        return replace(load, users=max(1, round(amount)))
    return replace(load, requests_per_minute=amount)


def _one(
    planned: Planned, candidate: capacity.Candidate, load: capacity.Load
) -> capacity.PlanResult | None:
    try:
        return capacity.plan(
            load=load,
            service=planned.service,
            candidates=[candidate],
            horizon=planned.horizon,
            limit=1,
        )
    except RequestError:
        return None


def boundary(planned: Planned, candidate: capacity.Candidate, cards: int) -> int:
    """The most users (requests a minute, whole) `cards` of `candidate` serve within the
    service level: capacity.plan with the cards as the inventory, bisected (feasibility
    falls as the load grows)."""
    fixed = replace(candidate, cards_available=cards)

    def serves(amount: int) -> bool:
        found = _one(planned, fixed, _scaled(planned.load, amount))
        return found is not None and found.cheapest is not None

    if not serves(1):
        return 0
    low, high = 1, max(2, int(_amount(planned.load)))
    while serves(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if serves(middle):
            low = middle
        else:
            high = middle
    return low


def _ladder(engine: str) -> list[tuple[str, float]]:
    """(quant, bits a weight), least compressed first."""
    if runs_gguf(engine):
        rungs = [(r.name, r.bits_per_weight) for r in quant_ladder()]
        if rungs:
            return rungs
    names = set(family_ladder(engine))
    ladder = recommend.GGUF_LADDER if runs_gguf(engine) else recommend.HF_LADDER
    return [(name, bits) for name, bits in ladder if name in names]


def next_quants(engine: str, quant: str) -> tuple[str | None, str | None]:
    """The next quant down (fewer bits) and up (more bits) from `quant` on the engine's
    ladder; None past either end or for a quant not on it."""
    ladder = _ladder(engine)
    bits = {name.lower(): b for name, b in ladder}
    here = bits.get(quant.lower())
    if here is None:
        return None, None
    down = next((name for name, b in ladder if b < here), None)
    up = next((name for name, b in reversed(ladder) if b > here), None)
    return down, up


def what_if(planned: Planned) -> WhatIf | None:
    """The what-ifs of the cheapest plan; None without one."""
    chosen = planned.result.cheapest
    if chosen is None or planned.model is None or planned.inputs is None:
        return None
    candidate = next(
        c
        for c in planned.candidates.candidates
        if (c.label, c.engine, c.quant, c.tensor_parallel)
        == (chosen.label, chosen.engine, chosen.quant, chosen.tensor_parallel)
    )
    quants = _quant_cases(planned, candidate, planned.model, planned.inputs)
    return WhatIf(
        label=chosen.label,
        engine=chosen.engine,
        quant=chosen.quant,
        tensor_parallel=chosen.tensor_parallel,
        cards=chosen.cards,
        axis="users" if planned.load.users is not None else "requests_per_minute",
        amount=_amount(planned.load),
        boundary=boundary(planned, candidate, chosen.cards),
        cases=(*_load_cases(planned, candidate), *quants),
        points=_chart(planned, candidate),
    )


def _load_cases(planned: Planned, candidate: capacity.Candidate) -> list[Case]:
    """The candidate planned again at each of LOAD_FACTORS x the load."""
    cases = []
    for factor in LOAD_FACTORS:
        load = _scaled(planned.load, _amount(planned.load) * factor)
        found = _one(planned, candidate, load)
        cases.append(
            Case(
                case=f"load_{factor:g}x",
                title=_("%(factor)s× the load") % {"factor": f"{factor:g}"},
                amount=_amount(load),
                quant=candidate.quant,
                plan=found.cheapest if found else None,
                miss=found.nearest_miss if found else None,
            )
        )
    return cases


def _quant_cases(
    planned: Planned, candidate: capacity.Candidate, model: LLMModel, inputs: CurveInputs
) -> list[Case]:
    """The candidate's cards, engine and TP at the next quant down and up (next_quants),
    each with its own replica curve, at the planned load; a rung the estimator refuses
    is reported with its message."""
    amount = _amount(planned.load)
    source = planned.candidates.sources[candidate.label]
    choice = hardware.support_matrix().choice(source.accelerator, candidate.engine)
    down, up = next_quants(candidate.engine, candidate.quant)
    cases = []
    for name, quant, title in (
        ("quant_down", down, _("Next quant down")),
        ("quant_up", up, _("Next quant up")),
    ):
        if quant is None or choice is None:
            continue
        built = replica_curve_for(
            model=model,
            card=source.accelerator,
            choice=choice,
            quant=quant,
            tp=candidate.tensor_parallel,
            inputs=inputs,
        )
        if isinstance(built, RequestError):
            cases.append(Case(name, title, amount, quant, None, None, built.message))
            continue
        resolved, curve = built
        found = _one(planned, replace(candidate, curve=curve, quant=resolved), planned.load)
        refused = "" if found else _("The model does not fit with this quant.")
        cases.append(
            Case(
                name,
                title,
                amount,
                resolved,
                found.cheapest if found else None,
                found.nearest_miss if found else None,
                refused,
            )
        )
    return cases


def _chart(planned: Planned, candidate: capacity.Candidate) -> tuple[Point, ...]:
    """The candidate's monthly cost at each of CHART_FACTORS x the load (None: no plan)."""
    points = []
    for factor in CHART_FACTORS:
        load = _scaled(planned.load, _amount(planned.load) * factor)
        found = _one(planned, candidate, load)
        plan = found.cheapest if found else None
        points.append(Point(_amount(load), plan.monthly_usd if plan else None))
    return tuple(points)
