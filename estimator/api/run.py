"""run_estimate: a validated `Request` in, a `Result` out.

This module only places things (which bytes sit on which device, what is offloaded) and
composes the figures of the sibling modules; the formulas live in model, weights, kv,
memory and speed, and each figure's explanation entry names its source module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from estimator import kv as kvmod
from estimator import memory
from estimator.api import cache
from estimator.api.calibrated import speed_calibration, speed_family_section
from estimator.api.compute_rate import compute_notes, compute_rate_section, compute_warnings
from estimator.api.explain import explanation
from estimator.api.extras import serving_section
from estimator.api.fields import RequestError
from estimator.api.fit import judge_fit, paged_need_bytes
from estimator.api.placement import Budget, KVPlacement, Placement
from estimator.api.schema import Fit, Request, Result, metal_working_set
from estimator.api.speeds import Speeds, estimate_speeds
from estimator.engines import llama_family
from estimator.model import ModelSpec
from estimator.units import GB
from estimator.weights import REPACK_BASE, WeightsBreakdown

# The largest context or batch a capacity search considers (2^27 tokens or sequences).
SEARCH_LIMIT = 2**27


def context_limit(request: Request, model: ModelSpec) -> int:
    """The longest context a request may ask for: max_position_embeddings, the longer
    length the config's RoPE scaling reaches (ModelSpec.extended_context_tokens: a Qwen3
    config with the card's YaRN block, factor 4 x 32,768 = 131,072), or the one a model
    card states (model.max_context_tokens, from the catalog)."""
    return model.allowed_context_tokens(request.model.max_context_tokens)


def check_model(request: Request, model: ModelSpec) -> None:
    """Model-dependent request checks: layers present, context within the model's maximum
    (context_limit; a context beyond the native length notes the RoPE scaling it needs)."""
    if model.n_layers < 1 or not model.layers:
        raise RequestError("model.hf_config.num_hidden_layers", "the config has no layers")
    limit = context_limit(request, model)
    if request.workload.context_tokens > limit:
        scaled = ""
        if limit > model.max_context_tokens:
            scaled = f" with RoPE scaling ({model.rope_scaling_type or 'model card'})"
        raise RequestError(
            "workload.context_tokens",
            f"{request.workload.context_tokens} exceeds the model's maximum "
            f"context of {limit} tokens{scaled}",
        )
    if (
        request.workload.offload.layers is not None
        and request.workload.offload.layers > model.n_layers
    ):
        raise RequestError("workload.offload.layers", f"the model has {model.n_layers} layers")
    moe_layers = request.workload.offload.moe_layers
    if moe_layers is not None and moe_layers > model.n_layers:
        raise RequestError("workload.offload.moe_layers", f"the model has {model.n_layers} layers")


def offloaded_layer_count(request: Request, model: ModelSpec) -> int:
    """Layers kept in host memory: offload.layers, or round(fraction x n_layers).

    Unified memory (Apple, DGX Spark, Strix Halo) has no separate host pool: 0.
    """
    if request.device.memory_kind == "unified":
        return 0
    offload = request.workload.offload
    if offload.layers is not None:
        return offload.layers
    return round(offload.fraction * model.n_layers)


def place_weights(request: Request, model: ModelSpec, wb: WeightsBreakdown) -> Placement:
    """Split the weights between host memory and the devices.

    Offloaded layers are the first ones (llama.cpp -ngl N keeps the last N layers on the
    GPU); MoE offload moves every routed expert (llama.cpp --cpu-moe) or those of the
    first moe_layers layers (--n-cpu-moe N: blk.0 to blk.N-1, dense ones included).
    Multimodal towers count only for vLLM-like engines (llama.cpp loads them from a
    separate mmproj file).
    Per device: tensor parallelism splits all but the replicated bytes by TP; a layer split
    (several devices, TP 1) divides the device bytes evenly.
    """
    n_off = offloaded_layer_count(request, model)
    offloaded = sum(wb.per_layer_bytes[:n_off])
    if request.workload.offload.moe_experts and request.device.memory_kind != "unified":
        offloaded = wb.expert_bytes
    elif request.workload.offload.moe_layers and request.device.memory_kind != "unified":
        offloaded = first_layers_expert_bytes(model, wb, request.workload.offload.moe_layers)
    multimodal = 0 if llama_family(request.engine.name) else wb.multimodal_bytes
    on_device = wb.total_bytes - offloaded + multimodal
    tp = request.workload.tensor_parallel
    count = request.device.count
    if tp > 1:
        replicated = min(wb.replicated_bytes, on_device)
        per_device = -(-(on_device - replicated) // tp) + replicated
        split = "tensor"
    elif count > 1 and not llama_family(request.engine.name):
        per_device = pipeline_stage_bytes(wb, count, offloaded) + multimodal
        split = "layer"
    elif count > 1:
        per_device = -(-on_device // count)
        split = "layer"
    else:
        per_device, split = on_device, "none"
    return Placement(wb.total_bytes, multimodal, offloaded, n_off, on_device, per_device, split)


def first_layers_expert_bytes(model: ModelSpec, wb: WeightsBreakdown, layers: int) -> int:
    """Routed-expert bytes of the layers numbered below `layers`, as llama.cpp's
    --n-cpu-moe N overrides blk.0 ... blk.N-1 ffn_*_exps to the CPU."""
    sizes = wb.tensor_bytes or {}
    return sum(
        sizes.get(t.name, 0)
        for t in model.text_tensors
        if t.kind == "expert" and t.layer is not None and t.layer < layers
    )


def pipeline_stage_bytes(wb: WeightsBreakdown, stages: int, offloaded: int) -> int:
    """Largest pipeline stage: layers split as evenly as vLLM does (the remainder on the
    first stages), token_embd on the first stage, output head and final norm on the last.
    Offloaded bytes are taken off evenly (vLLM's --cpu-offload-gb is per device)."""
    layers = wb.per_layer_bytes
    sizes = wb.tensor_bytes or {}
    base, extra = divmod(len(layers), stages)
    stage_bytes, start = [], 0
    for stage in range(stages):
        end = start + base + (1 if stage < extra else 0)
        stage_bytes.append(sum(layers[start:end]))
        start = end
    embd = sizes.get("token_embd", 0)
    stage_bytes[0] += embd
    stage_bytes[-1] += wb.non_layer_bytes - embd
    return max(stage_bytes) - offloaded // stages


def kv_cache(
    request: Request, model: ModelSpec, context_tokens: int, sequences: int
) -> kvmod.KVCache:
    """kv.kv_cache_bytes with the request's engine knobs."""
    engine, workload = request.engine, request.workload
    kv_dtype = engine.type_k or workload.kv_cache_dtype
    settings = kvmod.KVSettings(
        n_ubatch=engine.n_ubatch,
        block_size=engine.block_size,
        swa_full=engine.swa_full,
        max_num_batched_tokens=engine.max_num_batched_tokens or 8192,
        tensor_parallel=workload.tensor_parallel,
    )
    try:
        return kvmod.kv_cache_bytes(
            model,
            engine=engine.name,
            context_tokens=context_tokens,
            sequences=sequences,
            kv_dtype=kv_dtype,
            v_dtype=engine.type_v,
            n_ubatch=engine.n_ubatch,
            flash_attention=engine.flash_attention,
            settings=settings,
            mla_layout=engine.mla_layout,
        )
    except ValueError as exc:
        field = "engine.type_v" if engine.type_v else "workload.kv_cache_dtype"
        raise RequestError(field, str(exc)) from exc


def place_kv(
    request: Request, model: ModelSpec, cache_: kvmod.KVCache, place: Placement
) -> KVPlacement:
    """KV on the devices: llama.cpp keeps an offloaded layer's KV with the layer (host),
    vLLM-like engines keep all KV on the GPU;
    tensor parallelism stores per_rank_bytes on each rank; a layer split divides evenly."""
    share_on_device = 1.0
    if llama_family(request.engine.name):  # vLLM's --cpu-offload-gb moves weights only
        share_on_device -= place.offloaded_layers / model.n_layers
    device_bytes = round(cache_.total_bytes * share_on_device)
    tokens = max(1, cache_.context_tokens * cache_.sequences)
    if place.split == "tensor":
        per_device = round(cache_.per_rank_bytes * share_on_device)
    elif place.split == "layer":
        per_device = -(-device_bytes // request.device.count)
    else:
        per_device = device_bytes
    return KVPlacement(cache_, device_bytes, per_device, per_device / tokens)


def engine_overhead(
    request: Request, model: ModelSpec, context_tokens: int, sequences: int
) -> memory.Overhead:
    """memory.engine_overhead with the request's engine knobs (per device)."""
    engine = request.engine
    return memory.engine_overhead(
        model,
        engine=engine.name,
        context_tokens=context_tokens,
        sequences=sequences,
        n_ubatch=engine.n_ubatch,
        flash_attention=engine.flash_attention,
        max_num_batched_tokens=engine.max_num_batched_tokens or memory.VLLM_MAX_NUM_BATCHED_TOKENS,
        max_num_seqs=engine.max_num_seqs or memory.VLLM_MAX_NUM_SEQS,
        tensor_parallel=request.workload.tensor_parallel,
        mla_layout=engine.mla_layout or kvmod.default_mla_layout(engine.name),
    )


def budget(request: Request, model: ModelSpec, place: Placement) -> Budget:
    """Usable memory per device and what is left for the KV cache after weights + overhead."""
    overhead = engine_overhead(
        request, model, request.workload.context_tokens, request.workload.concurrent_sequences
    )
    usable = memory.usable_bytes_per_device(
        engine=request.engine.name,
        total_bytes=round(request.device.memory_gb * GB),
        unified_memory=metal_working_set(request.device),
        gpu_memory_utilization=request.engine.gpu_memory_utilization,
    )
    left = usable - place.per_device_weights_bytes - overhead.total_bytes
    return Budget(overhead, usable, max(0, left))


def _per_device_kv_bytes(
    request: Request, model: ModelSpec, place: Placement, context_tokens: int, sequences: int
) -> int:
    return place_kv(
        request, model, kv_cache(request, model, context_tokens, sequences), place
    ).per_device_bytes


def kv_capacity_tokens(
    request: Request, model: ModelSpec, place: Placement, kv_budget_bytes: int
) -> int:
    """Tokens of KV that fit in the per-device KV budget.

    vLLM-like: budget // (block_size x bytes per token per rank, all layers) x block_size,
    which is vLLM's "GPU KV cache size" (num_gpu_blocks x block_size). llama.cpp: the
    largest single-sequence context whose cache fits (a search: sliding or linear
    layers make the cache non-linear in context), not capped by the model's maximum.
    """
    if not llama_family(request.engine.name):
        per_token = paged_bytes_per_token(request, model, place.split)
        return block_pool_tokens(kv_budget_bytes, per_token, request.engine.block_size)
    return _largest_fitting(
        lambda tokens: _per_device_kv_bytes(request, model, place, tokens, 1), kv_budget_bytes
    )


def paged_bytes_per_token(request: Request, model: ModelSpec, split: str) -> float:
    """KV bytes one token takes per device in a vLLM-like block pool: every layer (the pool
    pages sliding and full layers alike) on one tensor-parallel rank; a pipeline stage
    (split "layer") caches only its share of the layers."""
    per_token = float(
        kvmod.kv_bytes_per_token(
            model,
            kv_dtype=request.engine.type_k or request.workload.kv_cache_dtype,
            tensor_parallel=request.workload.tensor_parallel,
        )
    )
    return per_token / request.device.count if split == "layer" else per_token


def block_pool_tokens(kv_budget_bytes: int, bytes_per_token: float, block_size: int) -> int:
    """vLLM's "GPU KV cache size": num_gpu_blocks x block_size, with num_gpu_blocks =
    budget // (block_size x bytes per token); 0 for a negative budget or a model that
    caches nothing per token."""
    if bytes_per_token <= 0:
        return 0
    return int(max(0, kv_budget_bytes) // (bytes_per_token * block_size)) * block_size


def _largest_fitting(need: Callable[[int], int], budget: int, upper: int = SEARCH_LIMIT) -> int:
    """Largest n in [1, upper] with need(n) <= budget, 0 if none.

    need never decreases as n grows (KV cells and the compute and output buffers grow
    with context and batch), so every bracketing search finds the same n. The line
    through need(1) and need(upper) guesses it (KV bytes are close to linear in n), steps
    doubling away from the guess bracket it and bisection finishes: about 10 probes where
    doubling from 1 and then bisecting took about 25.
    """
    if upper < 1:
        return 0
    bottom = need(1)
    if bottom > budget:
        return 0
    top = need(upper)
    if top <= budget:
        return upper
    low, high = _bracket(need, budget, bottom, upper, top)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if need(middle) <= budget else (low, middle)
    return low


def _bracket(
    need: Callable[[int], int], budget: int, bottom: int, upper: int, top: int
) -> tuple[int, int]:
    """(low, high) with need(low) <= budget < need(high), given need(1) = bottom <= budget
    < top = need(upper): probe where the line through both ends meets the budget, then
    step away from that guess, starting at the line's distance to the budget and doubling
    the step until the budget is crossed."""
    span, rise = upper - 1, top - bottom
    if span < 2:
        return 1, upper
    guess = min(max(1 + (budget - bottom) * span // rise, 2), upper - 1)
    value = need(guess)
    step = max(1, abs(budget - value) * span // rise)
    if value <= budget:
        low, high = guess, upper
        while low + step < high and need(low + step) <= budget:
            low, step = low + step, step * 2
        return low, min(high, low + step)
    low, high = 1, guess
    while high - step > low and need(high - step) > budget:
        high, step = high - step, step * 2
    return max(low, high - step), high


def _need_with(
    request: Request, model: ModelSpec, place: Placement, context_tokens: int, sequences: int
) -> int:
    """Per-device weights + KV + overhead, both recomputed for this context and batch."""
    kv_bytes = _per_device_kv_bytes(request, model, place, context_tokens, sequences)
    overhead = engine_overhead(request, model, context_tokens, sequences).total_bytes
    return place.per_device_weights_bytes + kv_bytes + overhead


def max_context_tokens(
    request: Request, model: ModelSpec, place: Placement, usable: int, capacity_tokens: int
) -> int:
    """Longest per-sequence context that fits at the requested concurrency, capped at the
    model's maximum. vLLM-like: capacity // sequences (its check that max_model_len fits);
    llama.cpp: search with KV and compute buffer recomputed at each length."""
    sequences = request.workload.concurrent_sequences
    limit = context_limit(request, model)
    if not llama_family(request.engine.name):
        return min(limit, capacity_tokens // sequences)
    if _need_with(request, model, place, limit, sequences) <= usable:
        return limit
    return _largest_fitting(
        lambda n: _need_with(request, model, place, n, sequences),
        usable,
        min(limit - 1, SEARCH_LIMIT),
    )


def max_concurrent_sequences(
    request: Request, model: ModelSpec, place: Placement, usable: int, capacity_tokens: int
) -> int:
    """Sequences of context_tokens that fit at once. vLLM-like: capacity // context (the
    "Maximum concurrency" line vLLM logs, floored); llama.cpp: search over -np with KV and
    compute buffer recomputed; capped at the engine's max_num_seqs for vLLM."""
    context = request.workload.context_tokens
    if not llama_family(request.engine.name):
        return capacity_tokens // context
    return _largest_fitting(lambda n: _need_with(request, model, place, context, n), usable)


def paged_start_fails(request: Request, capacity_tokens: int) -> bool:
    """vLLM-like engines refuse to start when their KV cache cannot hold one sequence of
    max_model_len ("The model's max seq len ... is larger than the maximum number of tokens
    that can be stored in KV cache", vllm/v1/core/kv_cache_utils.py check_enough_kv_cache
    _memory), whatever the per-device total says: hybrid models page every layer group
    alike, so their block pool holds fewer tokens than the windowed cache size suggests."""
    return (
        not llama_family(request.engine.name) and capacity_tokens < request.workload.context_tokens
    )


def _warnings(
    request: Request,
    place: Placement,
    overhead: memory.Overhead,
    speeds: Speeds,
    uncalibrated: tuple[str, ...],
) -> tuple[str, ...]:
    out = list(overhead.notes)
    host = request.device.host_memory_gb
    if place.offloaded_bytes and host is not None and place.offloaded_bytes > host * GB:
        out.append("the offloaded weights exceed device.host_memory_gb")
    if place.offloaded_bytes and request.device.host_bandwidth_gbps is None:
        out.append(f"host bandwidth not given: assumed {speeds.host_bandwidth_gbps} GB/s")
    if request.device.memory_kind == "unified" and (
        request.workload.offload.layers
        or request.workload.offload.fraction
        or request.workload.offload.moe_experts
        or request.workload.offload.moe_layers
    ):
        out.append("offload ignored: unified memory has no separate host pool")
    if speeds.prefill is None:
        out.append("prefill and TTFT need device.fp16_tflops (and prompt_tokens > 0)")
    out.extend(compute_warnings(request.device))
    out.extend(uncalibrated)
    if request.weights.format == "gguf" and not llama_family(request.engine.name):
        out.append(f"{request.engine.name} GGUF support is experimental")
    if place.split == "layer" and not llama_family(request.engine.name):
        out.append("several devices with tensor_parallel 1: sized as a pipeline split")
    return tuple(out)


def rope_notes(request: Request, model: ModelSpec) -> tuple[str, ...]:
    """A context beyond the native length runs on the config's RoPE scaling. vLLM, SGLang
    and llama.cpp apply YaRN statically (the same factor at every length, short prompts
    included), which is why model cards advise enabling it only for long contexts."""
    context = request.workload.context_tokens
    rope = model.rope_scaling
    if rope is None:
        if context <= model.max_context_tokens:
            return ()
        return (
            f"RoPE scaling active: the context exceeds the {model.max_context_tokens} tokens "
            "of config.json (the model card's length); engines apply it at every length",
        )
    if context <= model.native_context_tokens:
        return ()
    factor = f", factor {rope.factor:g}" if rope.factor else ""
    return (
        f"RoPE scaling ({rope.type}{factor}) active: the context exceeds the native "
        f"{model.native_context_tokens} tokens; engines apply it at every length",
    )


def _weights_notes(request: Request) -> tuple[str, ...]:
    spec = request.weights
    if spec.format == "gguf" and spec.quant in REPACK_BASE:
        return (f"{spec.quant} is an ARM repack of Q4_0 (the same blocks): sized as Q4_0",)
    if spec.format == "gguf" and spec.quant is None and spec.file_bytes is not None:
        quant = cache.resolved(request.model.hf_config_json, spec).quant
        return (
            f"GGUF given by size only: tensor types of {quant} (closest computed size) "
            "scaled to file_bytes",
        )
    return ()


def run_estimate(request: Request) -> Result:
    """Memory, fit, capacity and speed of one validated request (see docs/estimator.md).

    per_device_bytes = per-device weights + per-device KV + per-device engine overhead;
    total_bytes = all weights (host part included) + all KV + overhead x devices.
    """
    model = cache.model_spec(request.model.hf_config_json)
    check_model(request, model)
    wb = cache.weights(request.model.hf_config_json, request.weights)
    workload = request.workload
    place = place_weights(request, model, wb)
    kv = place_kv(
        request,
        model,
        kv_cache(request, model, workload.context_tokens, workload.concurrent_sequences),
        place,
    )
    room = budget(request, model, place)
    capacity = kv_capacity_tokens(request, model, place, room.kv_budget_bytes)
    speeds = estimate_speeds(model, wb, request, place.offloaded_bytes, place.split)
    result = _result(request, model, wb, place, kv, room, capacity, speeds)
    if speeds.serving_inputs is not None:
        # the pool the weights leave, whatever the request's own context x sequences needs
        section = serving_section(request, speeds.serving_inputs, capacity, capacity > 0)
        result = replace(result, serving=section)
    return replace(
        result, explanation=explanation(request, model, wb, place, kv, room, speeds, result)
    )


def _result(
    request: Request,
    model: ModelSpec,
    wb: WeightsBreakdown,
    place: Placement,
    kv: KVPlacement,
    room: Budget,
    capacity: int,
    speeds: Speeds,
) -> Result:
    """The figures of run_estimate before its serving section and explanation: memory per
    device and in all, the fit, the capacity searches, the speeds, notes and warnings."""
    per_device = place.per_device_weights_bytes + kv.per_device_bytes + room.overhead.total_bytes
    overhead_bytes = room.overhead.total_bytes * request.device.count
    family = speed_family_section(request, speeds)
    calibrated, uncalibrated = speed_calibration(request, model, speeds, family)
    decode = speeds.decode
    return Result(
        params_total=model.params_total,
        params_active=model.params_active,
        params_multimodal=model.params_multimodal,
        weights_bytes=wb.total_bytes,
        per_device_weights_bytes=place.per_device_weights_bytes,
        multimodal_bytes=wb.multimodal_bytes,
        offloaded_bytes=place.offloaded_bytes,
        kv_cache_bytes=kv.cache.total_bytes,
        kv_cache_bytes_per_token=kv.cache.bytes_per_token,
        overhead_bytes=overhead_bytes,
        overhead_breakdown=dict(room.overhead.breakdown),
        total_bytes=wb.total_bytes + place.multimodal_bytes + kv.cache.total_bytes + overhead_bytes,
        per_device_bytes=per_device,
        usable_bytes_per_device=room.usable_bytes,
        fit=_fit(request, model, place, room, per_device, capacity),
        max_context_tokens=max_context_tokens(request, model, place, room.usable_bytes, capacity),
        kv_cache_capacity_tokens=capacity,
        max_concurrent_sequences=max_concurrent_sequences(
            request, model, place, room.usable_bytes, capacity
        ),
        decode_tokens_per_s=decode.per_sequence_tokens_per_s,
        aggregate_decode_tokens_per_s=decode.aggregate_tokens_per_s,
        prefill_tokens_per_s=speeds.prefill,
        ttft_s=speeds.ttft_s,
        explanation=(),
        notes=tuple(model.notes)
        + tuple(kv.cache.notes)
        + _weights_notes(request)
        + rope_notes(request, model)
        + compute_notes(request.device),
        warnings=_warnings(request, place, room.overhead, speeds, uncalibrated),
        speed_calibrated=calibrated,
        id=request.id,
        compute_rate=compute_rate_section(request.device),
        speed_family=family,
    )


def _fit(
    request: Request,
    model: ModelSpec,
    place: Placement,
    room: Budget,
    per_device: int,
    capacity: int,
) -> Fit:
    """fit.judge_fit with the paged engines' start need (fit.paged_need_bytes: weights +
    overhead + a pool for one sequence; none for the llama family)."""
    paged = 0.0
    if not llama_family(request.engine.name):
        paged = paged_bytes_per_token(request, model, place.split)
    fixed = place.per_device_weights_bytes + room.overhead.total_bytes
    return judge_fit(
        request,
        request.device,
        per_device_bytes=per_device,
        start_need_bytes=paged_need_bytes(request, fixed, paged),
        starts_at_default=not paged_start_fails(request, capacity),
    )
