"""The own-catalog API: roles, 400s naming the field, 409 for a card in use, and 404 for
another organisation's members on every route and method."""

from __future__ import annotations

from typing import Any

from catalog.models import Accelerator, LLMModel
from sizing_site.fleet import services as fleet
from sizing_site.owncatalog import services
from tests.owncatalog.base import QWEN3_8B, QWEN3_8B_PARAMS, QWEN3_8B_TEXT, OwnCase

JSON = "application/json"
CARD = {
    "vendor": "Acme",
    "name": "X1",
    "memory_gb": 96,
    "bandwidth_gbps": 3200,
    "fp16_tflops": 400,
    "tdp_w": 450,
}


class Api(OwnCase):
    def post(self, name: str, body: Any) -> Any:
        return self.client.post(self.api(name), body, JSON)

    def test_import_read_rename_and_delete_by_role(self) -> None:
        self.client.force_login(self.bob)
        assert self.post("own-models", {"name": "Q", "config": QWEN3_8B}).status_code == 403
        self.client.force_login(self.dave)
        created = self.post("own-models", {"name": "Our Qwen", "config": QWEN3_8B})
        assert created.status_code == 201, created.json()
        body = created.json()
        assert body["params_total"] == QWEN3_8B_PARAMS and body["weights"] == []
        slug = body["slug"]
        from_text = self.post("own-models", {"name": "Text", "config_text": QWEN3_8B_TEXT})
        assert from_text.json()["params_total"] == QWEN3_8B_PARAMS
        self.client.force_login(self.bob)
        listed = self.client.get(self.api("own-models")).json()
        assert listed["count"] == 2
        assert sorted(r["name"] for r in listed["results"]) == ["Our Qwen", "Text"]
        assert self.client.get(self.api("own-model", slug)).json()["name"] == "Our Qwen"
        self.client.force_login(self.dave)
        patched = self.client.patch(self.api("own-model", slug), {"notes": "v2"}, JSON)
        assert patched.status_code == 200
        assert (patched.json()["name"], patched.json()["notes"]) == ("Our Qwen", "v2")
        assert self.client.delete(self.api("own-model", slug)).status_code == 403
        self.client.force_login(self.alice)
        assert self.client.delete(self.api("own-model", slug)).status_code == 204
        assert LLMModel.objects.for_organization(self.org_a).count() == 1

    def test_bad_model_input_names_the_field(self) -> None:
        self.client.force_login(self.dave)
        cases: list[tuple[dict[str, Any], str]] = [
            ({"name": "X", "config": {"model_type": "llama"}}, "config"),
            ({"name": "X", "config": [1]}, "config"),
            ({"name": "X", "config_text": "{oops"}, "config_text"),
            ({"name": "X"}, "config"),
            ({"name": "X", "config": QWEN3_8B, "config_text": QWEN3_8B_TEXT}, "config"),
            ({"config": QWEN3_8B}, "name"),
            ({"name": "X", "config": QWEN3_8B, "slug": "mine"}, "slug"),
        ]
        for body, field in cases:
            response = self.post("own-models", body)
            assert response.status_code == 400, body
            assert field in response.json()["errors"], response.json()
        assert not LLMModel.all_orgs.exists()

    def test_a_model_deeper_than_the_largest_published_ones_is_refused(self) -> None:
        # Up to 10,000 layers were accepted, and 20 analysed estimates of such a model took
        # 54.8 s; the bound is now 512 (Llama 3.1 405B has 126).
        self.client.force_login(self.dave)
        for key, value in (("num_hidden_layers", 10_000), ("hidden_size", 65_537)):
            response = self.post("own-models", {"name": "Deep", "config": {**QWEN3_8B, key: value}})
            assert response.status_code == 400, response.json()
            assert key in response.json()["errors"]["config"][0]
        assert not LLMModel.all_orgs.exists()
        deepest = self.post(
            "own-models", {"name": "Deep", "config": {**QWEN3_8B, "num_hidden_layers": 512}}
        )
        assert deepest.status_code == 201

    def test_a_stored_model_past_the_bounds_is_answered_not_sized(self) -> None:
        # A row imported under the old ceiling: the API says the estimator cannot read it.
        self.client.force_login(self.dave)
        slug = self.post("own-models", {"name": "Deep", "config": QWEN3_8B}).json()["slug"]
        LLMModel.all_orgs.filter(slug=slug).update(config={**QWEN3_8B, "num_hidden_layers": 10_000})
        card = self.post("own-accelerators", CARD).json()["slug"]
        body = {"model": slug, "accelerator": card, "analysis": True}
        response = self.client.post("/api/v1/estimate/", body, JSON)
        assert response.status_code == 400
        assert response.json() == {
            "errors": {"model": ["The estimator cannot read this model's config."]}
        }

    def test_accelerators_and_the_card_in_use(self) -> None:
        self.client.force_login(self.dave)
        created = self.post("own-accelerators", CARD)
        assert created.status_code == 201, created.json()
        body = created.json()
        assert (body["memory_gb"], body["memory_kind"], body["sources"]) == (
            96,
            "discrete",
            {"specs": "Entered by Org A"},
        )
        slug = body["slug"]
        for bad, field in (
            ({**CARD, "bandwidth_gbps": -1}, "bandwidth_gbps"),
            ({**CARD, "memory_kind": "magic"}, "memory_kind"),
            ({**CARD, "fp16_tflops": "lots"}, "fp16_tflops"),
            ({**CARD, "speed": 1}, "speed"),
            # Above the bounds that keep the estimator's figures finite (the fuzz once
            # sent 1e308 GB; the sweeps then overflowed).
            ({**CARD, "memory_gb": 1e308}, "memory_gb"),
            ({**CARD, "memory_gib": 16_385}, "memory_gib"),
            ({**CARD, "fp16_tflops": 1e9}, "fp16_tflops"),
        ):
            response = self.post("own-accelerators", bad)
            assert response.status_code == 400 and field in response.json()["errors"], bad
        patch = self.client.patch(self.api("own-accelerator", slug), {"tdp_w": 500}, JSON)
        assert patch.status_code == 200 and patch.json()["tdp_w"] == 500
        assert patch.json()["bandwidth_gbps"] == 3200  # not sent: kept
        negative = self.client.patch(self.api("own-accelerator", slug), {"memory_gb": -2}, JSON)
        assert negative.status_code == 400 and "memory_gb" in negative.json()["errors"]
        row = Accelerator.objects.for_organization(self.org_a).get()
        fleet.machine_create(
            tenant=self.tenant(),
            user=self.alice,
            values={"name": "Rack 9", "accelerator": row, "card_count": 2},
        )
        self.client.force_login(self.alice)
        refused = self.client.delete(self.api("own-accelerator", slug))
        assert refused.status_code == 409
        assert "Rack 9" in refused.json()["errors"]["detail"][0]
        assert Accelerator.all_orgs.count() == 1

    def test_another_organisations_member_gets_404(self) -> None:
        model = services.own_model_import_config(
            tenant=self.tenant(), user=self.alice, name="Secret", config=QWEN3_8B
        )
        card = services.own_accelerator_create(tenant=self.tenant(), user=self.alice, values=CARD)
        self.client.force_login(self.charlie)
        routes = [
            self.api("own-models"),
            self.api("own-model", model.slug),
            self.api("own-accelerators"),
            self.api("own-accelerator", card.slug),
        ]
        for url in routes:
            assert self.client.get(url).status_code == 404
            assert self.client.post(url, {}, JSON).status_code == 404
            assert self.client.patch(url, {}, JSON).status_code == 404
            assert self.client.delete(url).status_code == 404
        # Under Charlie's own organisation the slugs name nothing either.
        assert self.client.get(self.api("own-model", model.slug, org="org-b")).status_code == 404
        own_b = self.client.get(self.api("own-models", org="org-b")).json()
        assert own_b["count"] == 0
        assert LLMModel.all_orgs.count() == 1 and Accelerator.all_orgs.count() == 1
