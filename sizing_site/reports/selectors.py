"""Reads for saved configurations: lists, the frozen report, today's recompute and the
changes between them, share links and the activity log. Tenant rows only through a Tenant.
Snapshots are read and written as reports.snapshots.ConfigurationSnapshot."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from catalog.models import Accelerator, LLMModel
from estimator.api import request_to_dict
from sizing_site.configurator.rent_forms import RentBuyForm
from sizing_site.configurator.selectors import Answer
from sizing_site.configurator.state import ConfiguratorState, StateError, state_answer
from sizing_site.explore import compare as explore_compare
from sizing_site.reports.models import ActivityEntry, SavedConfiguration, ShareLink
from sizing_site.reports.snapshots import (
    AcceleratorFacts,
    ConfigurationSnapshot,
    CostFacts,
    ModelFacts,
    OwnedHardware,
    OwnRows,
    RentedOffer,
)
from sizing_site.sharing.selectors import live_links_q, share_link_resolve
from sizing_site.tenancy.access import Tenant

SORTS = {
    "new": "-created",
    "old": "created",
    "name": "name",
    "-name": "-name",
}
# The figures a report compares, as paths into the estimator result (estimator.md).
FIGURES = (
    "weights_bytes",
    "kv_cache_bytes",
    "overhead_bytes",
    "offloaded_bytes",
    "total_bytes",
    "per_device_bytes",
    "usable_bytes_per_device",
    "fit.utilisation",
    "decode_tokens_per_s.estimate",
    "aggregate_decode_tokens_per_s.estimate",
    "prefill_tokens_per_s.estimate",
    "ttft_s.estimate",
    "max_context_tokens",
    "max_concurrent_sequences",
)


def saved_configuration_list(
    *, tenant: Tenant, mine_of: Any = None, search: str = "", sort: str = "new"
) -> QuerySet[SavedConfiguration]:
    """One query, whatever the number of rows (created_by joined)."""
    rows = tenant.scoped(SavedConfiguration).select_related("created_by")
    if mine_of is not None:
        rows = rows.filter(created_by=mine_of)
    if search:
        rows = rows.filter(
            Q(name__icontains=search) | Q(notes__icontains=search) | Q(tags__icontains=search)
        )
    return rows.order_by(SORTS.get(sort, "-created"), "-id")


def saved_configurations_by_codes(*, tenant: Tenant, codes: list[str]) -> list[SavedConfiguration]:
    """2-4 configurations by code, in the order given; unknown codes are 404."""
    try:
        rows = {str(r.code): r for r in tenant.scoped(SavedConfiguration).filter(code__in=codes)}
    except Exception as exc:  # malformed UUIDs: same answer as an unknown one
        raise Http404 from exc
    if len(rows) != len(set(codes)):
        raise Http404
    return [rows[c] for c in dict.fromkeys(codes)]


@dataclass(frozen=True)
class Frozen:
    """A configurator state sized now, as a saved configuration keeps it."""

    estimator_request: dict[str, Any]  # what the estimator ran (estimator.api.request_to_dict)
    snapshot: ConfigurationSnapshot  # the figures and the catalog rows they came from
    query: dict[str, str]  # the state's parameters, with the quant it sized


def configuration_snapshot(
    *, state: ConfiguratorState, data: Mapping[str, Any] | None = None
) -> Frozen:
    """The state as the configurator sized it (configurator.state.configuration_size), as
    JSON: the result as every page shows it (no speed when it does not fit), and the
    answer panel's cost at the rent-or-buy figures in `data` (configuration_cost; the
    configurator's query as sent, None: the catalog's defaults). The saved query keeps
    those figures beside the setup, so a recompute prices it the same way."""
    model, accelerator = state.model, state.accelerator
    results = state.results
    sized = results.sized
    snapshot = ConfigurationSnapshot(
        result=state.shown_result(),
        usable_bytes=results.usable_bytes,
        backend=sized.backend,
        setup=asdict(sized.setup),
        model=ModelFacts(
            name=model.name,
            slug=model.slug,
            hf_repo=model.hf_repo,
            params_total=model.params_total,
            params_active=model.params_active,
            config_hash=_config_hash(model.config),
        ),
        accelerator=AcceleratorFacts(
            name=str(accelerator),
            slug=accelerator.slug,
            **{
                f.name: getattr(accelerator, f.name)
                for f in fields(AcceleratorFacts)
                if f.name not in ("name", "slug")
            },
        ),
        measured_weights_bytes=sized.measured_weights_bytes,
        # Rows the organisation added for itself, marked as its own on the report.
        own=OwnRows(
            model=model.organization_id is not None,
            accelerator=accelerator.organization_id is not None,
        ),
        computed_at=timezone.now(),
        cost=configuration_cost(state=state, data=data or {}),
    )
    rent = {k: str(v) for k, v in (data or {}).items() if k in RentBuyForm.base_fields}
    return Frozen(request_to_dict(sized.request), snapshot, state.sized_query | rent)


def configuration_cost(*, state: ConfiguratorState, data: Mapping[str, Any]) -> CostFacts | None:
    """The answer panel's cost per 1M output tokens for `state` (configurator.state.
    state_answer at the rent-or-buy form of `data`, one query for the cheapest offer), with
    its basis; None when nothing is priced (no offer and no price, or it does not fit)."""
    rent = RentBuyForm.for_card(data, accelerator=state.accelerator, gpus=state.setup.gpus)
    try:
        answer = state_answer(state=state, rent=rent, analysis=False).answer
    except StateError:
        return None
    setup = state.setup
    return cost_facts(answer, sequences=setup.sequences, unit=rent.owned_basis, gpus=setup.gpus)


def cost_facts(answer: Answer, *, sequences: int, unit: str, gpus: int) -> CostFacts | None:
    """The panel's figures as stored: the rented offer (when the cost is the cloud's) and
    the owner's assumptions (when there are any)."""
    if answer.per_million is None:
        return None
    rented = None
    if answer.from_cloud and answer.cloud is not None:
        c = answer.cloud
        checked = c.offer.checked_at
        rented = RentedOffer(
            provider=c.offer.provider.name,
            instance=c.offer.sku,
            usd_per_hour=c.per_hour,
            instance_usd_per_hour=c.instance_per_hour,
            gpus=c.gpus,
            offer_gpus=c.offer_gpus,
            checked_at=checked.isoformat() if checked else None,
        )
    owned = None
    if (o := answer.ownership) is not None:
        owned = OwnedHardware(
            purchase_usd=o.purchase_usd,
            power_w=o.power_w,
            years=(o.amortization_months or 12) / 12,
            utilization=o.utilization,
            usd_per_kwh=o.electricity_usd_per_kwh,
            pue=o.pue,
            unit=unit,
            gpus=gpus,
            typed_price=answer.typed_price,
            base_price=answer.base_price,
        )
    return CostFacts(
        usd_per_million=answer.per_million,
        basis="rented" if rented is not None else "owned",
        sequences=sequences,
        rented=rented,
        owned=owned,
        owned_usd_per_million=answer.owned_per_million,
        serving_usd_per_million=answer.serving_per_million,
        serving_users=answer.serving_users,
    )


