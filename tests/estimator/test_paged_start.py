"""vLLM's start-up rule: the KV block pool must hold one sequence of max_model_len.

Published case (tests/data/PUBLIC_CASES.md, P13/P14): gpt-oss-120b in vLLM on one H100
80 GB runs with --max-model-len 100000 but not at the default 131072 (vLLM issues #23278,
#27508). The per-device total alone says 131072 fits (the sliding-window layers cache 128
tokens), but vLLM pages every layer group alike, so its pool holds fewer tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

from estimator.api import estimate, parse_request
from estimator.api.sweep import sweep

CONFIG = json.loads(
    (
        Path(__file__).resolve().parents[2]
        / "estimator/data/validation/configs/openai__gpt-oss-120b.json"
    ).read_text()
)
# The H100 80 GB's total as vLLM logs it: 79.19 GiB, in the contract's decimal GB.
H100_GB = 79.19 * 2**30 / 1e9


def request(context_tokens: int) -> dict[str, object]:
    return {
        "model": {"hf_config": CONFIG},
        "weights": {"format": "hf", "dtype": "mxfp4"},
        "device": {"memory_gb": H100_GB, "bandwidth_gbps": 3350, "name": "H100 SXM5 80GB"},
        "engine": {"name": "vllm"},
        "workload": {"context_tokens": context_tokens},
    }


def test_the_pool_holds_100k_but_not_one_131k_sequence() -> None:
    short, full = estimate(request(100_000)), estimate(request(131_072))
    # The pool is the same at both lengths; it sits between the two contexts.
    assert short["kv_cache_capacity_tokens"] == full["kv_cache_capacity_tokens"]
    assert 100_000 <= full["kv_cache_capacity_tokens"] < 131_072
    assert short["fit"]["verdict"] != "does_not_fit"
    # The per-device total is below the usable memory, yet vLLM would not start.
    assert full["per_device_bytes"] < full["usable_bytes_per_device"]
    assert full["fit"]["verdict"] == "does_not_fit"
    assert full["max_concurrent_sequences"] == 0


def test_the_sweep_applies_the_same_rule() -> None:
    for context, verdict in ((100_000, "tight"), (131_072, "does_not_fit")):
        parsed = parse_request(request(context))
        row = sweep(parsed, [parsed.device], ["mxfp4"])[0]
        assert row.verdict == verdict == estimate(request(context))["fit"]["verdict"]


def test_llama_cpp_has_no_such_rule() -> None:
    # llama.cpp allocates the cache it is asked for: the memory total alone decides.
    body = request(131_072)
    body["engine"] = {"name": "llama.cpp"}
    body["weights"] = {"format": "gguf", "quant": "MXFP4_MOE"}
    result = estimate(body)
    assert (result["fit"]["verdict"] == "does_not_fit") == (
        result["per_device_bytes"] > result["usable_bytes_per_device"]
    )
