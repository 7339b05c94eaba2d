"""The capacity planner's reads: the models it can plan, its candidates, and the plan.

The candidates (docs/capacity.md; the pure planner is estimator.capacity) are each card
source (sizing_site.planner.sources: the organization's machines, cards to buy, cloud
offers) at each tensor-parallel degree, under a few engine and quant pairs the support
matrix allows: the card's default engine with the least-compressed quant that fits, and
vLLM with FP8 and BF16 checkpoints; each with its replica curve
(sizing_site.planner.curves, from the shared sizing cache). The work is bounded: at most
MAX_CANDIDATES candidates, the organization's machines first, then the cheapest cards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils import formats
from django.utils.translation import gettext as _

from catalog import hardware
from catalog.models import Accelerator, LLMModel
from catalog.scoping import Owner
from catalog.sizing.candidates import explore_model
from estimator import capacity
from estimator.api import RequestError
from estimator.engines import runs_gguf
from sizing_site.planner.curves import CurveInputs, replica_curves_for
from sizing_site.planner.sources import (
    INVENTORY,
    CardSource,
    buy_sources,
    cloud_sources,
    inventory_sources,
    source_degrees,
    source_label,
)
from sizing_site.tenancy.access import Tenant

MAX_CANDIDATES = 200  # bounds the estimator calls of a cold plan (~5 ms a curve)
SERVER_ENGINE = "vllm"
SERVER_QUANTS = ("fp8", "bf16")  # vLLM's checkpoints, where vLLM runs on the card
# GGUF quants a llama.cpp-like default engine is also tried at, besides the best that fits:
# a smaller file leaves room for more sequences and decodes faster, which can make a plan
# cheaper than the least compressed quant does (the worked example: Q4_K_M).
GGUF_QUANTS = ("Q8_0", "Q4_K_M")


@dataclass(frozen=True)
class LeftOut:
    """A candidate the planner did not plan, and why: LIMIT (past MAX_CANDIDATES, the
    dearest cards go first) or REFUSED (the estimator cannot size it: `message`)."""

    label: str
    engine: str
    quant: str
    tensor_parallel: int
    reason: str
    message: str = ""


LIMIT = "limit"
REFUSED = "refused"


@dataclass(frozen=True)
class CandidateSet:
    """The planner's candidates and where each comes from (by label). considered: the
    candidates built (<= MAX_CANDIDATES); left_out: those past the bound; refused: the
    estimator's first refusal (field, message) among the candidates it could not size;
    left_out_candidates: each candidate past the bound or refused, and why."""

    candidates: tuple[capacity.Candidate, ...]
    sources: dict[str, CardSource]
    considered: int
    left_out: int
    refused: tuple[str, str] | None
    left_out_candidates: tuple[LeftOut, ...] = ()


def planner_model(*, slug: str, organizations: Sequence[Owner] = ()) -> LLMModel:
    """A model the planner can size (a config.json, measured sizes prefetched), public or
    one of `organizations`' own (the tenant's); raises LLMModel.DoesNotExist."""
    return explore_model(slug=slug, organizations=organizations)


def planner_model_choices(organizations: Sequence[Owner] = ()) -> list[tuple[str, str]]:
    """(slug, name) of every model with a config.json, by name: the form's choices; the
    public catalog and `organizations`' own models."""
    models = LLMModel.objects.visible_to(organizations).exclude(config={})
    return list(models.order_by("name").values_list("slug", "name"))


def engine_pairs(
    card: Accelerator, matrix: hardware.SupportMatrix
) -> list[tuple[hardware.EngineChoice, str]]:
    """The (engine, quant) pairs tried on a card: its default engine with the best quant
    that fits ("", resolved by workflows.default_quant) and, for a GGUF engine, at Q8_0 and
    Q4_K_M too; then vLLM FP8 and BF16 where vLLM runs on it (the default pair is left out
    when the default engine is vLLM itself)."""
    pairs: list[tuple[hardware.EngineChoice, str]] = []
    default = matrix.default_for(card)
    if default is not None and default.engine != SERVER_ENGINE:
        pairs.append((default, ""))
        if runs_gguf(default.engine):
            pairs.extend((default, quant) for quant in GGUF_QUANTS)
    server = matrix.choice(card, SERVER_ENGINE)
    if server is not None:
        pairs.extend((server, quant) for quant in SERVER_QUANTS)
    return pairs


