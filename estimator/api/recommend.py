"""Recommendations on top of the public estimate: which quant, which device, how to make it fit.

Everything here calls `run_estimate` on modified copies of a request, so a recommendation
is exactly what the estimator would say about the changed deployment (no separate model).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from estimator import memory, quality
from estimator.api.schema import (
    Device,
    Offload,
    PlanStep,
    QuantChoice,
    Recommendations,
    Request,
    Result,
    WeightsSpec,
)
from estimator.engines import (
    default_memory_share,
    engine_capability,
    llama_family,
    llama_gpu_layers,
    quantized_kv_types,
    server_tensor_parallel,
)

# GGUF file types from least to most compressed, with their nominal bits per weight
# (block sizes in GGUF_QUANTS.md; K-quant mixes take the base type's bpw). The nominal
# figure is the quality floor's yardstick; the real, mixed size comes from the estimate.
GGUF_LADDER: tuple[tuple[str, float], ...] = (
    ("BF16", 16.0),
    ("Q8_0", 8.5),
    ("Q6_K", 6.5625),
    ("Q5_K_M", 5.5),
    ("Q5_K_S", 5.5),
    ("Q4_K_M", 4.5),
    ("Q4_K_S", 4.5),
    ("IQ4_XS", 4.25),
    ("Q3_K_L", 3.4375),
    ("Q3_K_M", 3.4375),
    ("IQ3_M", 3.4375),
    ("Q3_K_S", 3.4375),
    ("IQ3_XXS", 3.0625),
    ("Q2_K", 2.625),
    ("IQ2_M", 2.5625),
    ("IQ2_XS", 2.3125),
    ("IQ2_XXS", 2.0625),
    ("IQ1_M", 1.75),
    ("IQ1_S", 1.5625),
)
# vLLM-family checkpoints from least to most compressed, with bits per weight.
HF_LADDER: tuple[tuple[str, float], ...] = (
    ("bf16", 16.0),
    ("fp8", 8.0),
    ("w8a8", 8.0),
    ("awq-int4", 4.0),
    ("gptq-int4", 4.0),
)
# The quality floor: a rung is allowed when its tier is DEFAULT_MIN_TIER ("good") or better
# (estimator.quality, the one tier table) and it keeps at least min_bits_per_weight. 4.0 is
# the nominal bits of the most compressed "good" rung on either ladder (awq-int4, gptq-int4;
# GGUF's is IQ4_XS at 4.25), so by default the tier decides; a caller may raise it.
DEFAULT_MIN_BITS = 4.0
DEFAULT_MIN_TIER = quality.DEFAULT_MIN_TIER
MAX_EXTRA_DEVICES = 8

Estimator = Callable[[Request], Result]


@dataclass(frozen=True)
class DeviceChoice:
    """The request on one of the devices offered (`device_options`); index: its place in
    the list given."""

    index: int
    name: str | None
    memory_gb: float
    count: int
    verdict: str
    per_device_bytes: int
    decode_tokens_per_s: float


@dataclass(frozen=True)
class BestDevices:
    """`best_devices`: the smallest fitting device (least total memory, then fastest) and
    the fastest fitting one; None when no device fits."""

    smallest: DeviceChoice | None
    fastest: DeviceChoice | None


def _ladder(request: Request) -> tuple[tuple[str, float], ...]:
    return GGUF_LADDER if request.weights.format == "gguf" else HF_LADDER


def _with_quant(request: Request, name: str) -> Request:
    if request.weights.format == "gguf":
        weights = WeightsSpec("gguf", quant=name, imatrix=request.weights.imatrix)
    else:
        weights = WeightsSpec("hf", dtype=name, group_size=request.weights.group_size)
    return replace(request, weights=weights, recommend=False)


def _fits(result: Result) -> bool:
    """Whether the setup runs at all: not "does_not_fit" (a tight setup within the
    engine's default margin runs with its fit.start_flags)."""
    return result.fit.verdict != "does_not_fit"


def _starts_with_defaults(result: Result) -> bool:
    """Whether the setup runs with the engine's default memory settings."""
    return _fits(result) and not result.fit.within_default_margin


def _with_start_flags(flags: tuple[str, ...], result: Result) -> tuple[str, ...]:
    """A step's flags and, for a changed setup within the default margin, its start flags
    (fit.start_flags, in flag-value pairs) whose flag the step does not set already."""
    start = result.fit.start_flags if result.fit.within_default_margin else ()
    pairs = [start[i : i + 2] for i in range(0, len(start), 2)]
    return flags + tuple(word for pair in pairs if pair[0] not in flags for word in pair)


def within_floor(name: str, bits: float, min_bits_per_weight: float = DEFAULT_MIN_BITS) -> bool:
    """Whether a rung is at or above the quality floor: its tier DEFAULT_MIN_TIER or better
    (estimator.quality.at_least) and at least `min_bits_per_weight` nominal bits. Tiers fall
    along both ladders, so the first rung below the floor ends the ones above it."""
    return bits >= min_bits_per_weight and quality.at_least(name, DEFAULT_MIN_TIER)


def quant_options(
    request: Request, estimator: Estimator, min_bits_per_weight: float = DEFAULT_MIN_BITS
) -> list[QuantChoice]:
    """Every quant on the ladder at or above the quality floor, evaluated on this device."""
    out = []
    for name, bits in _ladder(request):
        if not within_floor(name, bits, min_bits_per_weight):
            break
        try:
            result = estimator(_with_quant(request, name))
        except ValueError:
            continue  # e.g. a quant the weights module cannot size for this model
        out.append(
            QuantChoice(
                name,
                bits,
                _fits(result),
                result.fit.verdict,
                result.per_device_bytes,
                result.decode_tokens_per_s.estimate,
            )
        )
    return out


def best_quant(
    request: Request, estimator: Estimator, min_bits_per_weight: float = DEFAULT_MIN_BITS
) -> QuantChoice | None:
    """The least-compressed quant that fits (verdict not "does_not_fit"), None if none does."""
    for choice in quant_options(request, estimator, min_bits_per_weight):
        if choice.fits:
            return choice
    return None


def device_options(
    request: Request, devices: Iterable[Device], estimator: Estimator
) -> list[DeviceChoice]:
    """The request evaluated on each device (same weights, engine and workload)."""
    out = []
    for index, device in enumerate(devices):
        tp = min(request.workload.tensor_parallel, device.count)
        candidate = replace(
            request,
            device=device,
            recommend=False,
            workload=replace(request.workload, tensor_parallel=tp),
        )
        result = estimator(candidate)
        out.append(
            DeviceChoice(
                index,
                device.name,
                device.memory_gb,
                device.count,
                result.fit.verdict,
                result.per_device_bytes,
                result.decode_tokens_per_s.estimate,
            )
        )
    return out


def best_devices(request: Request, devices: Iterable[Device], estimator: Estimator) -> BestDevices:
    """Smallest fitting device (least total memory, then fastest) and fastest fitting one."""
    options = device_options(request, devices, estimator)
    fitting = [c for c in options if c.verdict != "does_not_fit"]
    smallest = min(
        fitting, key=lambda c: (c.memory_gb * c.count, -c.decode_tokens_per_s), default=None
    )
    fastest = max(
        fitting, key=lambda c: (c.decode_tokens_per_s, -c.memory_gb * c.count), default=None
    )
    return BestDevices(smallest=smallest, fastest=fastest)


def _step(
    action: str,
    description: str,
    flags: tuple[str, ...],
    request: Request,
    change: dict[str, Any],
    estimator: Estimator,
) -> PlanStep | None:
    try:
        result = estimator(request)
    except ValueError:
        return None
    return PlanStep(
        action,
        description,
        _with_start_flags(flags, result),
        _fits(result),
        result.fit.verdict,
        result.per_device_bytes,
        result.usable_bytes_per_device,
        result.decode_tokens_per_s.estimate,
        request.workload.context_tokens,
        change,
    )


def _step_starts(step: PlanStep | None, own_flags: tuple[str, ...]) -> bool:
    """The step fits with no start flags added to its own (_with_start_flags): its setup
    starts with the engine's defaults."""
    return step is not None and step.fits and len(step.flags) == len(own_flags)


def _shorter_context(request: Request, result: Result, estimator: Estimator) -> PlanStep | None:
    """The longest context (multiple of 256) that fits, if it still holds the prompt + output."""
    floor = request.workload.prompt_tokens + request.workload.output_tokens
    tokens = (min(result.max_context_tokens, request.workload.context_tokens - 1) // 256) * 256
    if tokens < max(floor, 256):
        return None
    candidate = replace(request, workload=replace(request.workload, context_tokens=tokens))
    flag = (
        ("-c", str(tokens))
        if llama_family(request.engine.name)
        else ("--max-model-len", str(tokens))
    )
    return _step(
        "shorter_context",
        f"Reduce the context to {tokens} tokens",
        flag,
        candidate,
        {"workload.context_tokens": tokens},
        estimator,
    )


def _quantized_kv(request: Request, estimator: Estimator) -> list[PlanStep]:
    llama = llama_family(request.engine.name)
    current = request.engine.type_k or request.workload.kv_cache_dtype
    steps = []
    for dtype in quantized_kv_types(request.engine.name):
        if current == dtype or (current == "q4_0" and dtype == "q8_0"):
            continue
        engine = replace(
            request.engine,
            type_k=None,
            type_v=None,
            flash_attention=True if llama else request.engine.flash_attention,
        )
        candidate = replace(
            request, engine=engine, workload=replace(request.workload, kv_cache_dtype=dtype)
        )
        flags = (
            ("-fa", "on", "-ctk", dtype, "-ctv", dtype) if llama else ("--kv-cache-dtype", "fp8")
        )
        step = _step(
            "quantize_kv",
            f"Store the KV cache as {dtype}",
            flags,
            candidate,
            {"workload.kv_cache_dtype": dtype},
            estimator,
        )
        if step:
            steps.append(step)
    return steps


def _quant_flags(request: Request, name: str) -> tuple[str, ...]:
    """llama.cpp picks the file by its quant tag (-hf <repo>:<quant>); vLLM quantizes to FP8
    on load (--quantization fp8); other schemes need a pre-quantized checkpoint."""
    if request.weights.format == "gguf":
        return ("-hf", f"<repo>:{name}")
    if name == "fp8":
        return ("--quantization", "fp8")
    return ("--model", f"<{name} checkpoint>")


def _smaller_quant(
    request: Request, estimator: Estimator, min_bits_per_weight: float
) -> PlanStep | None:
    """The next quant down the ladder that starts with the engine's defaults (no start flags
    added to its step), else the smallest allowed one."""
    ladder = _ladder(request)
    names = [name for name, _ in ladder]
    current = request.weights.name
    start = names.index(current) + 1 if current in names else 0
    last: PlanStep | None = None
    for name, bits in ladder[start:]:
        if not within_floor(name, bits, min_bits_per_weight):
            break
        flag = _quant_flags(request, name)
        last = _step(
            "smaller_quant",
            f"Use {name} weights",
            flag,
            _with_quant(request, name),
            {"weights": name},
            estimator,
        )
        if _step_starts(last, flag):
            return last
    return last


def _offload_layers(request: Request, n_layers: int, estimator: Estimator) -> PlanStep | None:
    """Fewest repeating layers in host memory with which it starts with the engine's
    defaults (binary search)."""
    if request.device.memory_kind == "unified":
        return None

    def at(layers: int) -> Request:
        return replace(request, workload=replace(request.workload, offload=Offload(layers=layers)))

    low, high = 1, n_layers
    if not _starts_with_defaults(estimator(at(high))):
        return None
    while low < high:
        mid = (low + high) // 2
        if _starts_with_defaults(estimator(at(mid))):
            high = mid
        else:
            low = mid + 1
    # The launch command's figures for the same setup (estimator.launch): -ngl counts the
    # output layer, --cpu-offload-gb is per tensor-parallel rank.
    if llama_family(request.engine.name):
        flags: tuple[str, ...] = ("-ngl", str(llama_gpu_layers(n_layers, low)))
    else:
        result = estimator(at(low))
        ranks = server_tensor_parallel(request.workload.tensor_parallel, request.device.count)
        per_device = memory.cpu_offload_gib_per_device(result.offloaded_bytes, ranks)
        flags = ("--cpu-offload-gb", str(per_device))
    return _step(
        "offload_layers",
        f"Keep {low} of {n_layers} layers in host memory",
        flags,
        at(low),
        {"workload.offload.layers": low},
        estimator,
    )


def _offload_experts(request: Request, result: Result, estimator: Estimator) -> PlanStep | None:
    if not llama_family(request.engine.name) or request.device.memory_kind == "unified":
        return None
    if request.workload.offload.moe_experts or result.params_active >= result.params_total:
        return None
    candidate = replace(
        request, workload=replace(request.workload, offload=Offload(moe_experts=True))
    )
    return _step(
        "offload_moe_experts",
        "Keep the routed MoE experts in host memory",
        ("--cpu-moe",),
        candidate,
        {"workload.offload.moe_experts": True},
        estimator,
    )


def _more_devices(request: Request, estimator: Estimator) -> PlanStep | None:
    """The fewest identical devices (2, 4, 8) with which it starts with the engine's
    defaults, split the engine's usual way."""
    count = request.device.count * 2
    last: PlanStep | None = None
    while count <= MAX_EXTRA_DEVICES:
        llama = llama_family(request.engine.name)
        tp = 1 if llama else count
        candidate = replace(
            request,
            device=replace(request.device, count=count),
            workload=replace(request.workload, tensor_parallel=tp),
        )
        flags = (
            ("-ts", ",".join(["1"] * count)) if llama else ("--tensor-parallel-size", str(count))
        )
        last = _step(
            "more_devices",
            f"Use {count} devices",
            flags,
            candidate,
            {"device.count": count, "workload.tensor_parallel": tp},
            estimator,
        )
        if _step_starts(last, flags):
            return last
        count *= 2
    return last


def _fewer_sequences(request: Request, result: Result, estimator: Estimator) -> PlanStep | None:
    """The most sequences of the request's context that fit at once, when that is fewer
    than asked and at least one: result.max_concurrent_sequences (the estimator's own
    capacity: vLLM-like engines' KV capacity // context, floored; llama.cpp its search over
    -np with the KV cache and compute buffer recomputed), sized again as a step. llama.cpp's
    -c is the context of all slots together, so its flags are -c context x count, -np count."""
    count = min(result.max_concurrent_sequences, request.workload.concurrent_sequences - 1)
    if count < 1:
        return None
    candidate = replace(request, workload=replace(request.workload, concurrent_sequences=count))
    capability = engine_capability(request.engine.name)
    flags: tuple[str, ...] = (capability.flags.sequences, str(count))
    if capability.name == "llama.cpp":
        flags = ("-c", str(request.workload.context_tokens * count), *flags)
    return _step(
        "fewer_sequences",
        f"Serve {count} sequences at once",
        flags,
        candidate,
        {"workload.concurrent_sequences": count},
        estimator,
    )


def _more_memory_share(request: Request, result: Result, estimator: Estimator) -> PlanStep | None:
    """vLLM and SGLang: a larger memory share of each device than the request's (default
    0.9 / 0.88). Within the default margin: the share the fit computed
    (fit.start_memory_share, memory.next_memory_share: the next 0.01 step above need /
    device); otherwise the most the engine may be given (memory.max_memory_share, 0.95),
    dropped by make_it_fit when it is not enough."""
    capability = engine_capability(request.engine.name)
    current = request.engine.gpu_memory_utilization or default_memory_share(capability.name)
    if capability.raised_memory_share is None:
        return None
    higher = result.fit.start_memory_share or memory.max_memory_share(
        capability.name, request.engine.gpu_memory_utilization
    )
    if higher is None or current >= higher:
        return None
    candidate = replace(request, engine=replace(request.engine, gpu_memory_utilization=higher))
    return _step(
        "memory_share",
        f"Give the engine {higher:.0%} of each device's memory",
        (capability.flags.memory_share, f"{higher:g}"),
        candidate,
        {"engine.gpu_memory_utilization": higher},
        estimator,
    )


def make_it_fit(
    request: Request,
    result: Result,
    estimator: Estimator,
    n_layers: int,
    min_bits_per_weight: float = DEFAULT_MIN_BITS,
) -> list[PlanStep]:
    """Ranked single changes that bring the request within memory: for a request that
    does not fit, or one that fits only within the engine's default margin (its steps
    then start with the engine's defaults, or carry their own start flags).

    Candidates: shorter context, quantized KV, the next quant down, a larger memory share
    (vLLM, SGLang), MoE experts or N layers to host memory, more devices, and fewer
    sequences at once when the asked count is the cause (_fewer_sequences: the estimator's
    max_concurrent_sequences). Each is the changed request run through `estimator`; a step
    whose setup still does not fit (verdict "does_not_fit") is dropped, so every step
    listed runs (fits, or tight with its start flags). Ranking: the fastest decode first,
    so the cheapest-in-speed fix leads.
    """
    request = replace(request, recommend=False)
    candidates: list[PlanStep | None] = [
        _fewer_sequences(request, result, estimator),
        _shorter_context(request, result, estimator),
        *_quantized_kv(request, estimator),
        _smaller_quant(request, estimator, min_bits_per_weight),
        _more_memory_share(request, result, estimator),
        _offload_experts(request, result, estimator),
        _offload_layers(request, n_layers, estimator),
        _more_devices(request, estimator),
    ]
    steps = [s for s in candidates if s is not None and s.fits]
    return sorted(steps, key=lambda s: -s.decode_tokens_per_s)


def recommendations(
    request: Request, result: Result, estimator: Estimator, n_layers: int
) -> Recommendations:
    """The "recommendations" section of a result: best quant and, when needed, a plan
    (as JSON through estimator.api.result_to_dict)."""
    best = best_quant(request, estimator)
    starts = _starts_with_defaults(result)
    plan = make_it_fit(request, result, estimator, n_layers) if not starts else []
    return Recommendations(
        min_bits_per_weight=DEFAULT_MIN_BITS,
        best_quant=best,
        make_it_fit=tuple(plan),
        min_quality_tier=DEFAULT_MIN_TIER,
    )
