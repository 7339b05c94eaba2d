"""A config.json's sizes are bounded before the estimator walks them: a header claiming
2^40 layers once kept a worker busy for minutes (the estimator walks layers one by one)."""

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
        ("num_hidden_layers", 2**40, "must be <= 10000"),
        ("num_hidden_layers", 10_001, "must be <= 10000"),
        ("intermediate_size", 2**60, "must be <= 9007199254740992"),
    ],
)
def test_absurd_sizes_are_refused_at_once(key: str, value: int, words: str) -> None:
    with pytest.raises(RequestError) as caught:
        estimate(request(**{key: value}))
    assert key in caught.value.field and words in caught.value.message


def test_the_deepest_allowed_model_still_sizes() -> None:
    # The ceiling itself is accepted and counted layer by layer: with one layer's
    # parameters L = p(2) - p(1) and the rest (embeddings, final norm) E = p(1) - L,
    # 10,000 layers hold E + 10,000 L.
    one, two = (estimate(request(num_hidden_layers=n))["params_total"] for n in (1, 2))
    layer = two - one
    deepest = estimate(request(num_hidden_layers=10_000))["params_total"]
    assert deepest == (one - layer) + 10_000 * layer
