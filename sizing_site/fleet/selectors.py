"""Reads for the fleet: the organization's machines (always through its Tenant), their
history, and what each machine can run.

"What can our fleet run?" asks, for each machine, the configurator's question of every
explore model (catalog.sizing.candidates.explore_models) at the page's context: the
configurator's setup with `gpus` = the machine's card count under the card's default
engine (catalog.hardware), sized by catalog.sizing.size_setup, the one workflow the
configurator, reports and compare use. Per model:

- quant: the least compressed rung of the page's ladder (down to its quality floor) that
  fits on the machine's cards. Fit grows with compression, so the ladder is bisected:
  about log2(rungs) estimates instead of one per rung;
- max context and max concurrency (sequences of the page's context at once), read off
  that setup;
- decode tok/s per user at that concurrency (capped at the configurator's 4096): the same
  setup sized again with that many sequences.

Each machine's answer is kept in the shared sizing cache (catalog.sizing.cache) per card,
card count, engine, context, ladder and model list, so machines of the same shape share
it, a second visit costs a cache read, and a catalog edit starts afresh. The page loads
machines and models in a fixed number of queries whatever their numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.db.models import QuerySet

from catalog import hardware, sizing
from catalog.models import Accelerator, LLMModel
from catalog.scoping import Owner
from catalog.sizing import Setup, Sizing
from catalog.sizing.cache import remembered
from catalog.sizing.candidates import explore_models, offers_context
from catalog.sizing.requests import family_ladder
from estimator.api import RequestError
from estimator.engines import runs_gguf
from estimator.units import Range
from sizing_site.fleet.models import InventoryMachine
from sizing_site.tenancy.access import Tenant, get_owned_or_404

# The configurator's largest number of concurrent sequences (ConfigureForm.seqs).
MAX_SEQUENCES = 4096

# Machines on a page of the fleet page and its API: each new machine shape sizes every
# catalog model (seconds with a cold cache).
MACHINES_PER_PAGE = 5


# --- the inventory -----------------------------------------------------------------


def machine_list(*, tenant: Tenant) -> QuerySet[InventoryMachine]:
    """The organization's machines, their card and author joined (one query)."""
    return (
        tenant.scoped(InventoryMachine)
        .select_related("accelerator", "created_by")
        .order_by("name", "id")
    )


def machine_get(*, tenant: Tenant, code: object) -> InventoryMachine:
    """One of the organization's machines by its code, else 404."""
    return get_owned_or_404(tenant, InventoryMachine, code)


def machine_card_list(*, organization: Owner | None) -> QuerySet[Accelerator]:
    """The cards a machine may have: those the estimator can size (memory and bandwidth
    known), the public ones plus the organization's own (none without one)."""
    cards = (
        Accelerator.objects.all()
        if organization is None
        else Accelerator.objects.visible_to([organization])
    )
    return cards.filter(memory_gb__gt=0, bandwidth_gbps__gt=0).order_by("vendor", "name")


@dataclass(frozen=True)
class Change:
    field: str  # the field's verbose name
    old: object
    new: object


@dataclass(frozen=True)
class HistoryEntry:
    when: object  # datetime
    who: str
    kind: str  # "+" created, "~" changed, "-" deleted
    changes: list[Change]


def _label(field: str, value: Any) -> Any:
    """A stored choice as its translated label (nvlink: "NVLink"); other values as stored."""
    flat = getattr(InventoryMachine._meta.get_field(field), "flatchoices", None) or ()
    return dict(flat).get(value, value)


def machine_history(*, machine: InventoryMachine) -> list[HistoryEntry]:
    """Who changed what and when, newest first: each record against the one before it
    (django-simple-history); a changed card reads as its name."""
    records = list(
        machine.history.select_related("history_user").order_by("history_date", "history_id")
    )
    names = {f.name: str(f.verbose_name) for f in InventoryMachine._meta.fields}
    entries = []
    previous = None
    for record in records:
        changes: list[Change] = []
        if previous is not None:
            delta = record.diff_against(previous, foreign_keys_are_objs=True)
            changes = [
                Change(names.get(c.field, c.field), _label(c.field, c.old), _label(c.field, c.new))
                for c in delta.changes
            ]
        user = record.history_user
        entries.append(
            HistoryEntry(
                record.history_date,
                user.get_username() if user is not None else "",
                record.history_type,
                changes,
            )
        )
        previous = record
    return entries[::-1]


# --- what the fleet can run ------------------------------------------------------------


@dataclass(frozen=True)
class MachineFit:
    """One model on one machine (plain values: kept in the shared cache)."""

    model_pk: int
    quant: str
    engine: str
    backend: str
    gpus: int
    context_tokens: int
    verdict: str
    max_context_tokens: int
    max_concurrent_sequences: int  # of `context_tokens`, capped at MAX_SEQUENCES
    # Per user at max_concurrent_sequences (None when not even one sequence fits).
    decode_tokens_per_s: Range | None
    aggregate_decode_tokens_per_s: float | None
    calibrated: bool


@dataclass(frozen=True)
class FleetRow:
    model: LLMModel
    fit: MachineFit


@dataclass(frozen=True)
class MachineTable:
    machine: InventoryMachine
    engine: str  # the card's default engine ("" when none runs on it)
    backend: str
    rows: list[FleetRow]  # fitting models matching the search, largest first
    candidates: int  # models sized (the search applied)
    skipped: int  # models whose published context is shorter than the page's


def setup_for(
    choice: hardware.EngineChoice, *, quant: str, context_tokens: int, gpus: int, sequences: int = 1
) -> Setup:
    """The configurator's setup a fleet figure stands for (its defaults otherwise)."""
    return Setup(
        quant=quant,
        context_tokens=context_tokens,
        gpus=gpus,
        sequences=sequences,
        engine=choice.engine,
        backend=choice.backend,
    )