def configuration_export(*, configuration: SavedConfiguration) -> dict[str, Any]:
    """A saved configuration as JSON types: the page's JSON export and the API's answer
    (sizing_site.reports.api) share it."""
    c = configuration
    return {
        "code": str(c.code),
        "name": c.name,
        "notes": c.notes,
        "tags": c.tags,
        "saved_by": c.created_by.get_username() if c.created_by else None,
        "saved_at": c.created.isoformat(),
        "query": c.query,
        "estimator_request": c.estimator_request,
        "snapshot": c.frozen.to_json(),
    }


def _config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def figure(result: dict[str, Any], path: str) -> float | None:
    value: Any = result
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, (int, float)) else None


def configuration_changes(
    *, configuration: SavedConfiguration, state: ConfiguratorState | None
) -> tuple[ConfigurationSnapshot | None, list[dict[str, Any]]]:
    """Today's snapshot of the saved configuration, whose saved parameters stand for
    `state` sized today (None: they no longer stand for a state that can be sized), and,
    for each report figure, the saved value, today's, and the change in percent; (None,
    []) when it cannot be sized any more."""
    if state is None:
        return None, []
    today = configuration_snapshot(state=state, data=configuration.query).snapshot
    rows = []
    for path in FIGURES:
        old = figure(configuration.frozen.result, path)
        new = figure(today.result, path)
        change = None if not old or new is None else (new - old) / old * 100
        rows.append({"key": path, "old": old, "new": new, "change": change, "changed": old != new})
    return today, rows


