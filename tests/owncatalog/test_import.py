"""Importing a model of our own: a real config.json counts as the public catalog's row of
the same config does; a GGUF header becomes a config and a weights row at the file's
quant; bad input is refused with a message; the row is visible only to its organisation."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied

from catalog.gguf_header import GGUFError
from catalog.models import LLMModel, ModelWeights
from catalog.services.common import CatalogError
from catalog.services.configs import model_import_config
from sizing_site.owncatalog import selectors, services
from tests.owncatalog import ggufs
from tests.owncatalog.base import QWEN3_8B, QWEN3_8B_PARAMS, OwnCase


def gguf_bytes() -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        return ggufs.write_llama_gguf(Path(tmp) / "tiny.gguf").read_bytes()


class ConfigImport(OwnCase):
    def test_a_real_config_counts_as_the_public_row_of_the_same_config(self) -> None:
        public = model_import_config(config=QWEN3_8B, hf_repo="Qwen/Qwen3-8B").model
        own = services.own_model_import_config(
            tenant=self.tenant(self.dave),
            user=self.dave,
            name="Qwen3-8B support fine-tune",
            config=QWEN3_8B,
            hf_repo="Qwen/Qwen3-8B",
            notes="LoRA merged",
        )
        assert public.params_total == QWEN3_8B_PARAMS
        assert own.params_total == public.params_total == QWEN3_8B_PARAMS
        assert own.params_active == public.params_active
        assert own.max_context_tokens == 40_960  # max_position_embeddings
        assert own.organization == self.org_a and own.origin == "admin"
        assert own.slug.startswith("qwen3-8b-support-fine-tune-") and len(own.slug) == 27 + 8
        assert own.sources["config"].startswith("Imported by Org A from config.json on ")
        assert own.history.get().history_user == self.dave

    def test_the_own_row_is_hidden_from_plain_reads_and_other_organisations(self) -> None:
        own = services.own_model_import_config(
            tenant=self.tenant(), user=self.alice, name="Secret model", config=QWEN3_8B
        )
        assert not LLMModel.objects.filter(slug=own.slug).exists()
        assert LLMModel.objects.visible_to([self.org_a]).filter(slug=own.slug).exists()
        assert not LLMModel.objects.visible_to([self.org_b]).filter(slug=own.slug).exists()
        assert list(selectors.own_model_list(tenant=self.tenant())) == [own]
        assert list(selectors.own_model_list(tenant=self.tenant(self.charlie, "org-b"))) == []

    def test_two_imports_of_one_name_get_different_slugs(self) -> None:
        a = services.own_model_import_config(
            tenant=self.tenant(), user=self.alice, name="Same", config=QWEN3_8B
        )
        b = services.own_model_import_config(
            tenant=self.tenant(self.charlie, "org-b"),
            user=self.charlie,
            name="Same",
            config=QWEN3_8B,
        )
        assert a.slug != b.slug and a.slug[:5] == b.slug[:5] == "same-"

    def test_a_config_that_does_not_state_its_size_is_refused(self) -> None:
        with pytest.raises(CatalogError, match="must state the model's size"):
            services.own_model_import_config(
                tenant=self.tenant(), user=self.alice, name="Bare", config={"model_type": "llama"}
            )
        assert not LLMModel.all_orgs.exists()

    def test_a_viewer_cannot_import(self) -> None:
        with pytest.raises(PermissionDenied):
            services.own_model_import_config(
                tenant=self.tenant(self.bob), user=self.bob, name="X", config=QWEN3_8B
            )


class GGUFImport(OwnCase):
    def test_the_header_gives_the_shape_and_a_weights_row_at_the_files_quant(self) -> None:
        data = gguf_bytes()
        model = services.own_model_import_gguf(
            tenant=self.tenant(self.dave),
            user=self.dave,
            name="",
            stream=io.BytesIO(data),
            file_name="tiny.gguf",
            file_size=len(data),
        )
        config = model.config
        assert config["model_type"] == "llama"
        assert (config["num_hidden_layers"], config["hidden_size"]) == (2, 256)
        assert (config["num_attention_heads"], config["num_key_value_heads"]) == (4, 2)
        assert (config["intermediate_size"], config["vocab_size"]) == (512, 64)
        assert config["tie_word_embeddings"] is True
        assert model.params_total == ggufs.PARAMS
        assert model.name == "Tiny own Llama"  # the header's general.name
        assert model.max_context_tokens == 4096
        weights = ModelWeights.objects.get(model=model)
        assert (weights.format, weights.quant, weights.gguf_arch) == ("gguf", "Q4_K_M", "llama")
        # The whole file: the exact size the header implies is the file's own size.
        assert weights.file_bytes == len(data)
        assert weights.tensor_summary["Q8_0"] == {"count": 1, "bytes": 17_408}
        assert weights.tensor_summary["F16"] == {"count": 1, "bytes": 131_072}

    def test_a_header_part_with_the_real_size_is_enough(self) -> None:
        data = gguf_bytes()
        header_end = len(data) - 17_408 - 131_072  # the tensor data is never needed
        model = services.own_model_import_gguf(
            tenant=self.tenant(),
            user=self.alice,
            name="From the header",
            stream=io.BytesIO(data[: header_end - 8]),
            file_name="tiny.gguf",
            file_size=len(data),
        )
        assert ModelWeights.objects.get(model=model).file_bytes == len(data)

    def test_not_a_gguf_or_a_truncated_one_is_refused(self) -> None:
        data = gguf_bytes()
        cases = [
            (b"PK\x03\x04 a zip", "not a GGUF file"),
            (data[:60], "truncated"),
        ]
        for raw, message in cases:
            with pytest.raises(GGUFError, match=message):
                services.own_model_import_gguf(
                    tenant=self.tenant(),
                    user=self.alice,
                    name="Bad",
                    stream=io.BytesIO(raw),
                    file_name="bad.gguf",
                    file_size=len(raw),
                )
        # A header whose tensors end past the real file's size.
        with pytest.raises(GGUFError, match="truncated or corrupt"):
            services.own_model_import_gguf(
                tenant=self.tenant(),
                user=self.alice,
                name="Short",
                stream=io.BytesIO(data),
                file_name="short.gguf",
                file_size=len(data) - 1000,
            )
        assert not LLMModel.all_orgs.exists()

    def test_a_moe_header_names_its_experts(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            data = ggufs.write_qwen3moe_gguf(Path(tmp) / "moe.gguf").read_bytes()
        model = services.own_model_import_gguf(
            tenant=self.tenant(),
            user=self.alice,
            name="MoE",
            stream=io.BytesIO(data),
            file_name="moe.gguf",
            file_size=len(data),
        )
        config = model.config
        assert config["model_type"] == "qwen3_moe"
        assert (config["num_experts"], config["num_experts_per_tok"]) == (4, 2)
        assert (config["moe_intermediate_size"], config["head_dim"]) == (128, 64)
        assert model.architecture == "moe"
        assert (model.params_total, model.params_active) == (ggufs.MOE_PARAMS, ggufs.MOE_ACTIVE)
        # No general.file_type: the type holding the most matrix bytes.
        assert model.weights.get().quant == "Q8_0"


class HostileHeaders(OwnCase):
    """Crafted GGUF metadata is refused with a message, quickly (the reviewer's cases: a
    2^40-layer header kept a worker busy for minutes; NaN or infinity gave a 500)."""

    def load(self, **kwargs: object) -> LLMModel:
        with tempfile.TemporaryDirectory() as tmp:
            data = ggufs.hostile_llama_gguf(Path(tmp) / "h.gguf", **kwargs).read_bytes()  # type: ignore[arg-type]
        return services.own_model_import_gguf(
            tenant=self.tenant(self.dave),
            user=self.dave,
            name="Hostile",
            stream=io.BytesIO(data),
            file_name="h.gguf",
            file_size=len(data),
        )

    def test_absurd_or_non_finite_layer_counts_are_refused(self) -> None:
        for block_count, words in (
            (2**40, "must be <= 512"),  # the estimator's ceiling on layers
            (513, "must be <= 512"),
            (float("inf"), "llama.block_count"),  # not a count: "has no llama.block_count"
            (float("nan"), "llama.block_count"),
            (2.5, "llama.block_count"),
        ):
            with pytest.raises(CatalogError) as caught:
                self.load(block_count=block_count)
            assert words in caught.value.message, (block_count, caught.value.message)

    def test_a_non_finite_epsilon_is_left_out_not_stored(self) -> None:
        model = self.load(block_count=2, eps=float("nan"))
        assert "rms_norm_eps" not in model.config
        assert model.config["num_hidden_layers"] == 2
