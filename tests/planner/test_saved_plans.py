"""Saved capacity plans: a plan saves like a configuration,
with a frozen snapshot, a report page in four languages, share links and a recompute
against today's catalog and prices; the same in the REST API.

The worked example throughout (tests/planner/test_planner.py, InventoryCandidatesTest):
200 users of Qwen3-32B, TTFT p95 <= 1.5 s, >= 30 tok/s each, a spare replica; the cheapest
plan buys 6 RTX PRO 6000 at 8,500 USD: vLLM FP8, 5 + 1 replicas of one card,
(8,500 + 2,000) / 36 + 82.12 power = 373.79 USD a card a month x 6 = 2,242.75 USD a month.
"""

from __future__ import annotations

import hashlib
import io
import json
from datetime import timedelta
from typing import Any
from uuid import uuid4

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext
from jsonschema import Draft202012Validator

from catalog.models import Accelerator
from pricing.models import CloudOffer
from sizing_site.fleet.models import InventoryMachine
from sizing_site.planner import services
from sizing_site.planner.forms import DEFAULTS, PlanForm
from sizing_site.planner.models import PlanShareLink, SavedPlan
from sizing_site.reports.models import ActivityEntry
from sizing_site.sharing.models import SharePolicy
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Membership, Role
from tests.planner.test_planner import EXAMPLE, MODEL, PRO_6000, PlannerTestCase, _json_schema

# The page's query for the worked example (the planner page's GET, as saved from it).
QUERY = {"model": MODEL, "users": "200", "n_plus_one": "on"}
SAVED_API = "/api/v1/o/org-a/plans/saved/"


def frozen_plan(*, organization: Any, user: User | None, name: str = "A plan") -> SavedPlan:
    """A saved plan whose snapshot is a no-plan answer, for tests that need a row of the
    kind without planning (tests/sizing_site/tenancy/test_isolation.py may use it)."""
    answer = {
        "model": "qwen3-32b",
        "feasible": False,
        "candidates_considered": 0,
        "candidates_left_out": 0,
        "plans": [],
        "cheapest": None,
        "fastest": None,
        "most_headroom": None,
        "nearest_miss": None,
        "misses": [],
        "inventory": None,
        "what_if": None,
    }
    snapshot = {
        "answer": answer,
        "model_name": "Qwen3 32B",
        "computed_at": "2026-01-01T00:00:00+00:00",
        "prices_checked_at": None,
    }
    plan: SavedPlan = SavedPlan.all_tenants.create(
        organization=organization,
        name=name,
        inputs={"model": "qwen3-32b", "users": "200"},
        snapshot=snapshot,
        created_by=user,
    )
    return plan


def url(name: str, *args: Any, lang: str = "en") -> str:
    with translation.override(lang):
        return reverse(f"planner:{name}", args=args)


class SavedPlanTestCase(PlannerTestCase):
    """The worked example's catalog (as InventoryCandidatesTest): the PRO 6000 the one card
    to buy at 8,500 USD, public H100 offers the only rent, org A's 4x L40S machine. Dave is
    org A's editor; `saved` is the example saved by him."""

    dave: User
    saved: SavedPlan

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        Accelerator.objects.exclude(slug=PRO_6000).update(price_usd=None)
        Accelerator.objects.filter(slug=PRO_6000).update(price_usd=8500)
        CloudOffer.all_orgs.exclude(
            accelerator__slug="nvidia-h100-sxm5-80gb", organization__isnull=True
        ).delete()
        l40s = Accelerator.objects.get(slug="nvidia-l40s")
        InventoryMachine.all_tenants.create(
            organization=cls.org_a, name="4x L40S", accelerator=l40s, card_count=4
        )
        cls.dave = User.objects.create_user("dave", "dave@a.example", "pw-dave-123")
        Membership.all_tenants.create(user=cls.dave, organization=cls.org_a, role=Role.EDITOR)
        cls.saved = services.saved_plan_create(
            tenant=tenant_for(cls.dave, "org-a"),
            user=cls.dave,
            name="Support bot",
            notes="",
            data=QUERY,
        )

    def as_user(self, user: User | None) -> Client:
        client = Client()
        if user is not None:
            client.force_login(user)
        return client

    def cheapest(self, plan: SavedPlan) -> float:
        plan.refresh_from_db()
        return float(plan.snapshot["answer"]["cheapest"]["monthly_usd"])