def candidate_set(
    *,
    model: LLMModel,
    tenant: Tenant,
    inputs: CurveInputs,
    horizon: capacity.Horizon | None = None,
    limit: int = MAX_CANDIDATES,
    allow_consumer: bool = False,
) -> CandidateSet:
    """Every candidate for `model` the tenant's organization has: each (source, TP) of
    source_degrees under each engine pair, up to `limit` candidates. A pair the estimator
    refuses is left out."""
    wanted = _wanted(tenant=tenant, horizon=horizon, allow_consumer=allow_consumer)
    kept, left_out = wanted[:limit], max(0, len(wanted) - limit)
    dropped = [
        LeftOut(source_label(source), choice.engine, quant or "", tp, LIMIT)
        for source, choice, quant, tp in wanted[limit:]
    ]
    candidates: list[capacity.Candidate] = []
    by_label: dict[str, CardSource] = {}
    refused: tuple[str, str] | None = None
    seen: set[tuple[str, str, str, int]] = set()
    curves = replica_curves_for(
        model=model,
        wanted=[(source.accelerator, choice, quant, tp) for source, choice, quant, tp in kept],
        inputs=inputs,
    )
    for (source, choice, quant, tp), built in zip(kept, curves, strict=True):
        if isinstance(built, RequestError):
            refused = refused or (built.field, built.message)
            dropped.append(
                LeftOut(source_label(source), choice.engine, quant, tp, REFUSED, built.message)
            )
            continue
        resolved, curve = built
        candidate = _candidate(source, choice.engine, tp, resolved, curve)
        key = (candidate.label, candidate.engine, candidate.quant, tp)
        if key in seen:  # "" resolved to a quant tried anyway
            continue
        seen.add(key)
        by_label[candidate.label] = source
        candidates.append(candidate)
    return CandidateSet(
        tuple(candidates), by_label, len(candidates), left_out, refused, tuple(dropped)
    )


def _wanted(
    *, tenant: Tenant, horizon: capacity.Horizon | None, allow_consumer: bool
) -> list[tuple[CardSource, hardware.EngineChoice, str, int]]:
    """Each (source, engine choice, quant, TP) the tenant's organization could plan with,
    in the order source_degrees keeps them, each source under each engine pair."""
    matrix = hardware.support_matrix()
    degrees = source_degrees(
        cloud_sources(organization=tenant.organization, allow_consumer=allow_consumer),
        buy_sources(allow_consumer=allow_consumer),
        inventory_sources(tenant=tenant, horizon=horizon or capacity.Horizon()),
    )
    return [
        (source, choice, quant, tp)
        for source, tp in degrees
        for choice, quant in engine_pairs(source.accelerator, matrix)
    ]


def _candidate(
    source: CardSource, engine: str, tp: int, quant: str, curve: capacity.ReplicaCurve
) -> capacity.Candidate:
    """The planner's candidate of `tp` cards of `source` under `engine` at `quant`: its
    label (source_label), curve and the source's prices, power and inventory."""
    return capacity.Candidate(
        label=source_label(source),
        curve=curve,
        engine=engine,
        quant=quant,
        tensor_parallel=tp,
        cards_available=source.cards_available,
        rent_usd_per_card_hour=source.rent_usd_per_card_hour,
        purchase_usd_per_card=source.purchase_usd_per_card,
        power_w_per_card=source.power_w_per_card,
        electricity_usd_per_kwh=source.electricity_usd_per_kwh,
        host_included=source.host_included,
        cards_per_host=source.cards_per_host,
    )


