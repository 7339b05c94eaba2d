"""CPU offload in the configurator's form: a share of the layers, a
number of layers, all MoE experts (llama.cpp --cpu-moe) or those of the first N layers
(--n-cpu-moe N). Each takes the worked number of bytes off the GPU, slows decoding as the
estimator's offload model says, and puts its flag in the llama.cpp command; settings an
engine, card or model lacks are form errors, never a 500.

GLM-4.5-Air at Q4_K_M (its rebuilt config.json, estimator tensor rules): 46 layers, blk.0
dense, blk.1 to blk.45 with 128 routed experts of 1,408 x 4,096 weights per matrix, so
738,197,504 weights per expert tensor. Gate and up are Q4_K (144 B per 256 weights):
415,236,096 B each; down is Q8_0 (34 B per 32) on llama.cpp's use_more_bits layers,
784,334,848 B, and Q5_0 (22 B per 32) elsewhere, 507,510,784 B. The file is
70,444,997,296 B.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from django.urls import reverse
from django.utils import translation

from catalog.models import ModelWeights
from catalog.sizing.specs import LayerCounts
from estimator.api import estimate
from estimator.launch import launch_commands
from sizing_site.configurator.forms import ConfigureForm
from sizing_site.configurator.state import configuration_size_by_slugs
from tests.configurator.test_views import GLM_AIR, GlmOnA100
from tests.estimator.test_launch import GLM_AIR as GLM_AIR_CONFIG

GIB = 2**30
FILE_BYTES = 70_444_997_296
GATE_UP = 2 * 415_236_096  # = 830,472,192 B per MoE layer
DOWN_Q8_0, DOWN_Q5_0 = 784_334_848, 507_510_784
# --cpu-moe: 45 MoE layers, 21 of them use_more_bits (Q8_0 down), 24 not (Q5_0 down):
# 45 x 830,472,192 + 21 x 784,334,848 + 24 x 507,510,784 = 66,022,539,264 B
ALL_EXPERTS = 45 * GATE_UP + 21 * DOWN_Q8_0 + 24 * DOWN_Q5_0
# --n-cpu-moe 5: blk.0 to blk.4; blk.0 has no experts, blk.1-4 are use_more_bits layers:
# 4 x (830,472,192 + 784,334,848) = 6,459,228,160 B
FIRST_5_EXPERTS = 4 * (GATE_UP + DOWN_Q8_0)
# 5 layers (-ngl 42: 46 + 1 - 5, the output layer counts), or 10 % of 46 layers
# (round(4.6) = 5): blk.0 (dense, 160,571,392 B)
# and blk.1-4 (1,692,033,536 B each: experts plus attention and norms) = 6,928,705,536 B
FIRST_5_LAYERS = 160_571_392 + 4 * 1_692_033_536
# KV at 8K: 46 layers x 2 x 8 KV heads x 128 x 2 B x 8,192 = 1,543,503,872 B; layer
# offload keeps the offloaded layers' KV with them, so 41/46 of it stays: 1,375,731,712 B
KV_8K = 46 * 2 * 8 * 128 * 2 * 8192
KV_41_LAYERS = 41 * 2 * 8 * 128 * 2 * 8192


def test_the_worked_sums() -> None:
    assert ALL_EXPERTS == 66_022_539_264 and FIRST_5_EXPERTS == 6_459_228_160
    assert FIRST_5_LAYERS == 6_928_705_536 and KV_41_LAYERS == 1_375_731_712


class OffloadOnThePage(GlmOnA100):
    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        # The download the commands load (the seed page's): no size, so the page sizes
        # the file as computed, as before.
        ModelWeights.objects.create(
            model=cls.model, format="gguf", quant="Q4_K_M", repo="unsloth/GLM-4.5-Air-GGUF"
        )

    def setUp(self) -> None:
        self.client.force_login(self.bob)
        with translation.override("en"):
            self.page = reverse("configurator:configure", args=[self.model.slug, self.card.slug])

    def get(self, **params: str) -> Any:
        return self.client.get(self.page, {"quant": "Q4_K_M", "ctx": "8192", **params})

    def expected(self, offload: dict[str, Any]) -> dict[str, Any]:
        """The estimator on the page's request, built by hand (tests/configurator/
        test_views: the A100 80GB PCIe as the catalog has it)."""
        return estimate(
            {
                "model": {"hf_config": GLM_AIR},
                "weights": {"format": "gguf", "quant": "Q4_K_M"},
                "device": {
                    "memory_gb": 80 * GIB / 1e9,
                    "bandwidth_gbps": 1935,
                    "fp16_tflops": 312,
                    "vendor": "nvidia",
                    "name": "A100 80GB PCIe",
                    "device_class": "datacenter",
                    "memory_kind": "discrete",
                },
                "engine": {"name": "llama.cpp"},
                "workload": {"context_tokens": 8192, "offload": offload},
            }
        )

    def weights_row_gib(self, body: str) -> str:
        row = re.search(r"Weights on the GPUs</th>\s*<td class=\"num\">([\d.,]+)</td>", body)
        assert row is not None
        return row[1]

    def check(self, params: dict[str, str], offloaded: int, kv: int, flags: list[str]) -> None:
        response = self.get(**params)
        assert response.status_code == 200, response.context["form"].errors
        result = response.context["result"]
        assert result.offloaded_bytes == offloaded, params
        assert result.per_device_weights_bytes == FILE_BYTES - offloaded
        # the cache is the same size; the part on the GPU is what the setting leaves there
        assert result.kv_cache_bytes == KV_8K
        on_gpu = result.per_device_bytes - result.per_device_weights_bytes
        assert on_gpu - result.overhead_bytes == kv
        # the page's memory table: the weights left on the GPU, in GiB
        left = f"{(FILE_BYTES - offloaded) / GIB:.2f}"
        assert self.weights_row_gib(response.content.decode()) == left, params
        # the speed is the estimator's with the same offload, and slower than without
        expected = self.expected(self.expected_offload(params))["decode_tokens_per_s"]
        assert result.decode_tokens_per_s.estimate == expected["estimate"]
        assert expected["estimate"] < self.expected({})["decode_tokens_per_s"]["estimate"]
        llama = response.context["commands"]["llama.cpp"].text
        flat = " ".join(llama.replace("\\\n", " ").split())
        for flag in flags:
            assert f" {flag}" in flat, (flag, flat)

    @staticmethod
    def expected_offload(params: dict[str, str]) -> dict[str, Any]:
        if params.get("moe"):
            return {"moe_experts": True}
        if "moe_layers" in params:
            return {"moe_layers": int(params["moe_layers"])}
        if "layers" in params:
            return {"layers": int(params["layers"])}
        return {"fraction": int(params["offload"]) / 100}

    def test_nothing_offloaded_keeps_the_whole_file_on_the_gpu(self) -> None:
        response = self.get()
        assert response.context["result"].offloaded_bytes == 0
        assert self.weights_row_gib(response.content.decode()) == "65.61"  # 70,444,997,296 B
        assert "--cpu-moe" not in response.context["commands"]["llama.cpp"].text

    def test_all_moe_experts_leave_4_12_gib_of_weights_on_the_gpu(self) -> None:
        # 70,444,997,296 - 66,022,539,264 = 4,422,458,032 B = 4.12 GiB; KV stays (8K: 1.4375)
        self.check({"moe": "on"}, ALL_EXPERTS, KV_8K, ["-ngl 999", "--cpu-moe"])

    def test_the_experts_of_the_first_5_layers(self) -> None:
        # 70,444,997,296 - 6,459,228,160 = 63,985,769,136 B = 59.59 GiB
        self.check({"moe_layers": "5"}, FIRST_5_EXPERTS, KV_8K, ["-ngl 999", "--n-cpu-moe 5"])

    def test_5_layers_in_host_memory(self) -> None:
        # 70,444,997,296 - 6,928,705,536 = 63,516,291,760 B = 59.15 GiB; -ngl 46 + 1 - 5 = 42
        self.check({"layers": "5"}, FIRST_5_LAYERS, KV_41_LAYERS, ["-ngl 42"])

    def test_a_share_of_the_layers(self) -> None:
        # 10 % of 46 layers: round(4.6) = 5 layers, the same bytes as layers=5
        self.check({"offload": "10"}, FIRST_5_LAYERS, KV_41_LAYERS, ["-ngl 42"])

    def test_the_other_engines_commands_follow_or_refuse(self) -> None:
        commands = self.get(moe_layers="5").context["commands"]
        assert "experts in host memory" in (commands["ollama"].refused or "")
        assert (commands["llama.cpp"].text or "").endswith("--n-cpu-moe 5")
        # vLLM and SGLang refuse the GGUF first; with an HF format, the setting itself
        config = replace(GLM_AIR_CONFIG, weights_format="hf", quant="bf16", moe_layers=5)
        refused = launch_commands(replace(config, offloaded_bytes=6 * 10**9))
        assert "--n-cpu-moe" in str(refused["vllm"].refused)
        assert "--n-cpu-moe" in str(refused["sglang"].refused)
        assert refused["tensorrt-llm"].refused  # no weight offload at all

    def test_vllm_takes_a_share_of_the_weights_as_cpu_offload_gb(self) -> None:
        response = self.get(engine="vllm", quant="bf16", offload="50")
        assert response.status_code == 200, response.context["form"].errors
        assert "--cpu-offload-gb" in (response.context["commands"]["vllm"].text or "")

    def test_the_section_opens_and_names_what_is_offloaded(self) -> None:
        body = self.get(moe_layers="5").content.decode()
        assert '<details class="cfg-offload" id="cfg-offload" data-keep-open open>' in body
        assert "MoE experts of 5 layers" in body
        closed = self.get().content.decode()
        assert '<details class="cfg-offload" id="cfg-offload" data-keep-open>' in closed

    def test_invalid_combinations_are_form_errors_not_500s(self) -> None:
        cases = {
            "engine=vllm&layers=5": "layers",
            "engine=vllm&moe_layers=5": "moe_layers",
            "engine=sglang&moe=on": "moe",
            "engine=tensorrt-llm&quant=bf16&offload=10": "offload",
            "engine=ollama&moe=on": "moe",
            "layers=47": "layers",
            "moe_layers=47": "moe_layers",
            "layers=-1": "layers",
            "moe_layers=x": "moe_layers",
            "moe=on&moe_layers=5": "moe_layers",
            "offload=10&layers=5": "layers",
            "layers=5&moe=on": "moe",
        }
        for query, field in cases.items():
            response = self.client.get(f"{self.page}?quant=Q4_K_M&{query}")
            assert response.status_code == 400, query
            errors = response.context["form"].errors
            assert list(errors) == [field], (query, errors)
            body = response.content.decode()
            assert f'id="err-{field}">' in body and "data-answer=" not in body, query
        too_many = self.client.get(self.page, {"layers": "47"}).context["form"].errors
        assert too_many["layers"] == ["This model has 46 layers."]

    def test_a_saved_configuration_keeps_its_offload(self) -> None:
        state = configuration_size_by_slugs(
            model_slug=self.model.slug,
            accelerator_slug=self.card.slug,
            data={"quant": "Q4_K_M", "moe_layers": "5"},
        )
        assert state.setup.offload_moe_layers == 5 and state.query["moe_layers"] == "5"
        assert state.setup.offload_layers is None and not state.setup.offload_moe_experts


def form(data: dict[str, str], **kwargs: Any) -> ConfigureForm:
    from catalog.hardware import EngineChoice

    llama = EngineChoice("llama.cpp", kwargs.pop("backend", "cuda"), "supported", "", "")
    return ConfigureForm(
        data, max_context_tokens=131072, engines=(llama,), card_name="Card", **kwargs
    )


def test_unified_memory_has_nothing_to_offload_to() -> None:
    unified = form({"layers": "5"}, layers=LayerCounts(46, True), unified_memory=True)
    assert not unified.is_valid()
    assert unified.errors["layers"] == [
        "Card has unified memory: there is no separate host memory to offload to."
    ]
    # with nothing set there is no section to show, only why
    empty = form({}, layers=LayerCounts(46, True), unified_memory=True)
    assert empty.offload_fields == () and "unified memory" in empty.offload_unavailable


def test_a_dense_model_has_no_experts_to_offload() -> None:
    dense = form({"moe": "on"}, layers=LayerCounts(32, False))
    assert not dense.is_valid()
    assert dense.errors["moe"] == ["This model has no MoE experts to offload."]
    assert "moe" not in form({}, layers=LayerCounts(32, False)).offload_fields


def test_the_section_shows_what_the_engine_has() -> None:
    from catalog.hardware import EngineChoice

    def shown(engine: str, **data: str) -> tuple[str, ...]:
        choices = tuple(EngineChoice(e, "cuda", "supported", "", "") for e in ("llama.cpp", engine))
        return ConfigureForm(
            {"engine": engine, **data},
            max_context_tokens=131072,
            engines=choices,
            layers=LayerCounts(46, True),
        ).offload_fields

    assert shown("llama.cpp") == ("offload", "layers", "moe", "moe_layers", "host_bw")
    assert shown("ollama") == ("offload", "layers", "host_bw")
    assert shown("vllm") == ("offload", "moe", "host_bw")
    assert shown("sglang") == ("offload", "host_bw")
    assert shown("tensorrt-llm") == ()
    # a setting the engine lacks still shows while it is set, to carry its error
    assert shown("sglang", layers="5") == ("offload", "layers", "host_bw")


def test_the_n_cpu_moe_flag_comes_from_the_request() -> None:
    config = replace(GLM_AIR_CONFIG, moe_layers=12, offloaded_bytes=19 * 10**9)
    text = launch_commands(config)["llama.cpp"].text or ""
    flat = " ".join(text.replace("\\\n", " ").split())
    assert "-ngl 999" in flat and flat.endswith("--n-cpu-moe 12")
    assert "--cpu-moe" not in flat
