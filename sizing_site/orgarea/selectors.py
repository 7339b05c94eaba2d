"""How many rows the organization has in each app, for its overview page.

Every count goes through the app's own scoped selector (tenant.scoped underneath), and
all of them are read in one query: each becomes a `SELECT COUNT(*)` subquery of a single
row, so the page costs the same whatever the number of rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Func, IntegerField, QuerySet, Subquery
from django.db.models.functions import Coalesce

from pricing.selectors import org_feed_offers, org_feed_sources
from sizing_site.fleet.selectors import machine_list
from sizing_site.owncatalog.selectors import own_accelerator_list, own_model_list
from sizing_site.planner.models import PlanShareLink
from sizing_site.planner.services import saved_plan_list
from sizing_site.reports.models import ActivityEntry
from sizing_site.reports.selectors import (
    activity_list,
    saved_configuration_list,
    share_link_list,
)
from sizing_site.sharing.selectors import live_links_q
from sizing_site.tenancy.access import Tenant
from sizing_site.tenancy.models import Organization, Role
from sizing_site.tenancy.selectors import invitation_list, membership_list, signup_list
from sizing_site.tokens.selectors import token_list_reaching


@dataclass(frozen=True)
class OrgOverview:
    """Row counts of one organization; the admin-only ones are None for other roles."""

    members: int
    own_models: int
    own_cards: int
    machines: int
    saved_plans: int
    plan_links: int
    configurations: int
    configuration_links: int
    price_feeds: int
    negotiated_offers: int
    api_tokens: int
    invitations: int | None = None
    signups: int | None = None
    latest_activity: ActivityEntry | None = None


def _count(rows: QuerySet[Any]) -> Coalesce:
    """`rows` counted in a subquery: COUNT without GROUP BY (a Func, not an aggregate, so
    Django adds none) gives exactly one row, 0 for no rows."""
    counted = rows.order_by().annotate(n=Func("pk", function="COUNT")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def org_overview(*, tenant: Tenant, user: Any) -> OrgOverview:
    """The counts of the overview page: one query, and one more for an admin's latest
    activity entry."""
    organization = tenant.organization
    counts = {
        "members": membership_list(tenant=tenant),
        "own_models": own_model_list(tenant=tenant),
        "own_cards": own_accelerator_list(tenant=tenant),
        "machines": machine_list(tenant=tenant),
        "saved_plans": saved_plan_list(tenant=tenant),
        "plan_links": tenant.scoped(PlanShareLink).filter(live_links_q()),
        "configurations": saved_configuration_list(tenant=tenant),
        "configuration_links": share_link_list(tenant=tenant),
        "price_feeds": org_feed_sources(organization=organization),
        "negotiated_offers": org_feed_offers(organization=organization),
        "api_tokens": token_list_reaching(user=user, organization=organization),
    }
    is_admin = tenant.can(Role.ADMIN)
    if is_admin:
        counts["invitations"] = invitation_list(tenant=tenant)
        counts["signups"] = signup_list(tenant=tenant)
    # "n_": a name of its own, apart from the organization's fields and relations.
    row = (
        Organization.objects.filter(pk=organization.pk)
        .values(**{f"n_{name}": _count(rows) for name, rows in counts.items()})
        .get()
    )
    latest = activity_list(tenant=tenant, limit=1).first() if is_admin else None
    numbers: dict[str, Any] = {name.removeprefix("n_"): n for name, n in row.items()}
    return OrgOverview(**numbers, latest_activity=latest)
