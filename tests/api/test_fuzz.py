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
than stopping at a 404. Every path parameter has real values (tests/api/fuzz_seed.py:
catalog and own slugs, saved configurations and plans, share links, machines, members,
invitations sent and received), with rows of their own for the operations that use them up
(a DELETE, an invitation's accept or decline), and two thirds of an operation's inputs use
them; a test fails when an operation has none, or when every call to it was a 404. The rows are
committed (the server's threads must see them) and flushed afterwards, as a
TransactionTestCase does: pytest-django runs these tests after every test that rolls back.

What no schema can state (a slug that must exist, a context within the model's limit, a
time in the future) is listed in BEYOND_THE_SCHEMA: a valid input refused with a 400 that
names only such fields is no mismatch.

Bounded: derandomized (the same inputs each run), MAX_EXAMPLES inputs per operation
(FUZZ_EXAMPLES for a deeper run; FUZZ_OPERATIONS to fuzz some operations only) and a
request timeout per call, throttles and the work budget's minute raised out of the way.
The last test asserts the bound on calls (no wall-clock limit: a loaded parallel run
takes twice as long as a quiet one) and prints the figures: operations, calls, checks,
seconds, answers by status.

The refusals the fuzz found before any API view runs are pinned down as plain tests in
tests/api/test_fuzz_findings.py.
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
from django.core.management import call_command
from django.test import override_settings
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

from estimator.api.parse import TOP_LEVEL
from tests.api import fuzz_seed
from tests.api.fuzz_seed import ORG, Known, Slugs

# transaction=True: the server's threads see only committed rows; its flush after the test
# also removes what the module's fixture seeded.
TRANSACTIONAL = pytest.mark.django_db(transaction=True)

# Per operation, positive and negative inputs together; FUZZ_EXAMPLES=200 for a deeper run.
MAX_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))
# No Hypothesis deadline: a cold sweep on a loaded CI machine took past 10 s once, a
# flaky failure that is no defect. Each call is bounded by its 30 s request timeout, and
# the module by MAX_EXAMPLES calls per operation.
DEADLINE_MS = None
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


# Operations whose authentication ignored_auth has confirmed (see auth_enforced).
AUTH_CONFIRMED: set[str] = set()


def auth_enforced(ctx: Any, response: Any, case: Case) -> bool | None:
    """schemathesis's ignored_auth (a successful call repeated without its token and with a
    bad one must fail), confirmed once per operation, as schemathesis's own runner does
    (its CheckContext.auth_enforced_operations); a bare call_and_validate has no such set
    and probed every successful call three times over, 61 % of the fuzz's requests."""
    if ctx.auth_enforced_operations is None:
        ctx.auth_enforced_operations = AUTH_CONFIRMED
    return ignored_auth(ctx, response, case)


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
    auth_enforced,
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
        seed = fuzz_seed.seed()
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
            failures.append(f"{operation.label}: no real {', '.join(sorted(named))} in fuzz_seed")
        try:
            _fuzz(operation, fuzz_server)
        except (Exception, BaseExceptionGroup) as exc:  # the checks failed: how, and the call
            failures.append(f"{operation.label}:\n{exc}")
        if named and not fuzz_server.reached[operation.label]:
            failures.append(f"{operation.label}: every call was a 404, none reached the view")
    assert not failures, "\n\n".join(failures)


@pytest.mark.fuzz
@TRANSACTIONAL
def test_the_fuzz_stays_within_its_bounds(fuzz_server: FuzzServer) -> None:
    elapsed = time.monotonic() - fuzz_server.started
    print(
        f"schema fuzz: {len(fuzz_server.operations)} operations, {fuzz_server.calls} calls, "
        f"{len(CHECKS)} checks each ({fuzz_server.calls * len(CHECKS)}), {elapsed:.1f} s; "
        f"answers by status: {dict(sorted(fuzz_server.statuses.items()))}; "
        f"authentication confirmed on {len(AUTH_CONFIRMED)} operations"
    )
    assert fuzz_server.operations, "no operation was fuzzed"
    # every operation but the few without a successful call (a PUT whose body's rules no
    # schema states, say) had its token removed and spoiled, and refused both
    assert len(AUTH_CONFIRMED) >= 0.8 * len(fuzz_server.operations)
    # Hypothesis stops at max_examples per operation (explicit examples included)
    assert fuzz_server.calls <= MAX_EXAMPLES * len(fuzz_server.operations)