# Row labels of the catalog-changes table (the same words as the catalog pages).
CATALOG_FIGURE_LABELS = {
    "accelerator.name": _("Name"),
    "accelerator.slug": _("slug"),
    "accelerator.memory_gb": _("Memory as marketed (GB)"),
    "accelerator.memory_gib": _("Memory as built (GiB)"),
    "accelerator.memory_reported_gib": _("Reported by the driver (GiB per device)"),
    "accelerator.chips_per_board": _("Devices per board"),
    "accelerator.bandwidth_gbps": _("Bandwidth (GB/s)"),
    "accelerator.fp16_tflops": _("FP16 TFLOPS"),
    "accelerator.price_usd": _("Price (USD)"),
    "accelerator.tdp_w": _("TDP (W)"),
    "model.params_total": _("Parameters (counted)"),
    "model.params_active": _("Active parameters (counted)"),
    "model.config_hash": _("config.json"),
    "measured_weights_bytes": _("measured size (bytes)"),
}


def catalog_changes(
    *, saved: ConfigurationSnapshot, today: ConfigurationSnapshot
) -> list[dict[str, Any]]:
    """The catalog figures that differ between the saved snapshot and today's, each with
    its label (the key itself when a new snapshot field has none yet)."""
    pairs = [
        (f"accelerator.{k}", getattr(saved.accelerator, k), getattr(today.accelerator, k))
        for k in (f.name for f in fields(AcceleratorFacts))
    ]
    pairs += [
        (f"model.{k}", getattr(saved.model, k), getattr(today.model, k))
        for k in ("params_total", "params_active", "config_hash")
    ]
    pairs.append(
        ("measured_weights_bytes", saved.measured_weights_bytes, today.measured_weights_bytes)
    )
    return [
        {"key": key, "label": CATALOG_FIGURE_LABELS.get(key, key), "old": old, "new": new}
        for key, old, new in pairs
        if old != new
    ]


def share_link_list(*, tenant: Tenant) -> QuerySet[ShareLink]:
    """The org's active links (not revoked, not expired), one query."""
    return (
        tenant.scoped(ShareLink)
        .filter(live_links_q())
        .select_related("configuration", "created_by")
    )


def shared_configuration(*, token: str) -> SavedConfiguration:
    """The configuration behind a live token (sharing.selectors.share_link_resolve: 404
    for unknown, revoked or expired tokens and for every token of an org that turned
    public links off)."""
    configuration: SavedConfiguration = share_link_resolve(ShareLink, token=token).configuration
    return configuration


def activity_list(*, tenant: Tenant, limit: int = 200) -> QuerySet[ActivityEntry]:
    return tenant.scoped(ActivityEntry).select_related("actor")[:limit]


def saved_compare_rows(
    *, configurations: list[SavedConfiguration]
) -> list[explore_compare.CompareRow]:
    """The explore compare page's rows (best values marked), from the frozen snapshots:
    nothing is recomputed, no catalog row is read."""
    snapshots = [(c, c.frozen) for c in configurations]
    columns = [
        explore_compare.CompareColumn(
            model=LLMModel(slug=c.model_slug, name=snap.model.name),
            accelerator=Accelerator(slug=c.accelerator_slug, name=snap.accelerator.name),
            quant=snap.setup["quant"],
            gpus=snap.setup["gpus"],
            result=snap.result,
            cost=compare_cost(snap.cost),
        )
        for c, snap in snapshots
    ]
    return explore_compare.compare_rows(columns)


def compare_cost(cost: CostFacts | None) -> explore_compare.ColumnCost | None:
    """A snapshot's cost as a compare column's (the answer panel's figures as saved):
    None when the snapshot kept none."""
    if cost is None:
        return None
    rented, owned = cost.rented, cost.owned
    return explore_compare.ColumnCost(
        usd_per_million=cost.usd_per_million,
        basis=cost.basis,
        sequences=cost.sequences,
        provider=rented.provider if rented else "",
        usd_per_hour=rented.usd_per_hour if rented else None,
        gpus=rented.gpus if rented else 0,
        offer_gpus=rented.offer_gpus if rented else 0,
        purchase_usd=owned.purchase_usd if owned else None,
        owned_usd_per_million=cost.owned_usd_per_million,
    )
