"""The configurator page and POST /api/v1/estimate/ say when a card's FP16 rate is imputed
(the seeded Mac Studio M4 Max 32-core publishes none: 32 GPU cores x 128 ALUs x 2 FLOP x
1.797 GHz = 14.72 TFLOPS), and the speed section says when the compute term is unknown."""

from __future__ import annotations

import json

import pytest
from django.template.loader import render_to_string
from django.urls import reverse

from catalog.sizing import Setup
from estimator.api import parse_request, run_estimate
from tests.estimator.test_compute_rates import request as raw_request
from tests.explore.seeded import SeededCase

LLAMA_8B = "llama-3-1-8b-instruct"
M4_MAX = "apple-mac-studio-m4-max-32-core-gpu-36gb"
RTX_4090 = "nvidia-geforce-rtx-4090"


class ImputedComputeRateTest(SeededCase):
    """The curated seed catalog, in English, as bob (tests.explore.seeded)."""

    def test_the_page_says_the_rate_is_imputed_from_the_cores_and_clock(self) -> None:
        url = reverse("configurator:configure", args=[LLAMA_8B, M4_MAX])
        html = self.client.get(url, {"quant": "Q4_K_M", "ctx": "8192"}).content.decode()
        assert 'data-compute="imputed"' in html
        assert "Compute rate imputed from 32 GPU cores × 1.797 GHz" in html
        # 32 x 256 FLOP x 1.797 GHz = 14.72 TFLOPS, shown to one decimal
        assert "the speeds use 14.7 TFLOPS" in html
        assert 'data-compute="unknown"' not in html

    def test_a_card_with_a_published_rate_says_nothing(self) -> None:
        url = reverse("configurator:configure", args=[LLAMA_8B, RTX_4090])
        html = self.client.get(url, {"quant": "Q4_K_M", "ctx": "8192"}).content.decode()
        assert "data-compute=" not in html

    def test_the_api_carries_the_flag_and_the_arithmetic(self) -> None:
        body = {"model": LLAMA_8B, "accelerator": M4_MAX, "quant": "Q4_K_M", "ctx": 8192}
        response = self.client.post(
            "/api/v1/estimate/", json.dumps(body), content_type="application/json"
        )
        assert response.status_code == 200
        rate = response.json()["compute_rate"]
        assert rate["imputed"] is True and rate["decode_compute"] == "included"
        assert rate["fp16_tflops"] == pytest.approx(32 * 256 * 1.797e9 / 1e12)
        assert rate["imputed_from"].startswith(
            "32 GPU cores x 128 ALUs x 2 FLOP (FMA) x 1.797 GHz = 14.7 TFLOPS"
        )
        # with the rate, prefill and the time to first token are estimated
        assert response.json()["prefill_tokens_per_s"] is not None

    def test_the_speed_section_says_when_the_compute_term_is_unknown(self) -> None:
        result = run_estimate(parse_request(raw_request({})))
        html = render_to_string(
            "configurator/sections/speed.html",
            {"result": result, "setup": Setup(quant="Q4_K_M", context_tokens=8192)},
        )
        assert 'data-compute="unknown"' in html
        assert "decode counts memory reads and fixed overhead only" in html
