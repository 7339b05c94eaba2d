"""The estimator keeps each weights breakdown compact (estimator.api.cache.weights): the
totals and per-layer bytes whole, per-tensor bytes only for what an estimate looks up
(routed experts, token_embd), no per-tensor types. Every figure an estimate reads is the
whole breakdown's."""

from __future__ import annotations

import json
from pathlib import Path

from estimator.api import cache
from estimator.api.run import first_layers_expert_bytes, pipeline_stage_bytes
from estimator.api.schema import WeightsSpec
from estimator.weights import weights_breakdown

CONFIGS = Path(__file__).resolve().parents[2] / "estimator/data/validation/configs"


def text(name: str) -> str:
    return json.dumps(json.loads((CONFIGS / name).read_text()), sort_keys=True)


def test_a_moe_breakdown_keeps_its_experts_and_token_embd_only() -> None:
    config = text("Qwen__Qwen3-30B-A3B.json")
    model = cache.model_spec(config)
    spec = WeightsSpec("gguf", quant="Q4_K_M")
    whole = weights_breakdown(model, cache.weights_format(spec))
    kept = cache.weights(config, spec)
    assert kept.tensor_types == {} and whole.tensor_types
    assert whole.tensor_bytes is not None and kept.tensor_bytes is not None
    experts = {t.name for t in model.text_tensors if t.kind == "expert"}
    assert set(kept.tensor_bytes) == experts | {"token_embd"}
    assert len(experts) == 3 * 48  # gate, up and down of each of the 48 layers
    for field in ("total_bytes", "expert_bytes", "per_layer_bytes", "non_layer_bytes"):
        assert getattr(kept, field) == getattr(whole, field)
    # --n-cpu-moe 10: the routed experts of blk.0 ... blk.9, the same from either.
    assert (
        first_layers_expert_bytes(model, kept, 10)
        == first_layers_expert_bytes(model, whole, 10)
        > 0
    )
    assert pipeline_stage_bytes(kept, 4, 0) == pipeline_stage_bytes(whole, 4, 0)


def test_a_dense_breakdown_keeps_token_embd() -> None:
    config = text("meta-llama__Llama-3.1-8B-Instruct.json")
    model = cache.model_spec(config)
    spec = WeightsSpec("hf", dtype="bf16")
    whole = weights_breakdown(model, cache.weights_format(spec))
    kept = cache.weights(config, spec)
    assert kept.tensor_bytes is not None
    # token_embd: 128,256 tokens x 4,096 wide x 2 bytes (bf16) = 1,050,673,152 bytes
    assert kept.tensor_bytes == {"token_embd": 128_256 * 4_096 * 2}
    assert kept.total_bytes == whole.total_bytes
    assert pipeline_stage_bytes(kept, 2, 0) == pipeline_stage_bytes(whole, 2, 0)
