"""The configurator's form: weights formats grouped, in quality
order and filtered by engine, with a note when a switch drops one; errors in place and named
by their field's label; a zero context answered with a 400 and no figures."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from django.urls import reverse
from django.utils import translation
from django.utils.functional import Promise

from catalog.hardware import EngineChoice
from catalog.sizing import GGUF_QUANTS
from catalog.sizing.specs import LayerCounts
from estimator.weights import HF_FORMATS
from estimator.weights.gguf_types import RECIPE_BASE, UD_RECIPES
from sizing_site.configurator.fields import GGUF_ORDER, HF_ORDER, weights_choices
from sizing_site.configurator.forms import ConfigureForm
from tests.configurator.test_views import GlmOnA100

QUANT_FORMATS = Path(__file__).resolve().parents[2] / "catalog" / "data" / "quant_formats.csv"
GLM_LAYERS = LayerCounts(46, moe=True)  # GLM-4.5-Air: num_hidden_layers 46, 128 experts


def choice(engine: str, backend: str = "cuda") -> EngineChoice:
    return EngineChoice(engine, backend, "supported", "", "")


def form(data: dict[str, str], *engines: EngineChoice, **kwargs: object) -> ConfigureForm:
    return ConfigureForm(
        data,
        max_context_tokens=131072,
        engines=engines or (choice("llama.cpp"),),
        layers=GLM_LAYERS,
        **kwargs,  # type: ignore[arg-type]
    )


def flat(groups: list[tuple[str, list[tuple[str, str]]]]) -> list[str]:
    return [value for _label, options in groups for value, _text in options]


def quality_ranks() -> dict[str, int]:
    with QUANT_FORMATS.open(newline="") as fh:
        return {row["name"]: int(row["quality_rank"]) for row in csv.DictReader(fh)}


# --- the order: least compressed first --------------------------------------------------


def test_every_format_is_listed_once() -> None:
    assert sorted(GGUF_ORDER) == sorted(GGUF_QUANTS) and len(GGUF_ORDER) == 46
    assert sorted(HF_ORDER) == sorted(HF_FORMATS) and len(HF_ORDER) == 9


def test_ranked_formats_come_in_falling_quality_rank() -> None:
    # catalog/data/quant_formats.csv ranks 40 formats; read down each family's list, the
    # ranks never rise (F32 100, F16 99, BF16 99, Q8_0 90, ... IQ1_S 20; fp32 100 ... mxfp4 63).
    ranks = quality_ranks()
    for order in (GGUF_ORDER, HF_ORDER):
        ranked = [ranks[q] for q in order if q in ranks]
        assert ranked == sorted(ranked, reverse=True), order
    assert [q for q in GGUF_ORDER if q in ranks][:4] == ["F32", "F16", "BF16", "Q8_0"]
    assert GGUF_ORDER[-1] == "IQ1_S" and HF_ORDER[-1] == "mxfp4"


def test_an_uploader_recipe_sits_just_above_the_type_it_builds_on() -> None:
    # Q4_K_L is Q4_K_M with Q8_0 embeddings/output: it comes right before Q4_K_M, with only
    # other recipes on Q4_K_M (UD-Q4_K_XL) between them.
    bases = {**RECIPE_BASE, **{name: recipe.base for name, recipe in UD_RECIPES.items()}}
    for recipe, base in bases.items():
        start, end = GGUF_ORDER.index(recipe), GGUF_ORDER.index(base)
        assert start < end, recipe
        assert all(bases.get(q) == base for q in GGUF_ORDER[start:end]), recipe


# --- the filter: what the engine loads --------------------------------------------------


def test_llama_cpp_gets_gguf_groups_by_bits() -> None:
    with translation.override("en"):
        choices = weights_choices("llama.cpp", "cuda", moe=True)
    assert [label for label, _ in choices.groups] == [
        "GGUF · unquantized",
        *(f"GGUF · {bits}-bit" for bits in (8, 6, 5, 4, 3, 2, 1)),
    ]
    assert flat(choices.groups) == list(GGUF_ORDER)
    # Each option names its quality tier (estimator.quality): a recipe takes its base's.
    assert choices.groups[4][1][:3] == [
        ("UD-Q4_K_XL", "UD-Q4_K_XL · recommended"),
        ("Q4_K_L", "Q4_K_L · recommended"),
        ("Q4_K_M", "Q4_K_M · recommended"),
    ]


def test_servers_get_hugging_face_formats_and_nvfp4_only_on_nvidia() -> None:
    with translation.override("en"):
        vllm = weights_choices("vllm", "cuda", moe=True)
        rocm = weights_choices("vllm", "rocm", moe=True)
        trt = weights_choices("tensorrt-llm", "cuda", moe=True)
        mlx = weights_choices("mlx", "metal", moe=True)
    assert vllm.formats == HF_ORDER  # fp32, bf16, fp16, fp8, w8a8, nvfp4, awq, gptq, mxfp4
    assert [label for label, _ in vllm.groups] == [
        "Hugging Face · unquantized",
        "Hugging Face · 8-bit",
        "Hugging Face · 4-bit",
    ]
    assert "nvfp4" not in rocm.formats and len(rocm.formats) == 8  # NVFP4 needs cuda
    assert "w8a8" not in trt.formats and "fp32" not in trt.formats  # no recipe for them
    assert mlx.formats == ("bf16", "fp16") and mlx.groups[0][0] == "MLX · unquantized"


def test_a_dense_model_is_not_offered_the_experts_only_gguf() -> None:
    assert "MXFP4_MOE" not in weights_choices("llama.cpp", "cuda", moe=False).formats
    assert "MXFP4_MOE" in weights_choices("llama.cpp", "cuda", moe=True).formats


def test_the_select_has_the_engines_formats_only() -> None:
    vllm = str(form({"engine": "vllm"}, choice("llama.cpp"), choice("vllm"))["quant"])
    assert '<option value="awq-int4">' in vllm and '<option value="Q4_K_M">' not in vllm
    assert vllm.count("<optgroup") == 3
    llama = str(form({})["quant"])
    assert llama.count("<optgroup") == 8 and '<option value="awq-int4">' not in llama
    assert llama.index('"Q8_0"') < llama.index('"Q4_K_M"') < llama.index('"IQ1_S"')


def test_a_format_the_new_engine_cannot_load_falls_back_with_a_note() -> None:
    switched = form({"engine": "vllm", "quant": "Q4_K_M"}, choice("llama.cpp"), choice("vllm"))
    assert switched.is_valid(), switched.errors
    assert switched.cleaned_data["quant"] == ""  # the best that fits, for vLLM
    with translation.override("en"):
        assert switched.quant_note == (
            "vLLM does not load Q4_K_M: showing the best that fits instead."
        )
    # a format the engine loads, and a name nobody knows, are left to the field
    assert form({"quant": "Q4_K_M"}).quant_note == ""
    unknown = form({"quant": "Q9_X"})
    assert not unknown.is_valid() and "quant" in unknown.errors


def test_an_engine_without_a_backend_on_the_card_is_an_error_on_the_engine() -> None:
    # The support matrix lists MLX's experimental CUDA build; the page offers MLX on Apple
    # silicon only (estimator.engines launch_backends), so no format loads: the engine is at
    # fault, not KV.
    mlx = form({"engine": "mlx"}, choice("llama.cpp"), choice("mlx", "cuda"))
    assert not mlx.is_valid()
    assert list(mlx.errors) == ["engine"] and "metal" in mlx.errors["engine"][0]


def test_every_field_has_a_label_marked_for_translation() -> None:
    for name, field in form({}).fields.items():
        assert isinstance(field.label, Promise), name


# --- the page: the note, the swap, errors in place --------------------------------------


class FormOnThePage(GlmOnA100):
    def setUp(self) -> None:
        self.client.force_login(self.bob)

    def url(self, lang: str = "en") -> str:
        with translation.override(lang):
            return reverse("configurator:configure", args=[self.model.slug, self.card.slug])

    def test_switching_to_vllm_keeps_a_200_and_sizes_an_hf_format(self) -> None:
        response = self.client.get(self.url(), {"engine": "vllm", "quant": "Q4_K_M"})
        body = response.content.decode()
        assert response.status_code == 200
        assert response.context["setup"].quant in HF_ORDER
        # the note sits in the quant's own field, after its select
        field = re.search(r'<div class="cfg-field" id="field-quant">.*?</div>', body, re.S)
        assert field is not None
        assert "vLLM does not load Q4_K_M: showing the best that fits instead." in field[0]
        assert "<optgroup" in field[0] and "Q4_K_M" not in field[0].split("</small>")[-1]

    def test_an_htmx_answer_carries_the_engines_select_out_of_band(self) -> None:
        response = self.client.get(
            self.url(), {"engine": "vllm", "quant": "Q4_K_M"}, HTTP_HX_REQUEST="true"
        )
        body = response.content.decode()
        assert response.status_code == 200 and "<html" not in body
        assert '<div class="cfg-field" id="field-quant" hx-swap-oob="true">' in body
        assert '<details class="cfg-offload" id="cfg-offload" data-keep-open' in body
        assert 'label="Hugging Face · 4-bit"' in body and 'label="GGUF' not in body
        # the swapped select keeps "best that fits" (as sent), naming what it chose
        sized = response.context["setup"].quant
        assert f'<option value="" selected>Best that fits ({sized})</option>' in body

    def test_a_zero_context_is_a_400_with_the_error_by_the_field_and_no_verdict(self) -> None:
        response = self.client.get(self.url(), {"ctx": "0", "quant": "Q4_K_M"})
        body = response.content.decode()
        assert response.status_code == 400
        assert response.context.get("result") is None and "data-answer=" not in body
        message = "Ensure this value is greater than or equal to 1."
        assert f'<span class="field-error" id="err-ctx">{message}</span>' in body
        # the summary names the field by its label and links to it; no "ctx:" anywhere
        assert f'<a href="#id_ctx">Context (tokens)</a>: {message}' in body
        assert "ctx:" not in body
        # the browser does not block the value: the form lets the server answer
        assert re.search(r"<form [^>]*novalidate", body)
        assert 'data-stale-target="#results"' in body
        fixed = self.client.get(self.url(), {"ctx": "8192", "quant": "Q4_K_M"})
        assert fixed.status_code == 200 and fixed.context["result"] is not None

    def test_a_zero_gpu_count_over_htmx_clears_the_figures_and_marks_the_field(self) -> None:
        response = self.client.get(
            self.url(), {"gpus": "0", "quant": "Q4_K_M"}, HTTP_HX_REQUEST="true"
        )
        body = response.content.decode()
        assert response.status_code == 400 and body.lstrip().startswith('<div id="results"')
        message = "Ensure this value is greater than or equal to 1."
        assert f'<span class="field-error" id="err-gpus" hx-swap-oob="true">{message}' in body
        assert '<a href="#id_gpus">GPUs</a>' in body and "data-answer=" not in body
        assert '<div id="results"' in body and "Memory" not in body

    def test_errors_are_named_by_their_label_in_german_too(self) -> None:
        response = self.client.get(self.url("de"), {"gpus": "0"})
        body = response.content.decode()
        with translation.override("de"):
            label = str(ConfigureForm.base_fields["gpus"].label)
        assert response.status_code == 400
        assert f'<a href="#id_gpus">{label}</a>: ' in body and "gpus:" not in body


def test_the_engine_select_offers_only_the_engines_that_run_on_the_card() -> None:
    both = form({}, choice("llama.cpp"), choice("vllm"))
    select = str(both["engine"])
    assert '<option value="llama.cpp"' in select and '<option value="vllm"' in select
    assert '<option value="mlx"' not in select and '<option value="sglang"' not in select
    # One sent from an old link is still answered with the engines that do run there.
    sent = form({"engine": "mlx"}, choice("llama.cpp"), choice("vllm"), card_name="H100")
    assert not sent.is_valid()
    with translation.override("en"):
        assert sent.errors["engine"] == [
            "MLX does not run on H100. Engines that do: llama.cpp, vLLM."
        ]


def test_fp4_checkpoints_are_offered_only_on_cards_that_run_them() -> None:
    # estimator.engines QUANT_HARDWARE: NVFP4 on NVIDIA Blackwell only; MXFP4 from Ampere.
    vllm = choice("vllm")
    hopper = form({"engine": "vllm"}, vllm, architecture="Hopper").weights.formats
    blackwell = form({"engine": "vllm"}, vllm, architecture="Blackwell").weights.formats
    assert "nvfp4" not in hopper and "mxfp4" in hopper and "fp8" in hopper
    assert "nvfp4" in blackwell and "mxfp4" in blackwell
    # A link that asks for NVFP4 on a Hopper card gets the best that fits, and why.
    sent = form({"engine": "vllm", "quant": "nvfp4"}, vllm, architecture="Hopper", card_name="H100")
    assert sent.is_valid(), sent.errors
    assert sent.cleaned_data["quant"] == ""
    with translation.override("en"):
        assert sent.quant_note == "nvfp4 does not run on H100: showing the best that fits instead."