class SaveAndReportTest(SavedPlanTestCase):
    def test_saving_the_worked_example_from_the_page_freezes_its_cost(self) -> None:
        client = self.as_user(self.dave)
        # The planner page offers an editor the Save form with the inputs as hidden fields.
        page = client.get(url("plan", "org-a"), QUERY)
        html = page.content.decode()
        assert 'id="save-plan"' in html and 'name="users" value="200"' in html
        # Posted figures are ignored: only the inputs count, the server plans them.
        response = client.post(url("save", "org-a"), {**QUERY, "name": "Bot", "monthly_usd": "1"})
        assert response.status_code == 302, response.content
        plan = SavedPlan.objects.for_organization(self.org_a).get(name="Bot")
        assert response["Location"] == url("saved-report", "org-a", plan.code)
        cheapest = plan.snapshot["answer"]["cheapest"]
        assert (cheapest["engine"], cheapest["quant"], cheapest["cards"]) == ("vllm", "fp8", 6)
        assert cheapest["monthly_usd"] == pytest.approx(2242.75, abs=0.01)
        # The inputs: every PlanForm field the form cleaned, as strings; blanks left out.
        assert plan.inputs["model"] == MODEL and plan.inputs["users"] == "200"
        assert plan.inputs["n_plus_one"] == "true"
        assert set(plan.inputs) <= set(PlanForm.base_fields)
        assert set(DEFAULTS) <= set(plan.inputs)
        assert plan.created_by == self.dave
        report = client.get(response["Location"])
        assert report.status_code == 200
        text = report.content.decode()
        assert "2,242.75" in text and "Saved by dave" in text
        # "Open in the planner" carries the inputs back to the planner page
        assert "users=200" in text
        assert ActivityEntry.objects.for_organization(self.org_a).filter(action="saved").exists()

    def test_bad_inputs_or_no_name_save_nothing_and_go_back_to_the_planner(self) -> None:
        client = self.as_user(self.dave)
        before = SavedPlan.objects.for_organization(self.org_a).count()
        zero = client.post(url("save", "org-a"), {**QUERY, "users": "0", "name": "X"})
        nameless = client.post(url("save", "org-a"), {**QUERY, "name": " "})
        for response in (zero, nameless):
            assert response.status_code == 302
            assert response["Location"].startswith(url("plan", "org-a") + "?")
        assert SavedPlan.objects.for_organization(self.org_a).count() == before

    def test_a_price_change_shows_only_after_recompute(self) -> None:
        client = self.as_user(self.dave)
        report = url("saved-report", "org-a", self.saved.code)
        # The PRO 6000 now costs 9,700 USD: 1,200 / 36 = 33.33 more a card a month,
        # x 6 cards = 200.00 more: 2,242.75 + 200.00 = 2,442.75 USD a month.
        Accelerator.objects.filter(slug=PRO_6000).update(price_usd=9700)
        frozen = client.get(report).content.decode()
        assert "2,242.75" in frozen and "2,442.75" not in frozen
        response = client.post(url("saved-recompute", "org-a", self.saved.code))
        assert response.status_code == 302 and response["Location"] == report
        assert self.cheapest(self.saved) == pytest.approx(2442.75, abs=0.01)
        assert self.saved.recomputed_at is not None
        previous = self.saved.previous
        assert previous is not None
        assert previous["cheapest"]["monthly_usd"] == pytest.approx(2242.75, abs=0.01)
        after = client.get(report).content.decode()
        # The top plan before and after: both figures, the new one in the plans table too.
        assert "2,442.75" in after and "2,242.75" in after
        assert 'class="num previous-cost">2,242.75<' in after

    def test_the_report_renders_in_german_italian_and_chinese(self) -> None:
        client = self.as_user(self.bob)  # a viewer reads
        # 2,242.75 in each language's number format; a translated label of the table.
        # The inputs too: 8,192 context tokens and a TTFT of 1.5 s (as typed, not 1.500).
        inputs = {"de": ">8.192<", "it": ">8.192<", "zh-hans": ">8,192<", "en": ">8,192<"}
        decimal = {"de": ">1,5<", "it": ">1,5<", "zh-hans": ">1.5<", "en": ">1.5<"}
        expected = {
            "de": ("2.242,75", "Kosten / Monat (USD)"),
            "it": ("2.242,75", "Costo / mese (USD)"),
            "zh-hans": ("2,242.75", "成本 / 月（美元）"),
            "en": ("2,242.75", "Cost / month (USD)"),
        }
        for lang, (figure, label) in expected.items():
            response = client.get(url("saved-report", "org-a", self.saved.code, lang=lang))
            assert response.status_code == 200, lang
            html = response.content.decode()
            assert f'<html lang="{lang}"' in html, lang
            assert figure in html, lang
            assert inputs[lang] in html and decimal[lang] in html, lang
            # The label is marked for translation (the planner page's msgid): translated
            # wherever the catalogs are compiled (make pytest runs compilemessages).
            with translation.override(lang):
                compiled = gettext("Cost / month (USD)") == label
            if compiled:
                assert label in html, lang
            else:
                assert "Cost / month (USD)" in html, lang

    def test_rename_needs_a_name_and_the_list_shows_the_frozen_cost(self) -> None:
        client = self.as_user(self.dave)
        bad = client.post(url("saved-rename", "org-a", self.saved.code), {"name": ""})
        assert bad.status_code == 400
        ok = client.post(url("saved-rename", "org-a", self.saved.code), {"name": "Helpdesk"})
        assert ok.status_code == 302
        self.saved.refresh_from_db()
        assert self.saved.name == "Helpdesk"
        listing = self.as_user(self.bob).get(url("saved", "org-a")).content.decode()
        assert "Helpdesk" in listing and "2,242.75" in listing

    def test_the_list_takes_the_same_queries_for_1_and_5_plans(self) -> None:
        client = self.as_user(self.bob)
        page, api = url("saved", "org-a"), SAVED_API

        def count(address: str) -> int:
            with CaptureQueriesContext(connection) as queries:
                assert client.get(address).status_code == 200
            return len(queries)

        one = (count(page), count(api))
        for n in range(4):
            SavedPlan.all_tenants.create(
                organization=self.org_a,
                name=f"Copy {n}",
                inputs=self.saved.inputs,
                snapshot=self.saved.snapshot,
                created_by=self.alice if n % 2 else self.dave,
            )
        five = (count(page), count(api))
        assert one == five
        assert client.get(api).json()["count"] == 5


