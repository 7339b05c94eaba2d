"""What a memory budget holds: vLLM's "GPU KV cache size" in tokens and its maximum
concurrency, and the longest context whose cache fits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.kv.cache import kv_cache_bytes
from estimator.kv.cells import VLLM_BLOCK_SIZE, KVSettings
from estimator.kv.rows import kv_bytes_per_token

if TYPE_CHECKING:
    from estimator.model.spec import ModelSpec


def kv_tokens_that_fit(
    model: ModelSpec,
    budget_bytes: int,
    *,
    kv_dtype: str = "bf16",
    mla_layout: str = "latent",
    block_size: int = VLLM_BLOCK_SIZE,
    tensor_parallel: int = 1,
) -> int:
    """vLLM's "GPU KV cache size" in tokens for a per-rank KV budget.

    blocks = budget // (block_size x bytes_per_token), tokens = blocks x block_size, with
    bytes_per_token over every attention layer (kv_bytes_per_token, per rank). vLLM's hybrid
    allocator reports num_blocks // n_groups x block_size with each group's tensors shared,
    which is the same figure to within one block: sliding layers count in full here too.
    """
    per_token = kv_bytes_per_token(
        model, kv_dtype=kv_dtype, mla_layout=mla_layout, tensor_parallel=tensor_parallel
    )
    if per_token == 0 or budget_bytes <= 0:
        return 0
    return int(budget_bytes // (block_size * per_token)) * block_size


def vllm_max_concurrency(
    model: ModelSpec,
    *,
    kv_tokens: int,
    max_model_len: int,
    kv_dtype: str = "bf16",
    settings: KVSettings | None = None,
) -> float:
    """vLLM's "Maximum concurrency for N tokens per request": KV pool / one request's need.

    pool = kv_tokens x bytes_per_token; one request needs paged_cells(layer, max_model_len)
    x row bytes summed over layers, so sliding windows lower the need
    (get_max_concurrency_for_kv_cache_config in vllm/v1/core/kv_cache_utils.py).
    """
    settings = settings or KVSettings()
    tp = settings.tensor_parallel
    per_token = kv_bytes_per_token(model, kv_dtype=kv_dtype, tensor_parallel=tp)
    cache = kv_cache_bytes(
        model,
        engine="vllm",
        context_tokens=max_model_len,
        kv_dtype=kv_dtype,
        settings=settings,
    )
    need = (cache.total_bytes - cache.state_bytes) // tp
    return kv_tokens * per_token / need if need else float("inf")


def max_context_that_fits(
    model: ModelSpec,
    budget_bytes: int,
    *,
    engine: str,
    sequences: int = 1,
    kv_dtype: str = "f16",
    mla_layout: str | None = None,
    settings: KVSettings | None = None,
) -> int:
    """Largest per-sequence context whose KV cache (kv_cache_bytes) fits in budget_bytes.

    Bisection over context tokens (the cache never shrinks as context grows); 0 if even
    one token does not fit. Capped at the longest context the config allows, RoPE scaling
    included (ModelSpec.extended_context_tokens).
    """

    def fits(tokens: int) -> bool:
        cache = kv_cache_bytes(
            model,
            engine=engine,
            context_tokens=tokens,
            sequences=sequences,
            kv_dtype=kv_dtype,
            mla_layout=mla_layout,
            settings=settings,
        )
        return cache.total_bytes <= budget_bytes

    low, high = 0, max(1, model.extended_context_tokens)
    if fits(high):
        return high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low
