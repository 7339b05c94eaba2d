"""An organisation's own catalog rows (a fine-tune, an in-house card) on every surface that
reads the catalog: the configurator, the explore pages and search, saved reports, the API
(estimate, catalog lists and details), the fleet page and the planner. Members of the org
see them, marked as the org's own; anyone else gets the answer of an unknown slug, and the
private names never appear in their responses, whatever the caches hold."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client
from django.urls import reverse
from django.utils import translation

from catalog.models import Accelerator, LLMModel, ModelWeights, QuantFormat
from sizing_site.fleet.models import InventoryMachine
from sizing_site.planner import selectors as planner_selectors
from sizing_site.planner.forms import PlanForm
from sizing_site.tenancy.models import Membership, Role
from sizing_site.tokens.services import token_create
from tests.cast import CastTestCase
from tests.configurator.test_views import GLM_AIR, a100

PRIVATE_MODEL = "Acme Tune Air"
PRIVATE_CARD = "Acme X1"
ESTIMATE = "/api/v1/estimate/"


class OwnRows(CastTestCase):
    """GLM-4.5-Air and an A100 80GB in the public catalog; org A's own fine-tune of
    GLM-4.5-Air (the same config.json) and its own card, an A100 under another name."""

    public_model: LLMModel
    public_card: Accelerator
    own_model: LLMModel
    own_card: Accelerator

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        # The explore pages' quality ladder (their forms need one).
        for name, bits, rank in (("BF16", 16, 99), ("Q8_0", 8.5, 90), ("Q4_K_M", 4.5, 70)):
            QuantFormat.objects.create(
                name=name, slug=name.lower(), family="gguf", bits_per_weight=bits, quality_rank=rank
            )
        cls.public_model = LLMModel.objects.create(
            name="GLM-4.5-Air", slug="glm-4-5-air", hf_repo="zai-org/GLM-4.5-Air", config=GLM_AIR
        )
        cls.public_card = Accelerator.objects.create(**a100())
        cls.own_model = LLMModel.all_orgs.create(
            name=PRIVATE_MODEL,
            slug="acme-tune-air-1a2b3c4d",
            family="Acme",
            organization=cls.org_a,
            config=dict(cls.public_model.config),
        )
        ModelWeights.objects.create(model=cls.own_model, format="gguf", quant="Q4_K_M")
        card = {**a100(), "name": PRIVATE_CARD, "slug": "acme-x1-5e6f7a8b", "curated": False}
        cls.own_card = Accelerator.all_orgs.create(organization=cls.org_a, **card)

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def as_user(self, user: Any) -> Client:
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        return client

    def assert_hidden(self, response: Any) -> None:
        body = response.content.decode()
        assert PRIVATE_MODEL not in body and PRIVATE_CARD not in body
        assert self.own_model.slug not in body and self.own_card.slug not in body


class Configurator(OwnRows):
    def url(self, model: LLMModel, card: Accelerator) -> str:
        return reverse("configurator:configure", args=[model.slug, card.slug])

    def test_a_member_sizes_the_org_model_as_the_public_one_with_its_config(self) -> None:
        bob = self.as_user(self.bob)
        query = {"quant": "Q4_K_M", "ctx": "8192"}
        own = bob.get(self.url(self.own_model, self.public_card), query)
        public = bob.get(self.url(self.public_model, self.public_card), query)
        assert own.status_code == public.status_code == 200
        # The same config.json at Q4_K_M: the same weights, to the byte (GLM-4.5-Air,
        # 106 B parameters at ~4.8 bits: about 60 GiB on the 80 GiB card).
        weights = own.context["result"].weights_bytes
        assert weights == public.context["result"].weights_bytes
        assert 55 * 2**30 < weights < 70 * 2**30
        body = own.content.decode()
        assert PRIVATE_MODEL in body and "Our own" in body
        assert "Our own" not in public.content.decode()

    def test_a_member_sizes_on_the_org_card(self) -> None:
        response = self.as_user(self.bob).get(
            self.url(self.public_model, self.own_card), {"quant": "Q4_K_M"}
        )
        assert response.status_code == 200
        assert PRIVATE_CARD in response.content.decode()

    def test_anyone_else_gets_the_404_of_an_unknown_slug_even_after_a_member_warmed_it(
        self,
    ) -> None:
        bob, charlie = self.as_user(self.bob), self.as_user(self.charlie)
        for model, card in (
            (self.own_model, self.public_card),
            (self.public_model, self.own_card),
        ):
            url = self.url(model, card)
            # The member's visit fills the fragment and sizing caches first.
            assert bob.get(url, {"quant": "Q4_K_M"}).status_code == 200
            assert bob.get(url, {"quant": "Q4_K_M", "part": "analysis"}).status_code == 200
            for params in ({"quant": "Q4_K_M"}, {"quant": "Q4_K_M", "part": "analysis"}):
                response = charlie.get(url, params)
                assert response.status_code == 404
                self.assert_hidden(response)
                htmx = charlie.get(url, params, headers={"HX-Request": "true"})
                assert htmx.status_code == 404
            anonymous = Client(HTTP_HOST="127.0.0.1").get(url)
            assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


class Explore(OwnRows):
    def test_the_org_model_on_every_card_for_members_only(self) -> None:
        url = reverse("explore:model-gpus", args=[self.own_model.slug])
        response = self.as_user(self.bob).get(url, {"show_all": "on"})
        assert response.status_code == 200
        rows = response.context["table"].rows
        # Both cards, the public A100 and the org's own A100 twin: the same figures.
        by_card = {r.accelerator.slug: r for r in rows}
        assert set(by_card) == {self.public_card.slug, self.own_card.slug}
        assert by_card[self.own_card.slug].fit == by_card[self.public_card.slug].fit
        assert "Our own" in response.content.decode()
        other = self.as_user(self.charlie).get(url, {"show_all": "on"})
        assert other.status_code == 404
        self.assert_hidden(other)

    def test_a_public_model_lists_the_members_own_cards_and_no_one_elses(self) -> None:
        url = reverse("explore:model-gpus", args=[self.public_model.slug])
        member = self.as_user(self.bob).get(url, {"show_all": "on"})
        slugs = [r.accelerator.slug for r in member.context["table"].rows]
        assert sorted(slugs) == sorted([self.public_card.slug, self.own_card.slug])
        assert PRIVATE_CARD in member.content.decode()
        # Charlie reads the same address after Bob filled the cache: the public card only.
        other = self.as_user(self.charlie).get(url, {"show_all": "on"})
        assert other.status_code == 200
        assert [r.accelerator.slug for r in other.context["table"].rows] == [self.public_card.slug]
        self.assert_hidden(other)
        htmx = self.as_user(self.charlie).get(
            url, {"show_all": "on"}, headers={"HX-Request": "true"}
        )
        self.assert_hidden(htmx)

    def test_the_org_card_across_every_model_and_the_org_models_on_a_public_card(self) -> None:
        own_url = reverse("explore:gpu-models", args=[self.own_card.slug])
        member = self.as_user(self.bob).get(own_url, {"show_all": "on"})
        assert member.status_code == 200
        assert {r.model.slug for r in member.context["table"].rows} == {
            self.public_model.slug,
            self.own_model.slug,
        }
        assert self.as_user(self.charlie).get(own_url).status_code == 404
        public_url = reverse("explore:gpu-models", args=[self.public_card.slug])
        listed = self.as_user(self.bob).get(public_url, {"show_all": "on"})
        assert self.own_model.slug in {r.model.slug for r in listed.context["table"].rows}
        assert "Our own" in listed.content.decode()
        other = self.as_user(self.charlie).get(public_url, {"show_all": "on"})
        assert {r.model.slug for r in other.context["table"].rows} == {self.public_model.slug}
        self.assert_hidden(other)

    def test_search_finds_the_members_own_rows_only(self) -> None:
        url = reverse("explore:search")
        for q in ("acme tune", "acme x1"):
            found = self.as_user(self.bob).get(url, {"q": q}, headers={"HX-Request": "true"})
            assert "Our own" in found.content.decode(), q
            other = self.as_user(self.charlie).get(url, {"q": q}, headers={"HX-Request": "true"})
            self.assert_hidden(other)
        hits = self.as_user(self.bob).get(url, {"q": "acme tune"}, headers={"HX-Request": "true"})
        assert [m.slug for m in hits.context["results"].models] == [self.own_model.slug]


class Reports(OwnRows):
    def save(self, user: Any, org: str, model: LLMModel) -> Any:
        return self.as_user(user).post(
            reverse("reports:save", args=[org]),
            {
                "name": "Own tune",
                "model": model.slug,
                "accelerator": self.public_card.slug,
                "query": "quant=Q4_K_M&ctx=8192",
            },
        )

    def test_a_member_saves_and_recomputes_the_org_model(self) -> None:
        response = self.save(self.alice, "org-a", self.own_model)
        assert response.status_code == 302, response.content.decode()[:500]
        report = self.as_user(self.alice).get(response["Location"])
        assert report.status_code == 200
        body = report.content.decode()
        assert PRIVATE_MODEL in body and "Our own" in body
        recomputed = self.as_user(self.alice).get(response["Location"] + "recompute/")
        assert recomputed.status_code == 200
        assert recomputed.context["today"] is not None
        assert recomputed.context["changes"] == [] or all(
            c["old"] == c["new"] for c in recomputed.context["changes"]
        )

    def test_another_org_cannot_save_it(self) -> None:
        response = self.save(self.charlie, "org-b", self.own_model)
        assert response.status_code == 400
        body = response.content.decode()
        # The form echoes the slug Charlie typed; nothing of the row itself.
        assert "No model with this slug." in body and PRIVATE_MODEL not in body


class Api(OwnRows):
    def estimate(self, client: Client, model: LLMModel, **headers: str) -> Any:
        body = {"model": model.slug, "accelerator": self.public_card.slug, "quant": "Q4_K_M"}
        return client.post(
            ESTIMATE, json.dumps(body), content_type="application/json", headers=headers
        )

    def test_estimate_with_the_org_model_for_members_only(self) -> None:
        bob = self.as_user(self.bob)
        own = self.estimate(bob, self.own_model)
        public = self.estimate(bob, self.public_model)
        assert own.status_code == public.status_code == 200
        assert own.json()["weights_bytes"] == public.json()["weights_bytes"] > 55 * 2**30
        for client in (self.as_user(self.charlie), Client(HTTP_HOST="127.0.0.1")):
            refused = self.estimate(client, self.own_model)
            unknown = self.estimate(client, LLMModel(slug="no-such-model"))
            assert refused.status_code == unknown.status_code
            assert refused.json() == unknown.json()
            self.assert_hidden(refused)

    def test_a_token_of_another_org_does_not_see_them(self) -> None:
        # Alice joins org B too; her token limited to org B sees only B's rows.
        Membership.all_tenants.create(user=self.alice, organization=self.org_b, role=Role.VIEWER)
        limited = token_create(user=self.alice, name="b only", organization=self.org_b).plain
        full = token_create(user=self.alice, name="all").plain
        anon = Client(HTTP_HOST="127.0.0.1")
        allowed = self.estimate(anon, self.own_model, Authorization=f"Bearer {full}")
        assert allowed.status_code == 200
        refused = self.estimate(anon, self.own_model, Authorization=f"Bearer {limited}")
        assert refused.status_code == 404
        detail = reverse("api:catalog-model", args=[self.own_model.slug])
        assert anon.get(detail, headers={"Authorization": f"Bearer {limited}"}).status_code == 404
        assert anon.get(detail, headers={"Authorization": f"Bearer {full}"}).status_code == 200

    def test_catalog_lists_and_details_mark_the_org_rows(self) -> None:
        bob = self.as_user(self.bob)
        models = bob.get(reverse("api:catalog-models")).json()["results"]
        marked = {m["slug"]: m["organization"] for m in models}
        assert marked == {self.public_model.slug: None, self.own_model.slug: "org-a"}
        cards = bob.get(reverse("api:catalog-accelerators")).json()["results"]
        assert {c["slug"]: c["organization"] for c in cards} == {
            self.public_card.slug: None,
            self.own_card.slug: "org-a",
        }
        detail = bob.get(reverse("api:catalog-model", args=[self.own_model.slug]))
        assert detail.status_code == 200 and detail.json()["config"] == GLM_AIR
        card = bob.get(reverse("api:catalog-accelerator", args=[self.own_card.slug]))
        assert card.json()["organization"] == "org-a"
        weights = bob.get(reverse("api:catalog-model-weights", args=[self.own_model.slug]))
        assert [w["quant"] for w in weights.json()["results"]] == ["Q4_K_M"]
        anonymous = Client(HTTP_HOST="127.0.0.1")
        for name in ("api:catalog-models", "api:catalog-accelerators"):
            listed = self.as_user(self.charlie).get(reverse(name))
            assert [r["organization"] for r in listed.json()["results"]] == [None]
            self.assert_hidden(listed)
            self.assert_hidden(anonymous.get(reverse(name)))  # a 403: no token, no session
        for client in (self.as_user(self.charlie), anonymous):
            for name, slug in (
                ("api:catalog-model", self.own_model.slug),
                ("api:catalog-accelerator", self.own_card.slug),
                ("api:catalog-model-weights", self.own_model.slug),
            ):
                # What an unknown slug gets: 404 for Charlie, 403 without a session.
                hidden = client.get(reverse(name, args=[slug]))
                unknown = client.get(reverse(name, args=["no-such-slug"]))
                assert hidden.status_code == unknown.status_code in (403, 404)
                self.assert_hidden(hidden)

    def test_a_members_etag_is_not_anyone_elses(self) -> None:
        url = reverse("api:catalog-models")
        tag = self.as_user(self.bob).get(url)["ETag"]
        again = self.as_user(self.charlie).get(url, headers={"If-None-Match": tag})
        assert again.status_code == 200
        self.assert_hidden(again)


class FleetAndPlanner(OwnRows):
    def test_the_fleet_runs_the_org_model_on_its_machines(self) -> None:
        InventoryMachine.all_tenants.create(
            organization=self.org_a, name="rack 1", accelerator=self.public_card, card_count=1
        )
        InventoryMachine.all_tenants.create(
            organization=self.org_b, name="rack 9", accelerator=self.public_card, card_count=1
        )
        mine = self.as_user(self.bob).get(reverse("fleet:fleet", args=["org-a"]))
        assert mine.status_code == 200
        [table] = mine.context["tables"]
        assert {r.model.slug for r in table.rows} == {self.public_model.slug, self.own_model.slug}
        fits = {r.model.slug: r.fit for r in table.rows}
        # The same config on the same card: the same figures (only the model's key differs).
        own, public = fits[self.own_model.slug], fits[self.public_model.slug]
        assert (own.quant, own.verdict, own.max_context_tokens) == (
            public.quant,
            public.verdict,
            public.max_context_tokens,
        )
        assert "Our own" in mine.content.decode()
        theirs = self.as_user(self.charlie).get(reverse("fleet:fleet", args=["org-b"]))
        [table] = theirs.context["tables"]
        assert {r.model.slug for r in table.rows} == {self.public_model.slug}
        self.assert_hidden(theirs)

    def test_the_planner_offers_and_finds_the_org_model(self) -> None:
        choices = dict(planner_selectors.planner_model_choices([self.org_a]))
        assert choices[self.own_model.slug] == PRIVATE_MODEL
        assert self.own_model.slug not in dict(
            planner_selectors.planner_model_choices([self.org_b])
        )
        assert self.own_model.slug not in dict(planner_selectors.planner_model_choices())
        data = {"model": self.own_model.slug}
        mine = PlanForm.from_data(data, organizations=[self.org_a])
        mine.is_valid()
        assert "model" not in mine.errors and mine.planner_model == self.own_model
        theirs = PlanForm.from_data(data, organizations=[self.org_b])
        assert not theirs.is_valid() and "model" in theirs.errors
        page = self.as_user(self.bob).get(reverse("planner:plan", args=["org-a"]))
        assert PRIVATE_MODEL in page.content.decode()
        other = self.as_user(self.charlie).get(reverse("planner:plan", args=["org-b"]))
        self.assert_hidden(other)


class Sweeps(OwnRows):
    def model_api(self, model: LLMModel) -> str:
        return f"/api/v1/sweeps/models/{model.slug}/accelerators/"

    def card_api(self, card: Accelerator) -> str:
        return f"/api/v1/sweeps/accelerators/{card.slug}/models/"

    def test_a_members_sweeps_hold_the_org_rows_marked(self) -> None:
        bob = self.as_user(self.bob)
        own = bob.get(self.model_api(self.own_model), {"show_all": "true"})
        assert own.status_code == 200
        body = own.json()
        assert body["model"]["organization"] == "org-a"
        rows = {r["accelerator"]["slug"]: r for r in body["results"]}
        assert {s: r["accelerator"]["organization"] for s, r in rows.items()} == {
            self.public_card.slug: None,
            self.own_card.slug: "org-a",
        }
        # The twin cards: the same quant and the same bytes needed.
        assert rows[self.own_card.slug]["fit"] == rows[self.public_card.slug]["fit"]
        on_card = bob.get(self.card_api(self.public_card), {"show_all": "true"}).json()
        assert {r["model"]["slug"]: r["model"]["organization"] for r in on_card["results"]} == {
            self.public_model.slug: None,
            self.own_model.slug: "org-a",
        }

    def test_anyone_else_gets_the_public_sweeps_only(self) -> None:
        bob, charlie = self.as_user(self.bob), self.as_user(self.charlie)
        bob.get(self.model_api(self.public_model), {"show_all": "true"})  # Bob's entry first
        public = charlie.get(self.model_api(self.public_model), {"show_all": "true"})
        assert [r["accelerator"]["slug"] for r in public.json()["results"]] == [
            self.public_card.slug
        ]
        self.assert_hidden(public)
        for url in (self.model_api(self.own_model), self.card_api(self.own_card)):
            assert bob.get(url).status_code == 200
            hidden = charlie.get(url)
            assert hidden.status_code == 404
            self.assert_hidden(hidden)