class NoPlanReportTest(SavedPlanTestCase):
    def test_a_plan_without_a_feasible_answer_renders(self) -> None:
        plan = frozen_plan(organization=self.org_a, user=None, name="Nothing fits")
        html = self.as_user(self.bob).get(url("saved-report", "org-a", plan.code))
        assert html.status_code == 200
        assert "No plan meets this" in html.content.decode()
        body = self.as_user(self.bob).get(f"{SAVED_API}{plan.code}/").json()
        assert body["cheapest"] is None and body["saved_by"] is None


class ShareTest(SavedPlanTestCase):
    def share(self, user: User | None = None, **data: str) -> PlanShareLink:
        """A link made on the report page, with its token as the page showed it (once)."""
        response = self.as_user(user or self.dave).post(
            url("saved-share", "org-a", self.saved.code), data
        )
        assert response.status_code == 201, response.content
        link: PlanShareLink = PlanShareLink.objects.for_organization(self.org_a).latest("created")
        shown = response.context["new_link_url"]
        assert shown in response.content.decode()
        link.token = shown.removeprefix("http://testserver/s/plan/").removesuffix("/")
        return link

    def test_a_link_opens_the_frozen_report_anonymously_until_revoked(self) -> None:
        link = self.share()
        assert len(link.token) == 43  # token_urlsafe(32): 256 random bits
        assert link.expires_at is None
        anonymous = Client()
        response = anonymous.get(url("shared", link.token))
        assert response.status_code == 200
        assert response["X-Robots-Tag"] == "noindex, nofollow"
        html = response.content.decode()
        assert '<meta name="robots" content="noindex, nofollow">' in html
        assert "2,242.75" in html and "Support bot" in html
        assert "<form" not in html and "org-a" not in html  # read-only, no org navigation
        # In German too
        german = anonymous.get(url("shared", link.token, lang="de")).content.decode()
        assert "2.242,75" in german
        revoked = self.as_user(self.dave).post(url("saved-revoke", "org-a", link.code))
        assert revoked.status_code == 302
        assert revoked["Location"] == url("saved-report", "org-a", self.saved.code)
        assert anonymous.get(url("shared", link.token)).status_code == 404
        assert anonymous.get(url("shared", "no-such-token")).status_code == 404

    def test_an_expired_link_is_404(self) -> None:
        link = self.share()
        PlanShareLink.all_tenants.filter(pk=link.pk).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
        assert Client().get(url("shared", link.token)).status_code == 404

    def test_a_future_expiry_still_opens(self) -> None:
        later = (timezone.localtime() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
        link = self.share(expires_at=later)
        assert link.expires_at is not None
        assert Client().get(url("shared", link.token)).status_code == 200

    def test_an_expiry_in_the_past_or_past_ten_years_is_refused_on_the_page(self) -> None:
        share = url("saved-share", "org-a", self.saved.code)
        for when, message in (
            ("2001-01-01T00:00", "Choose a time in the future."),
            ("9999-12-31T23:59", "Choose a time at most 3650 days from now."),
        ):
            response = self.as_user(self.dave).post(share, {"expires_at": when})
            assert response.status_code == 400, when
            assert message in response.content.decode(), when
        assert not PlanShareLink.objects.for_organization(self.org_a).exists()

    def test_unknown_and_mangled_tokens_are_404(self) -> None:
        link = self.share()
        for token in ("nope", link.token[:-1], link.token + "x", "x" * 43):
            assert Client().get(url("shared", token)).status_code == 404, token

    def test_policy_off_refuses_new_links_and_closes_old_ones(self) -> None:
        link = self.share()
        SharePolicy.all_tenants.create(organization=self.org_a, public_links=False)
        response = self.as_user(self.dave).post(url("saved-share", "org-a", self.saved.code))
        assert response.status_code == 400
        assert "Public share links are turned off" in response.content.decode()
        assert PlanShareLink.objects.for_organization(self.org_a).count() == 1
        assert Client().get(url("shared", link.token)).status_code == 404
        api = self.as_user(self.dave).post(
            f"{SAVED_API}{self.saved.code}/share-links/", "{}", content_type="application/json"
        )
        assert api.status_code == 400 and list(api.json()["errors"]) == ["detail"]

    def test_an_editor_revokes_only_their_own_links_an_admin_any(self) -> None:
        link = self.share(self.alice)
        revoke = url("saved-revoke", "org-a", link.code)
        assert self.as_user(self.dave).post(revoke).status_code == 403
        assert self.as_user(self.alice).post(revoke).status_code == 302


class PlanTokenAtRestTest(SavedPlanTestCase):
    """The database keeps a plan share token's SHA-256, never the token (as for saved
    configurations' links): a copy of the table, a backup or a dumpdata opens no plan. The
    address is shown once, in the page or API answer that creates the link."""

    def test_the_database_keeps_only_the_tokens_hash_and_finds_the_link_by_it(self) -> None:
        link = services.plan_share_link_create(
            tenant=tenant_for(self.dave, "org-a"), user=self.dave, plan=self.saved, expires_at=None
        )
        token = link.token
        assert len(token) == 43
        row = PlanShareLink.all_tenants.get(pk=link.pk)
        assert row.token == ""  # not a column: read back, a link has no token
        assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
        stored = json.dumps(list(PlanShareLink.all_tenants.values()), default=str)
        dumped = io.StringIO()
        call_command("dumpdata", "planner", stdout=dumped)
        assert token not in stored and token not in dumped.getvalue()
        assert Client().get(url("shared", token)).status_code == 200
        # The hash itself opens nothing.
        assert Client().get(url("shared", row.token_hash)).status_code == 404

    def test_the_report_shows_a_new_links_address_once(self) -> None:
        editor = self.as_user(self.dave)
        report = url("saved-report", "org-a", self.saved.code)
        made = editor.post(url("saved-share", "org-a", self.saved.code))
        assert made.status_code == 201
        address = made.context["new_link_url"]
        token = address.rstrip("/").rsplit("/", 1)[1]
        # No language prefix: each reader is sent to their own language.
        assert address == f"http://testserver/s/plan/{token}/"
        assert address in made.content.decode()
        # Listed afterwards (its creation date, author and expiry), without its address.
        for user in (self.dave, self.alice):
            listed = self.as_user(user).get(report)
            assert listed.status_code == 200
            html = listed.content.decode()
            assert token not in html and "/s/plan/" not in html
            assert [link.pk for link in listed.context["links"]] == [made.context["new_link"].pk]
            assert 'id="share-links"' in html
        assert Client().get(url("shared", token)).status_code == 200

    def test_the_api_answers_the_token_only_when_it_creates_the_link(self) -> None:
        one = f"{SAVED_API}{self.saved.code}/"
        client = self.as_user(self.dave)
        made = client.post(one + "share-links/", "{}", content_type="application/json")
        assert made.status_code == 201
        body = made.json()
        row = PlanShareLink.objects.for_organization(self.org_a).get(code=body["code"])
        assert row.token_hash == hashlib.sha256(body["token"].encode()).hexdigest()
        assert body["url"] == f"http://testserver/s/plan/{body['token']}/"
        # No later answer, page or API, has it.
        for address in (one, SAVED_API, url("saved-report", "org-a", self.saved.code)):
            answer = client.get(address)
            assert answer.status_code == 200, address
            assert body["token"] not in answer.content.decode(), address

    def test_an_expiry_past_ten_years_is_refused_in_the_api_either_way(self) -> None:
        share = f"{SAVED_API}{self.saved.code}/share-links/"

        def post(body: dict[str, Any]) -> Any:
            return self.as_user(self.dave).post(
                share, json.dumps(body), content_type="application/json"
            )

        for far in ("9999-12-31T00:00:00Z", (timezone.now() + timedelta(days=3651)).isoformat()):
            response = post({"expires_at": far})
            assert response.status_code == 400, far
            assert response.json()["errors"] == {
                "expires_at": ["Choose a time at most 3650 days from now."]
            }
        assert list(post({"expires_in_days": 3651}).json()["errors"]) == ["expires_in_days"]
        assert not PlanShareLink.objects.for_organization(self.org_a).exists()
        near = (timezone.now() + timedelta(days=3649)).isoformat()
        assert post({"expires_at": near}).status_code == 201
        assert post({"expires_in_days": 3650}).status_code == 201


class RolesTest(SavedPlanTestCase):
    def test_viewers_read_editors_write_admins_delete(self) -> None:
        code = self.saved.code
        viewer, editor, admin = (self.as_user(u) for u in (self.bob, self.dave, self.alice))
        assert viewer.get(url("saved", "org-a")).status_code == 200
        assert viewer.get(url("saved-report", "org-a", code)).status_code == 200
        assert 'id="manage"' not in viewer.get(url("saved-report", "org-a", code)).content.decode()
        assert 'id="save-plan"' not in viewer.get(url("plan", "org-a"), QUERY).content.decode()
        writes = [
            (url("save", "org-a"), {**QUERY, "name": "X"}),
            (url("saved-recompute", "org-a", code), {}),
            (url("saved-rename", "org-a", code), {"name": "X"}),
            (url("saved-share", "org-a", code), {}),
            (url("saved-delete", "org-a", code), {}),
        ]
        for address, data in writes:
            assert viewer.post(address, data).status_code == 403, address
        assert editor.post(url("saved-delete", "org-a", code)).status_code == 403
        # GET on a POST-only action: 405
        assert editor.get(url("saved-recompute", "org-a", code)).status_code == 405
        deleted = admin.post(url("saved-delete", "org-a", code))
        assert deleted.status_code == 302 and deleted["Location"] == url("saved", "org-a")
        assert not SavedPlan.objects.for_organization(self.org_a).filter(code=code).exists()

    def test_another_orgs_member_gets_404_on_every_route(self) -> None:
        link = services.plan_share_link_create(
            tenant=tenant_for(self.dave, "org-a"), user=self.dave, plan=self.saved, expires_at=None
        )
        code = self.saved.code
        charlie = self.as_user(self.charlie)  # org B's admin
        pages = [
            url("saved", "org-a"),
            url("saved-report", "org-a", code),
        ]
        actions = [
            url("save", "org-a"),
            url("saved-recompute", "org-a", code),
            url("saved-rename", "org-a", code),
            url("saved-delete", "org-a", code),
            url("saved-share", "org-a", code),
            url("saved-revoke", "org-a", link.code),
        ]
        for address in pages + actions:
            assert charlie.get(address).status_code == 404, address
        for address in actions:
            assert charlie.post(address, {**QUERY, "name": "X"}).status_code == 404, address
        # Org B's own URLs with org A's plan: still 404
        assert charlie.get(url("saved-report", "org-b", code)).status_code == 404
        assert charlie.post(url("saved-delete", "org-b", code)).status_code == 404
        one = f"{SAVED_API}{code}/"
        body = json.dumps({**EXAMPLE, "name": "X"})
        api = [
            ("get", SAVED_API),
            ("post", SAVED_API),
            ("get", one),
            ("patch", one),
            ("delete", one),
            ("post", one + "recompute/"),
            ("post", one + "share-links/"),
            ("delete", f"{SAVED_API}share-links/{link.code}/"),
            ("get", f"/api/v1/o/org-b/plans/saved/{code}/"),
            ("delete", f"/api/v1/o/org-b/plans/saved/{code}/"),
        ]
        for method, address in api:
            if method == "get":
                response = charlie.get(address)
            else:
                response = getattr(charlie, method)(address, body, content_type="application/json")
            assert response.status_code == 404, (method, address)
        assert SavedPlan.objects.for_organization(self.org_a).filter(code=code).exists()
        assert PlanShareLink.objects.for_organization(self.org_a).get().revoked_at is None


class SavedPlanApiTest(SavedPlanTestCase):
    def api(self, method: str, address: str, body: Any = None, user: User | None = None) -> Any:
        client = self.as_user(user or self.dave)
        data = json.dumps(body) if body is not None else ""
        return getattr(client, method)(address, data, content_type="application/json")

    def validator(self, path: str, method: str, code: str = "200") -> Draft202012Validator:
        document = self.as_user(self.bob).get("/api/v1/schema/", {"format": "json"}).json()
        operation = document["paths"][path][method]
        schema = operation["responses"][code]["content"]["application/json"]["schema"]
        return Draft202012Validator({**schema, "components": _json_schema(document["components"])})

    def test_save_read_rename_recompute_share_delete(self) -> None:
        created = self.api("post", SAVED_API, {**EXAMPLE, "name": "API bot", "notes": "n"})
        assert created.status_code == 201, created.content
        body = created.json()
        assert body["cheapest"]["monthly_usd"] == pytest.approx(2242.75, abs=0.01)
        assert body["snapshot"]["answer"]["cheapest"]["cards"] == 6
        assert body["inputs"]["users"] == "200" and body["inputs"]["n_plus_one"] == "true"
        assert body["saved_by"] == "dave" and body["previous"] is None
        detail_schema = self.validator("/api/v1/o/{org_slug}/plans/saved/", "post", "201")
        assert [e.message for e in detail_schema.iter_errors(body)] == []
        one = f"{SAVED_API}{body['code']}/"
        got = self.api("get", one, user=self.bob)
        assert got.status_code == 200 and got.json()["snapshot"] == body["snapshot"]
        listed = self.api("get", SAVED_API, user=self.bob).json()
        list_schema = self.validator("/api/v1/o/{org_slug}/plans/saved/", "get")
        assert [e.message for e in list_schema.iter_errors(listed)] == []
        patched = self.api("patch", one, {"name": "Renamed", "notes": "new notes"})
        assert patched.status_code == 200
        assert (patched.json()["name"], patched.json()["notes"]) == ("Renamed", "new notes")
        assert self.api("patch", one, {"name": ""}).status_code == 400
        assert list(self.api("patch", one, {"cost": 1}).json()["errors"]) == ["cost"]
        # 8,500 -> 9,700 USD a card: 2,242.75 + 6 x 1,200 / 36 = 2,442.75 a month
        Accelerator.objects.filter(slug=PRO_6000).update(price_usd=9700)
        assert self.api("get", one).json()["cheapest"]["monthly_usd"] == pytest.approx(
            2242.75, abs=0.01
        )
        recomputed = self.api("post", one + "recompute/")
        assert recomputed.status_code == 200
        again = recomputed.json()
        assert again["cheapest"]["monthly_usd"] == pytest.approx(2442.75, abs=0.01)
        assert again["previous"]["cheapest"]["monthly_usd"] == pytest.approx(2242.75, abs=0.01)
        assert again["recomputed_at"] is not None
        link = self.api("post", one + "share-links/", {"expires_in_days": 7})
        assert link.status_code == 201
        token = link.json()["token"]
        assert link.json()["url"].endswith(f"/s/plan/{token}/")
        assert Client().get(url("shared", token)).status_code == 200
        revoke = self.api("delete", f"{SAVED_API}share-links/{link.json()['code']}/")
        assert revoke.status_code == 204
        assert Client().get(url("shared", token)).status_code == 404
        assert self.api("delete", one).status_code == 403  # an editor
        assert self.api("delete", one, user=self.alice).status_code == 204
        assert self.api("get", one).status_code == 404

    def test_bad_bodies_are_400s_naming_the_field_and_an_unknown_model_404(self) -> None:
        before = SavedPlan.objects.for_organization(self.org_a).count()
        cases = {
            "users": {**EXAMPLE, "name": "X", "users": 0},
            "name": {**EXAMPLE},
            "monthly_usd": {**EXAMPLE, "name": "X", "monthly_usd": 1},
            "think_s": {**EXAMPLE, "name": "X", "think_s": "thirty"},
        }
        for field, body in cases.items():
            response = self.api("post", SAVED_API, body)
            assert response.status_code == 400, field
            assert list(response.json()["errors"]) == [field], response.json()
        impossible = self.api(
            "post",
            SAVED_API,
            {**EXAMPLE, "name": "X", "ttft_p95_s": 0.001, "tokens_per_s_per_user": 1},
        )
        assert impossible.status_code == 400
        assert list(impossible.json()["errors"]) == ["ttft_p95_s"]
        unknown = self.api("post", SAVED_API, {**EXAMPLE, "model": "no-such-model", "name": "X"})
        assert unknown.status_code == 404 and list(unknown.json()["errors"]) == ["model"]
        assert SavedPlan.objects.for_organization(self.org_a).count() == before
        missing = self.api("get", f"{SAVED_API}{uuid4()}/")
        assert missing.status_code == 404 and "errors" in missing.json()

    def test_viewers_read_only_and_no_login_is_403(self) -> None:
        one = f"{SAVED_API}{self.saved.code}/"
        assert self.api("get", one, user=self.bob).status_code == 200
        assert (
            self.api("post", SAVED_API, {**EXAMPLE, "name": "X"}, user=self.bob).status_code == 403
        )
        assert self.api("patch", one, {"name": "X"}, user=self.bob).status_code == 403
        assert self.api("post", one + "recompute/", user=self.bob).status_code == 403
        assert self.api("post", one + "share-links/", {}, user=self.bob).status_code == 403
        assert Client().get(one).status_code == 403