# Where a capacity.RequestError's field lands on the planner's form (and in the API).
FORM_FIELDS = {
    "load.users": "users",
    "load.requests_per_minute": "requests_per_minute",
    "load.think_s": "think_s",
    "load.prompt_tokens": "prompt_tokens",
    "load.output_tokens": "output_tokens",
    "load.long_prompt_tokens": "long_prompt_tokens",
    "load.long_output_tokens": "long_output_tokens",
    "load.long_share": "long_share_percent",
    "service.ttft_p95_s": "ttft_p95_s",
    "service.tokens_per_s_per_user": "tokens_per_s_per_user",
    "service.spare_replicas": "n_plus_one",
    "service.tpot_p95_ms": "tpot_p95_ms",
    "serving.cached_prompt_share": "prompt_cache_percent",
    "candidates": "model",
    "workload.context_tokens": "context_tokens",
    "workload.prompt_tokens": "prompt_tokens",
    "workload.output_tokens": "output_tokens",
    "model.hf_config": "model",
}


def form_field(field: str) -> str:
    """The form field a planner or estimator field stands for (unknown: the field itself)."""
    return FORM_FIELDS.get(field, field)


@dataclass(frozen=True)
class Planned:
    """One plan: the inputs as the planner took them, the candidates and the result;
    `ours`: the plan over the organization's machines alone (None without any, or when
    the model fits on none of them), so the answer says what each could do or why not."""

    load: capacity.Load
    service: capacity.ServiceLevel
    horizon: capacity.Horizon
    candidates: CandidateSet
    result: capacity.PlanResult
    ours: capacity.PlanResult | None = None
    model: LLMModel | None = None
    inputs: CurveInputs | None = None


def planned(
    *,
    model: LLMModel,
    tenant: Tenant,
    inputs: CurveInputs,
    load: capacity.Load,
    service: capacity.ServiceLevel,
    horizon: capacity.Horizon,
    limit: int = 10,
    allow_consumer: bool = False,
) -> Planned:
    """Plan `load` at `service` over the tenant's organization's candidates for `model` (the page
    and the API both call this). Raises RequestError naming the planner's field; a model
    no candidate can size raises it under `candidates` (or the estimator's own field)."""
    found = candidate_set(
        model=model, tenant=tenant, inputs=inputs, horizon=horizon, allow_consumer=allow_consumer
    )
    if not found.candidates:
        field, message = found.refused or ("candidates", _("No card to plan with."))
        if field.startswith(("device.", "engine.", "weights.", "quant")):
            field, message = "candidates", _("The model fits on none of the candidates.")
        raise RequestError(field, message)
    result = capacity.plan(
        load=load, service=service, candidates=found.candidates, horizon=horizon, limit=limit
    )
    owned = [c for c in found.candidates if found.sources[c.label].kind == INVENTORY]
    ours = None
    if owned:
        try:
            ours = capacity.plan(
                load=load, service=service, candidates=owned, horizon=horizon, limit=limit
            )
        except RequestError:  # the model fits on none of the machines
            ours = None
    return Planned(load, service, horizon, found, result, ours, model, inputs)


def impossible_service(planned: Planned) -> dict[str, str]:
    """The service-level fields no candidate can meet even without load, by form field,
    each with the best any candidate achieves: a TTFT p95 below every candidate's no-load
    TTFT, or a per-user speed above every candidate's speed for one user alone. Empty when
    a plan was found or the miss is one of load (more cards or replicas would do)."""
    if planned.result.cheapest is not None:
        return {}
    fitting = [c.curve for c in planned.candidates.candidates if c.curve.max_sequences > 0]
    if not fitting:
        return {}
    wrong: dict[str, str] = {}
    fastest_first_token = min(curve.ttft_s for curve in fitting)
    if planned.service.ttft_p95_s < fastest_first_token:
        wrong[form_field("service.ttft_p95_s")] = _(
            "No candidate answers that fast even without load: the best time to first "
            "token is %(best)s s."
        ) % {"best": _significant(fastest_first_token)}
    fastest_user = max(curve.points[0][1] for curve in fitting)
    if planned.service.tokens_per_s_per_user > fastest_user:
        wrong[form_field("service.tokens_per_s_per_user")] = _(
            "No candidate decodes that fast even for one user alone: the best is %(best)s tokens/s."
        ) % {"best": _significant(fastest_user)}
    return wrong


def _significant(value: float) -> str:
    """A figure in a message: three significant digits, in the active language's number
    format (0.0946 s; 28.3 tokens/s; 1,230 in English, 1.230 in German)."""
    rounded = float(f"{value:.3g}")
    return formats.number_format(int(rounded) if rounded >= 100 else rounded, use_l10n=True)
