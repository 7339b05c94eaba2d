"""A config.json's sizes are bounded before the estimator walks them: a header claiming
2^40 layers once kept a worker busy for minutes (the estimator walks layers one by one),
and 10,000 layers, the old ceiling, still cost 2.7 s an analysed estimate. The bounds
(estimator.model.fields) are the largest published models' with a margin of about four."""

from __future__ import annotations

import pytest

from estimator.api import RequestError, estimate

DEVICE = {"memory_gb": 24, "bandwidth_gbps": 1000, "fp16_tflops": 100}


def request(**config: object) -> dict[str, object]:
    hf = {
        "model_type": "llama",
        "hidden_size": 256,
        "num_attention_heads": 4,
        "num_hidden_layers": 4,
        **config,
    }
    return {
        "model": {"hf_config": hf},
        "weights": {"format": "gguf", "quant": "Q4_K_M"},
        "device": DEVICE,
        "workload": {"context_tokens": 1024},
    }


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("num_hidden_layers", 2**40, "must be <= 512"),
        ("num_hidden_layers", 513, "must be <= 512"),
        ("hidden_size", 65_537, "must be <= 65536"),
        ("intermediate_size", 2**60, "must be <= 9007199254740992"),
    ],
)
def test_absurd_sizes_are_refused_at_once(key: str, value: int, words: str) -> None:
    with pytest.raises(RequestError) as caught:
        estimate(request(**{key: value}))
    assert key in caught.value.field and words in caught.value.message


MOE = {"num_key_value_heads": 4}  # the MoE classes' default of 8 does not divide 4 heads


# Every parser is bounded, not only Llama's: the generic fallback parser (an unknown
# model_type) read any layer count and planned 10**6 layers for minutes; a per-layer
# pattern states the depth by its length; MoE parsers read their expert counts each under
# their own key. (None: the request's default key left out, so the alias is read.)
@pytest.mark.parametrize(
    ("config", "key", "words"),
    [
        ({"model_type": "unknown-arch", "num_hidden_layers": 513}, "num_hidden_layers", "512"),
        (
            {"model_type": "unknown-arch", "num_hidden_layers": None, "n_layer": 10**6},
            "n_layer",
            "512",
        ),
        (
            {"model_type": "unknown-arch", "num_hidden_layers": None, "layer_types": ["x"] * 513},
            "layer_types",
            "must be <= 512, got 513",
        ),
        (
            {"model_type": "unknown-arch", "hidden_size": None, "d_model": 65_537},
            "hidden_size",
            "65536",
        ),
        ({"model_type": "unknown-arch", "num_experts": 4_097}, "num_experts", "4096"),
        ({"model_type": "mixtral", **MOE, "num_local_experts": 4_097}, "num_local_experts", "4"),
        ({"model_type": "deepseek_v3", **MOE, "n_routed_experts": 4_097}, "n_routed_experts", "4"),
        ({"model_type": "qwen3_moe", **MOE, "num_experts": 4_097}, "num_experts", "<= 4096"),
    ],
)
def test_every_parser_bounds_layers_width_and_experts(
    config: dict[str, object], key: str, words: str
) -> None:
    with pytest.raises(RequestError) as caught:
        estimate(request(**config))
    assert caught.value.field.endswith(key) and words in caught.value.message


def test_the_largest_published_models_are_well_inside_the_bounds() -> None:
    # Llama 3.1 405B: 126 layers of width 16,384; Kimi K3 (text_config): 896 experts.
    assert estimate(request(num_hidden_layers=126, hidden_size=16_384, num_attention_heads=128))
    moe = {"model_type": "qwen3_moe", "num_experts": 896, "num_experts_per_tok": 8}
    assert estimate(request(**moe))["params_total"] > 0


def test_the_deepest_allowed_model_still_sizes() -> None:
    # The ceiling itself is accepted and counted layer by layer: with one layer's
    # parameters L = p(2) - p(1) and the rest (embeddings, final norm) E = p(1) - L,
    # 512 layers hold E + 512 L.
    one, two = (estimate(request(num_hidden_layers=n))["params_total"] for n in (1, 2))
    layer = two - one
    deepest = estimate(request(num_hidden_layers=512))["params_total"]
    assert deepest == (one - layer) + 512 * layer
