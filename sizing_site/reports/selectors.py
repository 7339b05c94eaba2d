"""Reads for saved configurations: lists, the frozen report, today's recompute and the
changes between them, share links and the activity log. Tenant rows only through a Tenant."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from catalog.models import Accelerator, LLMModel
from estimator.api import RequestError, request_to_dict, result_to_dict
from sizing_site.configurator import selectors as configurator
from sizing_site.configurator.forms import ConfiguratorState, StateError
from sizing_site.explore import selectors as explore
from sizing_site.reports.models import (
    ActivityEntry,
    SavedConfiguration,
    ShareLink,
    SharePolicy,
    share_token_hash,
)
from sizing_site.tenancy.access import Tenant
from sizing_site.tenancy.models import TenantOwned

# A share link model: ShareLink, or the planner's PlanShareLink.
L = TypeVar("L", bound=TenantOwned)

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
    snapshot: dict[str, Any]  # the figures and the catalog rows they came from, as JSON
    query: dict[str, str]  # the state's parameters, with the quant it sized


def configuration_snapshot(*, state: ConfiguratorState) -> Frozen:
    """The state sized the way the configurator page sizes it. Raises StateError when the
    estimator refuses it."""
    model, accelerator = state.model, state.accelerator
    try:
        results = configurator.configuration_results(
            model=model, accelerator=accelerator, setup=state.setup
        )
    except RequestError as exc:
        raise StateError(exc.message) from exc
    sized = results.sized
    snapshot = {
        "result": result_to_dict(sized.result),
        # The memory bar's usable mark; its parts come from "result" (older snapshots also
        # hold the parts' SVG geometry, which nothing reads any more).
        "bar": {"usable_bytes": results.usable_bytes},
        "backend": sized.backend,
        "setup": asdict(sized.setup),
        "model": {
            "name": model.name,
            "slug": model.slug,
            "hf_repo": model.hf_repo,
            "params_total": model.params_total,
            "params_active": model.params_active,
            "config_hash": _config_hash(model.config),
        },
        "accelerator": {
            "name": str(accelerator),
            "slug": accelerator.slug,
            **{
                k: getattr(accelerator, k)
                for k in (
                    "memory_gb",
                    "memory_gib",
                    "memory_reported_gib",
                    "chips_per_board",
                    "bandwidth_gbps",
                    "fp16_tflops",
                    "price_usd",
                    "tdp_w",
                )
            },
        },
        "measured_weights_bytes": sized.measured_weights_bytes,
        # Rows the organisation added for itself, marked as its own on the report.
        "own": {
            "model": model.organization_id is not None,
            "accelerator": accelerator.organization_id is not None,
        },
        "computed_at": timezone.now().isoformat(),
    }
    query = state.query | {"quant": sized.setup.quant}
    return Frozen(request_to_dict(sized.request), snapshot, query)


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
        "snapshot": c.snapshot,
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
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """Today's snapshot of the saved configuration, whose saved parameters stand for
    `state` today (None: they no longer do), and, for each report figure, the saved value,
    today's, and the change in percent; (None, []) when it cannot be sized any more."""
    if state is None:
        return None, []
    try:
        today = configuration_snapshot(state=state).snapshot
    except StateError:
        return None, []
    rows = []
    for path in FIGURES:
        old = figure(configuration.snapshot["result"], path)
        new = figure(today["result"], path)
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


def catalog_changes(*, saved: dict[str, Any], today: dict[str, Any]) -> list[dict[str, Any]]:
    """The catalog figures that differ between the saved snapshot and today's, each with
    its label (the key itself when a new snapshot field has none yet)."""
    pairs = [
        (f"accelerator.{k}", saved["accelerator"].get(k), today["accelerator"].get(k))
        for k in today["accelerator"]
    ]
    pairs += [
        (f"model.{k}", saved["model"].get(k), today["model"].get(k))
        for k in ("params_total", "params_active", "config_hash")
    ]
    pairs.append(
        ("measured_weights_bytes", saved["measured_weights_bytes"], today["measured_weights_bytes"])
    )
    return [
        {"key": key, "label": CATALOG_FIGURE_LABELS.get(key, key), "old": old, "new": new}
        for key, old, new in pairs
        if old != new
    ]


def live_links_q() -> Q:
    """Share links that still open (configurations' and plans' alike): not revoked, not
    expired."""
    now = timezone.now()
    return Q(revoked_at__isnull=True) & (Q(expires_at__isnull=True) | Q(expires_at__gt=now))


def share_link_list(*, tenant: Tenant) -> QuerySet[ShareLink]:
    """The org's active links (not revoked, not expired), one query."""
    return (
        tenant.scoped(ShareLink)
        .filter(live_links_q())
        .select_related("configuration", "created_by")
    )


def public_links_allowed(*, tenant: Tenant) -> bool:
    policy = tenant.scoped(SharePolicy).first()
    return policy is None or policy.public_links


def live_shared_link(model: type[L], *, token: str, subject: str) -> L:
    """The live link (of `model`: ShareLink or the planner's PlanShareLink) behind a
    token, its `subject` and organization joined; 404 for unknown, revoked or expired
    tokens and for every token of an org that turned public links off.

    The token is the only credential here, so this is the one lookup not scoped by a
    Tenant: it looks inside all orgs' links, then scopes the policy to the link's org."""
    manager: Any = model.all_tenants
    link: Any = (
        manager.select_related(subject, "organization")
        .filter(token_hash=share_token_hash(token), revoked_at__isnull=True)
        .first()
    )
    if link is None or (link.expires_at is not None and link.expires_at <= timezone.now()):
        raise Http404
    policy = SharePolicy.objects.for_organization(link.organization).first()
    if policy is not None and not policy.public_links:
        raise Http404
    found: L = link
    return found


def shared_configuration(*, token: str) -> SavedConfiguration:
    """The configuration behind a live token; 404 for unknown, revoked or expired tokens
    and for every token of an org that turned public links off."""
    link = live_shared_link(ShareLink, token=token, subject="configuration")
    configuration: SavedConfiguration = link.configuration
    return configuration


def activity_list(*, tenant: Tenant, limit: int = 200) -> QuerySet[ActivityEntry]:
    return tenant.scoped(ActivityEntry).select_related("actor")[:limit]


def saved_compare_rows(*, configurations: list[SavedConfiguration]) -> list[explore.CompareRow]:
    """The explore compare page's rows (best values marked), from the frozen snapshots:
    nothing is recomputed, no catalog row is read."""
    columns = [
        explore.CompareColumn(
            model=LLMModel(slug=c.model_slug, name=c.snapshot["model"]["name"]),
            accelerator=Accelerator(
                slug=c.accelerator_slug, name=c.snapshot["accelerator"]["name"]
            ),
            quant=c.snapshot["setup"]["quant"],
            gpus=c.snapshot["setup"]["gpus"],
            result=c.snapshot["result"],
        )
        for c in configurations
    ]
    return explore.compare_rows(columns)
