"""The capacity planner's candidates, from catalog rows and the prices an organization sees.

Three sources of cards (docs/capacity.md; the pure planner is estimator.capacity):

- the organization's inventory (sizing_site.fleet.selectors.machine_list, through its
  Tenant): each machine's cards, at most `card_count`, the purchase sunk, so owning costs
  only its power (effective_power_w a card, at the machine's own electricity price,
  capacity.Candidate.electricity_usd_per_kwh, the horizon's when it has none); a machine
  with an internal hourly rate is rented at that rate over its cards instead;
- cards to buy: curated catalog accelerators with a purchase price (not a base
  configuration's, catalog.hardware.base_configuration_price) and their TDP;
- cloud offers the organization may see: public ones plus its negotiated feeds
  (pricing.selectors.offer_list), USD on demand, a card's share of the instance's price.

Each is tried at tensor-parallel degrees 1, 2, 4 and 8 (a cloud offer up to its GPU count)
under a few engine and quant pairs the support matrix allows: the card's default engine
with the least-compressed quant that fits, and vLLM with FP8 and BF16 checkpoints. The
estimator requests are the configurator's (catalog.sizing.Setup, sizing_request,
workflows.default_quant); each replica curve is kept in the shared sizing cache, so a
second plan of the same model and workload reads them instead of calling the estimator.
The work is bounded: at most MAX_CANDIDATES candidates, the organization's machines first,
then the cheapest cards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import zip_longest
from typing import Any

from django.utils import formats
from django.utils.translation import gettext as _

from catalog import hardware
from catalog.models import Accelerator, LLMModel, Segment
from catalog.scoping import Owner
from catalog.sizing import Setup, can_size_accelerator, measured_weights, sizing_request
from catalog.sizing.cache import remembered, remembered_many
from catalog.sizing.candidates import explore_model
from catalog.sizing.requests import llama_like
from catalog.sizing.workflows import default_quant
from estimator import capacity
from estimator.api import RequestError, request_to_dict
from pricing.selectors import offer_list
from sizing_site.fleet.selectors import machine_list
from sizing_site.tenancy.access import Tenant

MAX_CANDIDATES = 200  # bounds the estimator calls of a cold plan (~5 ms a curve)
TENSOR_PARALLEL = (1, 2, 4, 8)
BUY_MAX_CARDS = 8  # cards to buy: one host of up to 8
SERVER_ENGINE = "vllm"
SERVER_QUANTS = ("fp8", "bf16")  # vLLM's checkpoints, where vLLM runs on the card
# GGUF quants a llama.cpp-like default engine is also tried at, besides the best that fits:
# a smaller file leaves room for more sequences and decodes faster, which can make a plan
# cheaper than the least compressed quant does (the worked example: Q4_K_M).
GGUF_QUANTS = ("Q8_0", "Q4_K_M")
# A bought card's hourly figure for ordering the sources only (3 years of 730 h).
_ORDER_HOURS = 36 * 730
BUY = "buy"
CLOUD = "cloud"
INVENTORY = "inventory"


@dataclass(frozen=True)
class CurveInputs:
    """What shapes a replica curve besides the model, card, engine, quant and TP."""

    context_tokens: int
    prompt_tokens: int
    output_tokens: int
    long_prompt_tokens: int | None = None  # the long case's prompt (its TTFT and prefill)
    conservative: bool = False  # the estimator's low speeds and high TTFTs
    cached_prompt_share: float = 0.0  # of every prompt, from the engine's prefix cache


@dataclass(frozen=True)
class CardSource:
    """Where the cards of a candidate come from: bought (a catalog price), rented (one
    cloud offer; `negotiated` when it is the organization's own feed price) or one of the
    organization's machines (INVENTORY: `cards_available` cards, `machine` its code,
    `internal_rate` when priced at its internal hourly rate)."""

    kind: str  # BUY, CLOUD or INVENTORY
    accelerator: Accelerator
    max_cards: int
    label: str
    rent_usd_per_card_hour: float | None = None
    purchase_usd_per_card: float | None = None
    power_w_per_card: float | None = None
    electricity_usd_per_kwh: float | None = None
    provider: str = ""
    sku: str = ""
    region: str = ""
    negotiated: bool = False
    cards_available: int | None = None
    machine: str = ""
    internal_rate: bool = False
    host_included: bool = False  # an SXM / OAM module's share of its server
    cards_per_host: int | None = None  # the modules of that server (catalog server_modules)
    offer_gpus: int | None = None  # CLOUD: the GPUs of the offer's instance

    @property
    def hourly_order(self) -> float:
        """Per card and hour, for ordering only: the rent, or the price over 3 years."""
        if self.rent_usd_per_card_hour is not None:
            return self.rent_usd_per_card_hour
        return (self.purchase_usd_per_card or 0.0) / _ORDER_HOURS


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


def _plannable(card: Accelerator) -> bool:
    """The estimator sizes it and has a prefill rate for TTFT (capacity.replica_curve)."""
    return can_size_accelerator(card) and bool(card.fp16_tflops)


def production_card(card: Accelerator, *, allow_consumer: bool = False) -> bool:
    """Whether a card may be planned for production: consumer cards (GeForce, Radeon RX)
    only when the user allows them (NVIDIA's GeForce driver licence excludes datacenter
    deployment; they have no ECC and no server chassis)."""
    return allow_consumer or card.segment != Segment.CONSUMER


def _cards_per_host(card: Accelerator, unit: hardware.OwnedUnit) -> int | None:
    """The devices one bought machine holds beyond the per-replica host: a server's modules,
    1 for a whole computer (unified memory), None for cards (one host per replica)."""
    if unit.basis == "server":
        return card.server_modules or None
    return 1 if unit.basis == "system" else None


def buy_sources(*, allow_consumer: bool = False) -> list[CardSource]:
    """Curated cards with a purchase price of the configuration they describe; consumer
    cards only when allowed (production_card)."""
    cards = Accelerator.objects.filter(curated=True, price_usd__gt=0).order_by("price_usd", "slug")
    sources = []
    for card in cards:
        unit = hardware.owned_unit(card)  # SXM / OAM: a share of its server, host included
        if (
            unit.price_usd is None
            or not _plannable(card)
            or hardware.base_configuration_price(card)
            or not production_card(card, allow_consumer=allow_consumer)
        ):
            continue
        sources.append(
            CardSource(
                kind=BUY,
                accelerator=card,
                max_cards=BUY_MAX_CARDS,
                label=card.name,
                purchase_usd_per_card=float(unit.price_usd),
                power_w_per_card=float(unit.power_w) if unit.power_w else None,
                host_included=not unit.host,
                cards_per_host=_cards_per_host(card, unit),
            )
        )
    return sources


def inventory_sources(*, tenant: Tenant, horizon: capacity.Horizon) -> list[CardSource]:
    """The organization's machines with a card the planner can size. Owned: the purchase
    is sunk (capacity.Candidate without a purchase price), its power a card is the
    machine's effective_power_w over its cards, priced at the machine's own electricity
    price (None: the horizon's). With an internal hourly rate: that rate over its cards,
    rented, and no power. `horizon` is kept for the callers; the price no longer scales
    the power."""
    sources = []
    for machine in machine_list(tenant=tenant):
        card = machine.accelerator
        if not _plannable(card):
            continue
        rent = power = electricity = None
        internal = machine.internal_usd_per_hour is not None
        if internal:
            rent = float(machine.internal_usd_per_hour or 0) / machine.card_count
        elif machine.effective_power_w:
            power = machine.effective_power_w / machine.card_count
            if machine.electricity_usd_per_kwh is not None:
                electricity = float(machine.electricity_usd_per_kwh)
        sources.append(
            CardSource(
                kind=INVENTORY,
                accelerator=card,
                max_cards=machine.card_count,
                label=machine.name,
                rent_usd_per_card_hour=rent,
                power_w_per_card=power,
                electricity_usd_per_kwh=electricity,
                cards_available=machine.card_count,
                machine=str(machine.code),
                internal_rate=internal,
            )
        )
    return sources


def cloud_sources(*, organization: Owner, allow_consumer: bool = False) -> list[CardSource]:
    """The organization's visible offers with a USD on-demand price and a catalog card, as
    the prices page lists them (public plus its negotiated feeds); consumer cards only
    when allowed (production_card)."""
    offers = offer_list(organizations=[organization]).filter(
        accelerator__isnull=False, on_demand_per_hour__gt=0, currency="USD"
    )
    sources = []
    for offer in offers:
        card = offer.accelerator
        if card is None or not _plannable(card):
            continue
        if not production_card(card, allow_consumer=allow_consumer):
            continue
        sources.append(
            CardSource(
                kind=CLOUD,
                accelerator=card,
                max_cards=offer.gpu_count,
                label=" ".join(
                    part for part in (offer.provider.name, offer.sku, offer.region) if part
                ),
                rent_usd_per_card_hour=float(offer.on_demand_per_hour or 0) / offer.gpu_count,
                provider=offer.provider.name,
                sku=offer.sku,
                region=offer.region,
                negotiated=offer.organization_id is not None,
                offer_gpus=offer.gpu_count,
            )
        )
    return sources


def source_degrees(
    cloud: Sequence[CardSource], buy: Sequence[CardSource], ours: Sequence[CardSource] = ()
) -> list[tuple[CardSource, int]]:
    """(source, TP) in the order the bound keeps them: the organization's machines first
    (each at every TP its cards allow), its negotiated offers next, then cloud offers and
    cards to buy in turn, each by its price per card. Of the cloud offers of one card, each
    TP takes the cheapest per card whose instance has that many GPUs (public and
    negotiated apart)."""
    cheapest: dict[tuple[int, bool, int], CardSource] = {}
    for source in sorted(cloud, key=lambda s: (s.hourly_order, s.label)):
        for tp in TENSOR_PARALLEL:
            if tp <= source.max_cards:
                cheapest.setdefault((source.accelerator.pk, source.negotiated, tp), source)
    rented = sorted(
        ((source, tp) for (_, _, tp), source in cheapest.items()),
        key=lambda pair: (not pair[0].negotiated, pair[0].hourly_order, pair[1], pair[0].label),
    )
    negotiated = [pair for pair in rented if pair[0].negotiated]
    public = [pair for pair in rented if not pair[0].negotiated]
    bought = [
        (source, tp)
        for source in sorted(buy, key=lambda s: (s.hourly_order, s.label))
        for tp in TENSOR_PARALLEL
        if tp <= source.max_cards
    ]
    turns = [pair for both in zip_longest(public, bought) for pair in both if pair is not None]
    owned = [(source, tp) for source in ours for tp in TENSOR_PARALLEL if tp <= source.max_cards]
    return owned + negotiated + turns


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
        if llama_like(default.engine):
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
    matrix = hardware.support_matrix()
    wanted: list[tuple[CardSource, hardware.EngineChoice, str, int]] = []
    degrees = source_degrees(
        cloud_sources(organization=tenant.organization, allow_consumer=allow_consumer),
        buy_sources(allow_consumer=allow_consumer),
        inventory_sources(tenant=tenant, horizon=horizon or capacity.Horizon()),
    )
    for source, tp in degrees:
        wanted.extend(
            (source, choice, quant, tp)
            for choice, quant in engine_pairs(source.accelerator, matrix)
        )
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
        label = source_label(source)
        if (label, choice.engine, resolved, tp) in seen:  # "" resolved to a quant tried anyway
            continue
        seen.add((label, choice.engine, resolved, tp))
        by_label[label] = source
        candidates.append(
            capacity.Candidate(
                label=label,
                curve=curve,
                engine=choice.engine,
                quant=resolved,
                tensor_parallel=tp,
                cards_available=source.cards_available,
                rent_usd_per_card_hour=source.rent_usd_per_card_hour,
                purchase_usd_per_card=source.purchase_usd_per_card,
                power_w_per_card=source.power_w_per_card,
                electricity_usd_per_kwh=source.electricity_usd_per_kwh,
                host_included=source.host_included,
                cards_per_host=source.cards_per_host,
            )
        )
    return CandidateSet(
        tuple(candidates), by_label, len(candidates), left_out, refused, tuple(dropped)
    )


def source_label(source: CardSource) -> str:
    """A candidate's label: says whether the cards are bought, rented (and negotiated) or
    the organization's own (and priced at its internal rate)."""
    if source.kind == INVENTORY:
        if source.internal_rate:
            return _("%(name)s (ours, internal rate)") % {"name": source.label}
        return _("%(name)s (ours)") % {"name": source.label}
    if source.kind == BUY:
        return _("%(card)s (buy)") % {"card": source.accelerator.name}
    names = {"card": source.accelerator.name, "offer": source.label}
    if source.negotiated:
        return _("%(card)s: %(offer)s (negotiated)") % names
    return _("%(card)s: %(offer)s") % names


# A cached curve: (quant, points, max_sequences, prefill tok/s, no-load TTFT, the two at
# the long prompt or None, whether the points carry the prefill), or the estimator's
# refusal (field, message). The cache key's prefix names this layout ("-v2").
_Cached = tuple[Any, ...]
CURVE_CACHE = "planner-curve-v2"


def _curve_parts(
    *,
    model: LLMModel,
    card: Accelerator,
    choice: hardware.EngineChoice,
    quant: str,
    tp: int,
    inputs: CurveInputs,
) -> tuple[object, ...]:
    """What a replica curve is computed from besides catalog data: its cache key's parts
    (the catalog version is in the key)."""
    return (
        model.pk,
        card.pk,
        choice.engine,
        choice.backend,
        quant,
        tp,
        inputs.context_tokens,
        inputs.prompt_tokens,
        inputs.output_tokens,
        inputs.long_prompt_tokens,
        inputs.conservative,
        inputs.cached_prompt_share,
    )


def _from_cached(cached: _Cached) -> tuple[str, capacity.ReplicaCurve] | RequestError:
    if cached[0] is None:
        return RequestError(cached[1], cached[2])
    resolved, points, max_sequences, prefill, ttft, long_prefill, long_ttft, in_steps = cached
    curve = capacity.ReplicaCurve(
        points=points,
        max_sequences=max_sequences,
        prefill_tokens_per_s=prefill,
        ttft_s=ttft,
        long_prefill_tokens_per_s=long_prefill,
        long_ttft_s=long_ttft,
        prefill_in_steps=in_steps,
    )
    return resolved, curve


def replica_curve_for(
    *,
    model: LLMModel,
    card: Accelerator,
    choice: hardware.EngineChoice,
    quant: str,
    tp: int,
    inputs: CurveInputs,
) -> tuple[str, capacity.ReplicaCurve] | RequestError:
    """The resolved quant and the replica curve of `tp` boards of `card` under `choice`
    (quant "": the least-compressed that fits, as the configurator picks it), from the
    shared sizing cache (kept per catalog version, model, card, engine, quant, TP and
    workload); or the estimator's refusal."""
    parts = _curve_parts(model=model, card=card, choice=choice, quant=quant, tp=tp, inputs=inputs)
    cached: _Cached = remembered(
        CURVE_CACHE,
        parts,
        lambda: _curve(model=model, card=card, choice=choice, quant=quant, tp=tp, inputs=inputs),
    )
    return _from_cached(cached)


def replica_curves_for(
    *,
    model: LLMModel,
    wanted: Sequence[tuple[Accelerator, hardware.EngineChoice, str, int]],
    inputs: CurveInputs,
) -> list[tuple[str, capacity.ReplicaCurve] | RequestError]:
    """replica_curve_for for each (card, engine choice, quant, TP) of `wanted`, in order,
    with one cache read for all of them (remembered_many)."""
    by_parts = {
        _curve_parts(model=model, card=card, choice=choice, quant=quant, tp=tp, inputs=inputs): (
            card,
            choice,
            quant,
            tp,
        )
        for card, choice, quant, tp in wanted
    }

    def compute(parts: tuple[object, ...]) -> _Cached:
        card, choice, quant, tp = by_parts[parts]
        return _curve(model=model, card=card, choice=choice, quant=quant, tp=tp, inputs=inputs)

    parts_list = [
        _curve_parts(model=model, card=card, choice=choice, quant=quant, tp=tp, inputs=inputs)
        for card, choice, quant, tp in wanted
    ]
    return [_from_cached(c) for c in remembered_many(CURVE_CACHE, parts_list, compute)]


def _curve(
    *,
    model: LLMModel,
    card: Accelerator,
    choice: hardware.EngineChoice,
    quant: str,
    tp: int,
    inputs: CurveInputs,
) -> _Cached:
    """The uncached curve, as plain values that pickle."""
    setup = Setup(
        quant=quant,
        context_tokens=inputs.context_tokens,
        gpus=tp,
        engine=choice.engine,
        backend=choice.backend,
        prompt_tokens=inputs.prompt_tokens,
        output_tokens=inputs.output_tokens,
    )
    try:
        if not quant:
            setup = replace(setup, quant=default_quant(model=model, accelerator=card, setup=setup))
        request = sizing_request(
            model=model, accelerator=card, setup=setup, measured=measured_weights(model)
        )
        curve = capacity.replica_curve(
            request_to_dict(request),
            long_prompt_tokens=inputs.long_prompt_tokens,
            conservative=inputs.conservative,
            cached_prompt_share=inputs.cached_prompt_share,
        )
    except RequestError as exc:
        return (None, exc.field, exc.message)
    except ValueError as exc:  # a quant the estimator cannot size for this model
        return (None, "quant", str(exc))
    return (
        setup.quant,
        curve.points,
        curve.max_sequences,
        curve.prefill_tokens_per_s,
        curve.ttft_s,
        curve.long_prefill_tokens_per_s,
        curve.long_ttft_s,
        curve.prefill_in_steps,
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
