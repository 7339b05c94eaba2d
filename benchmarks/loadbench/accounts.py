"""Who the clients act as besides the bench user: its API token, its admin membership of
seed_demo's organization (with the organization's own offers and saved configurations, for
the pages run), and the abuse run's viewer with a read-only token. Each made by the
project's own services in `manage.py shell`, as the portal's pages make them."""

from __future__ import annotations

from pathlib import Path

from .scenarios import POPULAR
from .server import USER, manage, shell_output

PLANNER_ORG = "demo"  # seed_demo's organization
ABUSER = "abuser"  # a viewer of PLANNER_ORG with a read-only token


def api_token(root: Path, env: dict[str, str]) -> str:
    """An API token of the bench user (sizing_site.tokens), as its owner sees it once."""
    code = (
        "from django.contrib.auth.models import User; "
        "from sizing_site.tokens.services import token_create; "
        f"print(token_create(user=User.objects.get(username={USER!r}), name='bench').plain)"
    )
    return shell_output(root, env, code)


def json_headers(token: str) -> dict[str, str]:
    """The headers of an API call with a JSON body, authenticated by `token`."""
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


def join_demo_org(root: Path, env: dict[str, str]) -> None:
    """seed_demo (the demo organization and its inventory machine), the bench user an admin."""
    manage(root, env, "seed_demo", "--allow-production")
    code = (
        "from django.contrib.auth.models import User; "
        "from sizing_site.tenancy.models import Membership, Organization, Role; "
        f"Membership.all_tenants.get_or_create(user=User.objects.get(username={USER!r}), "
        f"organization=Organization.objects.get(slug={PLANNER_ORG!r}), "
        "defaults={'role': Role.ADMIN})"
    )
    manage(root, env, "shell", "-c", code)


# The demo organization's negotiated offers, as its price feed would bring them: (sku, card
# name as a feed writes it, GPUs, USD per hour of the instance).
ORG_OFFERS = (
    ("demo-h100-sxm-1x", "H100 SXM", 1, "1.90"),
    ("demo-h100-sxm-8x", "H100 SXM", 8, "15.20"),
    ("demo-rtx-4090-1x", "RTX 4090", 1, "0.30"),
    ("demo-rtx-4090-2x", "RTX 4090", 2, "0.60"),
)


def demo_org_work(root: Path, env: dict[str, str]) -> str:
    """join_demo_org, then the organization's own offers (its price feed through
    org_feed_save and offers_upsert, as a feed refresh stores them) and a saved
    configuration of each POPULAR pair (saved_configuration_create, as the Save form does);
    returns what it made, counted."""
    join_demo_org(root, env)
    saves = [
        (label, model, card, {k: str(v) for k, v in q.items()}) for label, model, card, q in POPULAR
    ]
    code = f"""
from datetime import datetime, timezone
from decimal import Decimal
from django.contrib.auth.models import User
from pricing.fetchers.base import FetchedOffer
from pricing.models import CloudOffer, CloudProvider
from pricing.services import offers_upsert, org_feed_save
from sizing_site.configurator.state import configuration_size_by_slugs
from sizing_site.reports.models import SavedConfiguration
from sizing_site.reports.services import saved_configuration_create
from sizing_site.tenancy.access import Tenant
from sizing_site.tenancy.models import Membership, Organization
org = Organization.objects.get(slug={PLANNER_ORG!r})
user = User.objects.get(username={USER!r})
provider = CloudProvider.objects.order_by("name").first()
source = org_feed_save(organization=org, provider=provider, content="sku,gpu,count,price")
now = datetime.now(timezone.utc)
fetched = [
    FetchedOffer(sku=s, region="eu", gpu_name=g, gpu_count=n, on_demand_per_hour=Decimal(p),
                 observed_at=now)
    for s, g, n, p in {ORG_OFFERS!r}
]
offers_upsert(fetched=fetched, source=source, organization=org)
tenant = Tenant(org, Membership.all_tenants.get(user=user, organization=org))
for name, model, card, query in {saves!r}:
    state = configuration_size_by_slugs(model_slug=model, accelerator_slug=card, data=query)
    saved_configuration_create(
        tenant=tenant, user=user, name=name, notes="", tags=["bench"], state=state, data=query
    )
matched = CloudOffer.all_orgs.filter(organization=org, accelerator__isnull=False).count()
saved = SavedConfiguration.all_tenants.filter(organization=org).count()
print(f"{{matched}} own offers matched to a card, {{saved}} saved configurations")
"""
    return shell_output(root, env, code)


def abuser_token(root: Path, env: dict[str, str]) -> str:
    """A viewer of the demo organization and its read-only API token (limited to that
    organization), made by the token service as the tokens page makes one."""
    code = (
        "from django.contrib.auth.models import User; "
        "from sizing_site.tenancy.models import Membership, Organization, Role; "
        "from sizing_site.tokens.services import token_create; "
        f"org = Organization.objects.get(slug={PLANNER_ORG!r}); "
        f"user = User.objects.create_user({ABUSER!r}); "
        "Membership.all_tenants.create(user=user, organization=org, role=Role.VIEWER); "
        "print(token_create(user=user, name='abuse', organization=org, read_only=True).plain)"
    )
    return shell_output(root, env, code)
