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
    # The per-device total is below the usable memory, yet vLLM would not start at its
    # default share: the pool for one sequence needs 131,072 x 73,728 B = 9,663,676,416 B,
    # so weights 65,248,815,744 + overhead 3,373,185,105 + pool = 78,285,677,265 B, above
    # 0.9 x 85,029,615,043 = 76,526,653,538 B but within 0.95 x total = 80,778,134,290 B:
    # tight, and it starts at the next 0.01 step above 78,285,677,265 / 85,029,615,043 =
    # 0.9207, i.e. 0.93. (Published P14: vLLM still refused at 0.95 in #27508, so the
    # estimator's need is low for this model: tests/catalog/test_public_cases.py.)
    assert full["per_device_bytes"] < full["usable_bytes_per_device"]
    assert full["fit"]["verdict"] == "tight"
    assert full["fit"]["within_default_margin"] is True
    assert full["fit"]["start_flags"] == ["--gpu-memory-utilization", "0.93"]
    assert full["fit"]["start_memory_share"] == 0.93
    assert full["max_concurrent_sequences"] == 0
    # Past what 0.95 of the device holds (a context the pool cannot hold even then) it
    # does not fit: at a share pinned to 0.95 the most is 0.95 x total.
    body = request(131_072)
    body["device"] = {**body["device"], "memory_gb": 82.0}  # type: ignore[dict-item]
    # 0.95 x 82e9 = 77,900,000,000 < 78,285,677,265: no share up to the cap is enough.
    assert estimate(body)["fit"]["verdict"] == "does_not_fit"


def test_the_sweep_applies_the_same_rule() -> None:
    for context, verdict in ((100_000, "tight"), (131_072, "tight")):
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