def _ladder(choice: hardware.EngineChoice, quants: Sequence[str]) -> list[str]:
    """The page's GGUF ladder for engines that load GGUF files, else the HF ladder down to
    the estimator's floor (as the explore sweeps climb it)."""
    return list(quants) if runs_gguf(choice.engine) and quants else family_ladder(choice.engine)


def model_on_machine(
    model: LLMModel,
    card: Accelerator,
    *,
    choice: hardware.EngineChoice,
    gpus: int,
    quants: Sequence[str],
    context_tokens: int,
) -> MachineFit | None:
    """The least compressed quant of the ladder that fits on `gpus` cards, its max context
    and concurrency, and the decode speed per user at that concurrency; None when no quant
    fits or the estimator refuses the model at this context."""
    base = setup_for(choice, quant="", context_tokens=context_tokens, gpus=gpus)
    ladder = _ladder(choice, quants)
    sized: dict[int, Sizing | None] = {}

    def at(index: int) -> Sizing | None:
        """The setup at this rung; None for a quant the estimator cannot size for the
        model (MXFP4_MOE needs experts), which the search then leaves out."""
        if index not in sized:
            try:
                setup = replace(base, quant=ladder[index])
                sized[index] = sizing.size_setup(model=model, accelerator=card, setup=setup)
            except (RequestError, ValueError):
                sized[index] = None
        return sized[index]

    # Down the ladder, least compressed first, to the first quant that fits: the ladder is
    # in quality order, not size order (Q5_1 is larger than Q5_K_S, measured files differ
    # from the rule), so fitting is not monotone along it and a bisection could skip the
    # best quant. The explore pages climb it the same way (catalog.sizing.sweeps).
    index = next(
        (i for i in range(len(ladder)) if (found := at(i)) is not None and found.fits), None
    )
    if index is None:
        return None
    best = at(index)
    assert best is not None
    result = best.result
    sequences = min(result.max_concurrent_sequences, MAX_SEQUENCES)
    decode, aggregate = None, None
    if sequences >= 1:
        busy = (
            best
            if sequences == 1
            else _sized(model, card, replace(base, quant=ladder[index], sequences=sequences))
        )
        if busy is not None:
            decode = busy.result.decode_tokens_per_s
            aggregate = busy.result.aggregate_decode_tokens_per_s.estimate
    return MachineFit(
        model_pk=model.pk,
        quant=ladder[index],
        engine=choice.engine,
        backend=best.backend,
        gpus=gpus,
        context_tokens=context_tokens,
        verdict=result.fit.verdict,
        max_context_tokens=result.max_context_tokens,
        max_concurrent_sequences=sequences,
        decode_tokens_per_s=decode,
        aggregate_decode_tokens_per_s=aggregate,
        calibrated=result.speed_calibrated,
    )


def _sized(model: LLMModel, card: Accelerator, setup: Setup) -> Sizing | None:
    try:
        return sizing.size_setup(model=model, accelerator=card, setup=setup)
    except (RequestError, ValueError):
        return None


def _machine_fits(
    card: Accelerator,
    choice: hardware.EngineChoice,
    gpus: int,
    models: Sequence[LLMModel],
    quants: Sequence[str],
    context_tokens: int,
) -> tuple[MachineFit, ...]:
    """Every model that fits on `gpus` cards, cached per card, count, engine, context,
    ladder and model list (catalog data is covered by the cache's catalog version)."""
    parts = (
        card.pk,
        gpus,
        (choice.engine, choice.backend),
        tuple(m.pk for m in models),
        tuple(quants),
        context_tokens,
    )

    def compute() -> tuple[MachineFit, ...]:
        found = (
            model_on_machine(
                m, card, choice=choice, gpus=gpus, quants=quants, context_tokens=context_tokens
            )
            for m in models
        )
        return tuple(fit for fit in found if fit is not None)

    return remembered("fleet-machine", parts, compute)


def fleet_tables(
    *,
    machines: Sequence[InventoryMachine],
    quants: Sequence[str],
    context_tokens: int,
    q: str = "",
    models: Sequence[LLMModel] | None = None,
    organizations: Sequence[Owner] = (),
) -> list[MachineTable]:
    """Each machine with the explore models that fit on its cards (see the module's
    docstring), largest model first; `q` filters models by name or family as the card
    page does. Machines must have their accelerator loaded (machine_list). Without
    `models`, the public ones and `organizations`' own (the tenant's: its rows are
    marked on the page); their keys are part of each machine's cache entry."""
    if models is None:
        models = explore_models(organizations)
    eligible = [m for m in models if offers_context(m, context_tokens)]
    by_pk = {m.pk: m for m in eligible}
    needle = q.casefold()

    def wanted(model: LLMModel) -> bool:
        return not needle or any(needle in t.casefold() for t in (model.name, model.family))

    matrix = hardware.support_matrix()
    tables = []
    for machine in machines:
        card = machine.accelerator
        choice = matrix.default_for(card) if sizing.can_size_accelerator(card) else None
        rows: list[FleetRow] = []
        if choice is not None:
            fits = _machine_fits(card, choice, machine.card_count, eligible, quants, context_tokens)
            rows = [FleetRow(by_pk[f.model_pk], f) for f in fits if wanted(by_pk[f.model_pk])]
            rows.sort(key=lambda r: (-(r.model.params_total or 0), r.model.name.casefold()))
        tables.append(
            MachineTable(
                machine=machine,
                engine=choice.engine if choice else "",
                backend=choice.backend if choice else "",
                rows=rows,
                candidates=sum(1 for m in eligible if wanted(m)),
                skipped=sum(1 for m in models if m.pk not in by_pk and wanted(m)),
            )
        )
    return tables
