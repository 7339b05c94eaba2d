"""Decode and prefill speed with calibrated low/high bounds.

Everything here takes plain numbers (bytes, parameters, GB/s, TFLOPS) so it does not
depend on how the caller obtained them. The efficiency factors come from
`data/calibration.json` (read by `estimator.factors`; `python -m estimator.calibration`
fits it on `data/validation/throughput.csv`); pass `factors` explicitly to override them.

Decode model (one step = one token for each of `batch` sequences):

    memory_s  = (weight bytes read + batch x KV bytes read at the current depth)
                / (device bandwidth x bandwidth_share)
    compute_s = 2 x active params x batch / (fp16 TFLOPS x decode_mfu)
    step_s    = memory_s + compute_s + host_s + comm_s
                + decode_overhead_s x n_layers / 32 (overhead_scale)
                (+ moe_decode_overhead_s for MoE models)

Memory and compute are ADDED, not max()-ed: llama-batched-bench rows in throughput.csv
(DGX Spark, M2 Ultra) slow down per step by 20-150 % from batch 1 to 8, although 8 tokens
of compute at any plausible MFU would hide under the memory time; a max() cannot follow
that, the sum can (with a fitted decode_mfu that then reads as "effective" MFU). At
batch 1 the compute term is a few percent of the step; at large batch it dominates and
the aggregate saturates at TFLOPS x decode_mfu / (2 x active params), as a roofline does.

Prefill model (prefill_seconds_per_token, one prompt token):

    seconds = (FLOPs x format_factor / (TFLOPS x prefill_mfu)
               + active params x prefill_s_per_param) / tensor_parallel
    FLOPs   = 2 x active params + 4 x layers x n_heads x head_dim x mean context

format_factor is 1 for quantized weights and the fitted F16 / BF16 factor for llama.cpp.
Bounds of both: estimate x the quantiles of the group's whole-device hold-out ratios
measured / predicted (calibration.json).

`host_s` is the CPU-offloaded part (read at host RAM bandwidth x the CPU backend's share,
additive because llama.cpp runs the layers one after another). `comm_s` is the
tensor-parallel all-reduce cost. Bandwidths are decimal GB/s (10^9 bytes per second).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

from estimator.factors import SpeedFactors, architecture_factors, first_known
from estimator.units import GB, Range

TFLOP = 1e12
# decode_overhead_s is fitted per step of a model with this many layers and scaled by
# n_layers / OVERHEAD_REFERENCE_LAYERS (overhead_scale); 32 = Llama 3 8B / Llama 2 7B.
OVERHEAD_REFERENCE_LAYERS = 32

ENGINE_ALIASES = {
    "ollama": "llama.cpp",
    "llamacpp": "llama.cpp",
    "llama-cpp": "llama.cpp",
    "trt-llm": "tensorrt-llm",
    "tensorrt_llm": "tensorrt-llm",
}


@dataclass(frozen=True)
class Device:
    """One accelerator (or the host, for CPU inference)."""

    bandwidth_gbps: float  # theoretical peak memory bandwidth of ONE device, GB/s
    fp16_tflops: float | None = None  # dense FP16/BF16 tensor rate of one device
    device_class: str = "consumer"  # "consumer" | "datacenter" (see device_class_for)
    architecture: str = ""  # GPU architecture ("Pascal", "Volta", "GCN 5") for arch_class
    # dense tensor rates at lower precisions, for the serving model's GEMMs (serving.py)
    fp8_tflops: float | None = None
    fp4_tflops: float | None = None
    int8_tops: float | None = None


@dataclass(frozen=True)
class Parallelism:
    """How the model is spread over `n_devices` identical devices.

    mode "tensor": each device holds 1/N of every split tensor (vLLM/SGLang TP, llama.cpp
    split-mode row); every layer ends with 2 all-reduces (after attention and after the MLP,
    Megatron-LM layout, Shoeybi et al. 2019).
    mode "layer": llama.cpp's default split mode: whole layers per device, run one device
    after the other, so bandwidths do not add; only one activation hop per device boundary.
    """

    n_devices: int = 1
    mode: str = "none"  # "none" | "tensor" | "layer"
    interconnect_gbps: float = 25.0  # usable one-direction link bandwidth, GB/s (PCIe 4.0 x16)
    link_latency_s: float = 25e-6  # per all-reduce / hop; PCIe-class default, see calibration


@dataclass(frozen=True)
class DecodeWork:
    """What one decode step reads and computes for one sequence.

    weight_bytes_per_token: weight bytes read for one token at batch 1 (non-expert tensors
        plus k/E of the routed experts), excluding the token_embd lookup, all devices together,
        INCLUDING any part that is offloaded to host RAM.
    offloaded_bytes_per_token: the part of weight_bytes_per_token that lives in host RAM.
    kv_bytes_per_token: K+V bytes per context token of the full-attention layers.
    windowed_kv_bytes_per_token / window_tokens: the same for sliding-window layers, which
        read at most `window_tokens` positions.
    expert_bytes / n_experts / n_experts_per_token: routed experts (MoE), used to compute how
        many distinct experts a batch touches.
    replicated_bytes: bytes every tensor-parallel rank reads in full (norms, router, ...).
    """

    weight_bytes_per_token: float
    params_active: float
    kv_bytes_per_token: float = 0.0
    windowed_kv_bytes_per_token: float = 0.0
    window_tokens: int = 0
    expert_bytes: float = 0.0
    n_experts: int = 0
    n_experts_per_token: int = 0
    replicated_bytes: float = 0.0
    offloaded_bytes_per_token: float = 0.0
    n_layers: int = 0
    hidden_size: int = 0
    is_moe: bool = False


@dataclass(frozen=True)
class DecodeSpeed:
    per_sequence_tokens_per_s: Range
    aggregate_tokens_per_s: Range
    step_s: float  # central estimate of one decode step at the mean depth
    memory_bound: bool


@dataclass(frozen=True)
class PrefillSpeed:
    tokens_per_s: Range
    flops_per_token: float


def normalize_engine(engine: str) -> str:
    """Lower-case engine name with the aliases of the internals contract applied."""
    name = engine.strip().lower()
    return ENGINE_ALIASES.get(name, name)


def normalize_backend(backend: str) -> str:
    """cuda | rocm | metal | vulkan | sycl | cpu from free text ("ROCm 6.0 (HIP)", "Vulkan")."""
    text = backend.strip().lower()
    for key, name in (
        ("rocm", "rocm"),
        ("hip", "rocm"),
        ("metal", "metal"),
        ("vulkan", "vulkan"),
        ("sycl", "sycl"),
        ("cuda", "cuda"),
        ("cpu", "cpu"),
    ):
        if key in text:
            return name
    return text or "cuda"


def device_class_for(
    name: str, bandwidth_gbps: float, *, memory_gb: float | None = None, unified: bool = False
) -> str:
    """ "datacenter" for HBM accelerators, else "consumer".

    README of the validation data: datacenter GPUs reach a lower share of their bandwidth in
    llama.cpp than consumer cards (A100/H100 rows in throughput.csv: ~35-45 % vs 60-85 %).
    HBM parts are told apart by >= 1500 GB/s, no consumer marker in the name and, when the
    memory size is known, >= 40 GB of discrete memory: GDDR7 cards also pass 1500 GB/s
    (RTX 5090: 1792 GB/s, 32 GB) and unified-memory SoCs are never HBM accelerators.
    GDDR workstation cards with large memory (RTX PRO 6000, 96 GB) need their name or an
    explicit device class.
    """
    lowered = name.lower()
    consumer_markers = ("rtx", "geforce", "radeon", "apple", "arc")
    if unified or any(m in lowered for m in consumer_markers) or bandwidth_gbps < 1500:
        return "consumer"
    if memory_gb is not None and memory_gb < 40:
        return "consumer"
    return "datacenter"


def group_candidates(
    engine: str, backend: str, device_class: str, moe: bool = False
) -> tuple[str, ...]:
    """Calibration group keys to try, most specific first ("+moe" variants first for MoE
    models: they carry their own prefill MFU)."""
    eng = normalize_engine(engine)
    back = normalize_backend(backend)
    keys = [f"{eng}/{back}/{device_class}", f"{eng}/{back}", eng]
    if eng in ("sglang", "tensorrt-llm", "vllm", "mlc", "exllamav2"):
        keys += [f"vllm/{back}/{device_class}", f"vllm/{back}", "vllm", "serving"]
    if eng == "mlx":  # its own profile when fitted, else llama.cpp on the same backend
        keys += [f"llama.cpp/{back}/{device_class}", f"llama.cpp/{back}", "llama.cpp"]
    if moe:
        keys = [k for key in keys for k in (f"{key}+moe", key)]
    return (*keys, "default")


# GPU generations whose decode falls short of the bandwidth model (no int8 MMA / fewer
# fast paths in the engines' kernels). Turing, RDNA, CDNA, Apple and newer are "".
_ARCH_CLASSES = (
    ("kepler", "pascal_or_older"),
    ("maxwell", "pascal_or_older"),
    ("pascal", "pascal_or_older"),
    ("volta", "volta"),
    ("gcn", "gcn"),
)


def arch_class(architecture: str) -> str:
    """The architecture class of a GPU for the old-generation factor: "pascal_or_older"
    (Kepler, Maxwell, Pascal), "volta", "gcn" (AMD GCN 1-5, incl. MI50/MI60), or "" for
    Turing, RDNA, CDNA, Apple and everything newer (no factor)."""
    name = architecture.strip().lower()
    return next((cls for key, cls in _ARCH_CLASSES if name.startswith(key)), "")


@cache
def architecture_factor(architecture: str) -> float:
    """Decode step-time multiplier of an old GPU generation (calibration.json
    "architecture_factors": exp(median log(measured step / predicted step)) of the class's
    rows, predicted by the fit of the newer GPUs; a class without rows takes the pooled
    factor of all old classes). 1 for current generations."""
    cls = arch_class(architecture)
    if not cls:
        return 1.0
    factors = architecture_factors()
    return factors.get(cls, factors.get("old", 1.0))


def expert_coverage(batch: int, n_experts: int, n_experts_per_token: int) -> float:
    """Expected share of routed experts a batch touches: 1 - (1 - k/E)^B.

    Assumes each token picks its k experts uniformly and independently (real routers are
    skewed, so this is an upper bound on distinct experts). Batch 1 gives k/E.
    """
    if n_experts <= 0:
        return 0.0
    return 1.0 - (1.0 - n_experts_per_token / n_experts) ** max(batch, 1)


def weight_bytes_per_step(work: DecodeWork, batch: int) -> float:
    """Weight bytes one decode step reads for `batch` sequences (all devices together).

    Dense: the same as batch 1. MoE: the batch-1 bytes with the k/E expert share replaced by
    the expected coverage 1 - (1 - k/E)^B (see expert_coverage).
    """
    if work.n_experts <= 0 or work.expert_bytes <= 0:
        return work.weight_bytes_per_token
    batch1 = work.expert_bytes * work.n_experts_per_token / work.n_experts
    covered = work.expert_bytes * expert_coverage(batch, work.n_experts, work.n_experts_per_token)
    return work.weight_bytes_per_token - batch1 + covered


def kv_bytes_read(work: DecodeWork, depth_tokens: float) -> float:
    """KV bytes one sequence reads per step at `depth_tokens` of context.

    full-attention layers read every position; sliding-window layers at most window_tokens.
    """
    window = min(depth_tokens, work.window_tokens) if work.window_tokens else depth_tokens
    return work.kv_bytes_per_token * depth_tokens + work.windowed_kv_bytes_per_token * window


# Links at or above this one-direction bandwidth are NVLink / Infinity Fabric class, where
# engines use one- or two-shot all-reduce kernels instead of a ring (vLLM custom all-reduce).
FAST_LINK_GBPS = 100.0
# Latency of one small all-reduce on such links with the engines' custom one-shot kernels:
# sgl-project/sglang PR #2904 (H100, 2025-01) measured vLLM's custom all-reduce at 9.1-11.8
# us for 512 B - 32 KB messages at TP 2/4/8 (SGLang's own: 3.7-7.8 us); 10 us here.
FAST_LINK_ALLREDUCE_LATENCY_S = 10e-6


def allreduce_seconds(message_bytes: float, par: Parallelism) -> float:
    """One all-reduce: steps x latency + 2 (N-1)/N x message / link bandwidth.

    Ring all-reduce (NCCL docs, "Performance considerations"): 2 (N-1) steps, each paying
    the link's start-up latency (Hockney's alpha-beta model), and 2 (N-1)/N of the message
    over the link. On PCIe-class links (< FAST_LINK_GBPS) the ring is what runs, so latency
    grows with N: with the 25 us default, 8 GPUs pay 14 x 25 = 350 us per all-reduce, which
    is what the 8x A100 PCIe vLLM rows in throughput.csv show (Llama 2 70B: 14 tok/s, where
    the bandwidth bound alone gives ~90). On NVLink-class links engines run one-shot custom
    kernels whose latency hardly grows with N: FAST_LINK_ALLREDUCE_LATENCY_S whatever N.
    """
    n = par.n_devices
    volume = 2 * (n - 1) / n * message_bytes / (par.interconnect_gbps * GB)
    if par.interconnect_gbps >= FAST_LINK_GBPS:
        return FAST_LINK_ALLREDUCE_LATENCY_S + volume
    return 2 * (n - 1) * par.link_latency_s + volume


def comm_seconds_per_step(work: DecodeWork, par: Parallelism, batch: int) -> float:
    """Interconnect time per decode step.

    tensor: 2 all-reduces per layer of batch x hidden_size x 2 bytes (fp16 activations).
    layer: one hop per device boundary (latency + batch x hidden x 2 bytes / link).
    Single device: 0.
    """
    if par.n_devices <= 1 or par.mode == "none":
        return 0.0
    message = batch * work.hidden_size * 2
    if par.mode == "tensor":
        return 2 * work.n_layers * allreduce_seconds(message, par)
    return (par.n_devices - 1) * (par.link_latency_s + message / (par.interconnect_gbps * GB))


def memory_seconds_per_step(
    work: DecodeWork, device: Device, par: Parallelism, share: float, batch: int, depth: float
) -> float:
    """Bytes one device reads per step / (bandwidth x share), offloaded bytes excluded.

    tensor parallel: split bytes and KV divide by N, replicated bytes do not.
    layer split: devices run one after the other, so the time is that of all bytes on one
    device (bandwidths do not add, even though memory capacities do).
    """
    weights = weight_bytes_per_step(work, batch) - work.offloaded_bytes_per_token
    kv = batch * kv_bytes_read(work, depth)
    if par.mode == "tensor" and par.n_devices > 1:
        replicated = min(work.replicated_bytes, weights)
        weights = (weights - replicated) / par.n_devices + replicated
        kv /= par.n_devices
    return (weights + kv) / (device.bandwidth_gbps * GB * share)


def compute_seconds_per_step(
    work: DecodeWork, device: Device, par: Parallelism, mfu: float, batch: int
) -> float:
    """2 x active params x batch FLOPs / (fp16 TFLOPS x MFU); 0 when TFLOPS are unknown.

    Tensor parallelism divides the FLOPs by N; a layer split does not (sequential devices).
    """
    if not device.fp16_tflops:
        return 0.0
    devices = par.n_devices if par.mode == "tensor" else 1
    flops = 2.0 * work.params_active * batch / devices
    return flops / (device.fp16_tflops * TFLOP * mfu)


def decode_step_seconds(
    work: DecodeWork,
    device: Device,
    factors: SpeedFactors,
    *,
    batch: int = 1,
    depth_tokens: float = 0.0,
    parallelism: Parallelism | None = None,
    host_bandwidth_gbps: float | None = None,
    host_share: float = 0.5,
) -> tuple[float, bool]:
    """Central estimate of one decode step (seconds) and whether memory time >= compute time.

    step = memory + compute + host + comm + decode_overhead_s x overhead_scale(n_layers)
    (x architecture_factor for GPUs older than Turing)
    (+ moe_decode_overhead_s for MoE models; module docstring). host =
    offloaded bytes / (host GB/s x host_share); raises if bytes are offloaded without a host
    bandwidth.
    """
    par = parallelism or Parallelism()
    memory = memory_seconds_per_step(
        work, device, par, factors.bandwidth_share, batch, depth_tokens
    )
    compute = compute_seconds_per_step(work, device, par, factors.decode_mfu, batch)
    host = 0.0
    if work.offloaded_bytes_per_token > 0:
        if not host_bandwidth_gbps:
            raise ValueError("offloaded weights need host_bandwidth_gbps")
        host = work.offloaded_bytes_per_token / (host_bandwidth_gbps * GB * host_share)
    comm = comm_seconds_per_step(work, par, batch)
    fixed = factors.decode_overhead_s + (factors.moe_decode_overhead_s if work.is_moe else 0.0)
    step = memory + compute + host + comm + fixed * overhead_scale(work.n_layers)
    return step * architecture_factor(device.architecture), memory >= compute


def decode_bounds(tokens_per_s: float, factors: SpeedFactors) -> Range:
    """A decode estimate with its bounds: estimate x the quantiles of the group's
    whole-device hold-out ratios (measured / predicted, calibration.json), so about 80 %
    of measurements on an unseen device fall inside."""
    return Range(
        tokens_per_s,
        tokens_per_s * factors.decode_ratio_low,
        tokens_per_s * factors.decode_ratio_high,
    )


def overhead_scale(n_layers: int) -> float:
    """n_layers / OVERHEAD_REFERENCE_LAYERS (1 when the layer count is unknown).

    The fixed part of a decode step is kernel launches and graph work per operation, and
    the operations grow with the layers: on the llama.cpp CUDA rows of throughput.csv a
    per-layer overhead fits better than a constant one (held-out median 6.0 % vs 6.1 %,
    p90 17.6 % vs 20.9 %), and holding out whole sources the overall decode median drops
    from 11.5 % to 10.4 % (calibration.json notes).
    """
    return (n_layers or OVERHEAD_REFERENCE_LAYERS) / OVERHEAD_REFERENCE_LAYERS


def mean_decode_depth(prompt_tokens: int, output_tokens: int) -> float:
    """Average KV depth while generating: prompt + output / 2 (step time is ~linear in depth,
    so the mean speed over the run is the speed at the mean depth)."""
    return prompt_tokens + output_tokens / 2


@cache
def resolve_factors(
    engine: str, backend: str, device_class: str, moe: bool = False
) -> SpeedFactors:
    """The calibrated factors of the most specific group calibration.json has."""
    return first_known(group_candidates(engine, backend, device_class, moe))


def measured_group(engine: str, backend: str, device_class: str, moe: bool = False) -> bool:
    """Whether published measurements of this engine on this backend back the factors
    (the resolved calibration group names the backend); otherwise a wider group's
    factors, fitted on other hardware, stand in and the speed is a guess."""
    back = normalize_backend(backend)
    return f"/{back}" in resolve_factors(engine, back, device_class, moe).group


def decode_speed(
    work: DecodeWork,
    device: Device,
    *,
    engine: str,
    backend: str,
    prompt_tokens: int = 0,
    output_tokens: int = 128,
    batch: int = 1,
    parallelism: Parallelism | None = None,
    host_bandwidth_gbps: float | None = None,
    factors: SpeedFactors | None = None,
) -> DecodeSpeed:
    """Mean decode speed while generating `output_tokens` after `prompt_tokens`, at `batch`
    concurrent sequences: per sequence = 1 / step, aggregate = batch / step.

    The step is taken at the mean depth prompt + output/2 (llama-bench tgN: prompt 0,
    output N). low/high = estimate x the group's held-out residual quantiles. Excludes
    prefill time (see ttft_seconds), sampling on the host and network latency.
    """
    fac = factors or resolve_factors(engine, backend, device.device_class, work.is_moe)
    host_share = resolve_factors("llama.cpp", "cpu", "consumer").bandwidth_share
    depth = mean_decode_depth(prompt_tokens, output_tokens)
    step, memory_bound = decode_step_seconds(
        work,
        device,
        fac,
        batch=batch,
        depth_tokens=depth,
        parallelism=parallelism,
        host_bandwidth_gbps=host_bandwidth_gbps,
        host_share=host_share,
    )
    per_seq_range = decode_bounds(1.0 / step, fac)
    return DecodeSpeed(
        per_sequence_tokens_per_s=per_seq_range,
        aggregate_tokens_per_s=per_seq_range.scaled(batch),
        step_s=step,
        memory_bound=memory_bound,
    )


def prefill_flops_per_token(
    params_active: float,
    *,
    n_layers: int = 0,
    attention_width: int = 0,
    prompt_tokens: int = 0,
    depth_tokens: int = 0,
) -> float:
    """Forward FLOPs per prompt token: 2 x active params + 4 x n_layers x d_attn x mean context.

    2N: one multiply-add per weight (Kaplan et al. 2020, "Scaling Laws", Table 1). Attention:
    QK^T and softmax x V each cost 2 x context x d_attn per token and layer (Hoffmann et al.
    2022, Chinchilla, Appendix F); with a causal mask a prompt token sees on average
    depth + prompt/2 positions. d_attn = n_heads x head_dim. Sliding windows, MLA and the
    LM head's share beyond 2N are ignored (small next to 2N at common prompt lengths).
    """
    mean_context = depth_tokens + prompt_tokens / 2
    return 2.0 * params_active + 4.0 * n_layers * attention_width * mean_context


def weights_family(weights_name: str) -> str:
    """ "f16" | "bf16" | "quantized" from a GGUF file type or HF dtype name ("F16", "bf16",
    "Q4_K_M", "MXFP4_MOE", "fp8" ...); "" (unknown) counts as quantized."""
    name = weights_name.strip().lower()
    if name in ("f16", "fp16", "float16"):
        return "f16"
    if name in ("bf16", "bfloat16"):
        return "bf16"
    return "quantized"


def prefill_format_factor(factors: SpeedFactors, weights_name: str) -> float:
    """Compute-time multiplier of the weights format relative to quantized weights:
    prefill_f16_factor for F16, prefill_bf16_factor for BF16, 1 otherwise (fitted on
    llama.cpp rows only; other engines store 1)."""
    family = weights_family(weights_name)
    if family == "f16":
        return factors.prefill_f16_factor
    if family == "bf16":
        return factors.prefill_bf16_factor
    return 1.0


def prefill_seconds_per_token(
    flops_per_token: float,
    params_active: float,
    tflops: float,
    factors: SpeedFactors,
    *,
    format_factor: float = 1.0,
    tensor_parallel: int = 1,
) -> float:
    """Seconds per prompt token:
    (FLOPs x format_factor / (TFLOPS x prefill_mfu) + active params x prefill_s_per_param) / TP.

    The first term is the matmul time at the group's peak efficiency; the second a
    per-parameter cost that does not shrink with a faster chip (fitted: on the llama.cpp
    CUDA rows of throughput.csv a 4x faster GPU gains far less than 4x at pp512, e.g.
    RTX 3070 2403 vs RTX 6000 Ada 5792 tok/s for Llama 3 8B Q4_K_M with 81 vs 364
    TFLOPS), so the effective MFU = prefill_mfu / (1 + TFLOPS x prefill_mfu x
    prefill_s_per_param x active params / (FLOPs x format_factor)) falls on big chips.
    """
    matmul = flops_per_token * format_factor / (tflops * TFLOP * factors.prefill_mfu)
    fixed = params_active * factors.prefill_s_per_param
    return (matmul + fixed) / max(tensor_parallel, 1)


def prefill_speed(
    params_active: float,
    device: Device,
    *,
    engine: str,
    backend: str,
    prompt_tokens: int,
    n_layers: int = 0,
    attention_width: int = 0,
    depth_tokens: int = 0,
    tensor_parallel: int = 1,
    compute_tflops: float | None = None,
    is_moe: bool = False,
    factors: SpeedFactors | None = None,
    weights_name: str = "",
    offloaded_bytes: float = 0.0,
    n_ubatch: int = 512,
    host_link_gbps: float | None = None,
) -> PrefillSpeed:
    """Prompt tokens/s = 1 / prefill_seconds_per_token(...), FLOPs from
    prefill_flops_per_token.

    compute_tflops overrides device.fp16_tflops: pass prefill_compute_tflops(...) for
    llama.cpp (quantised matmuls run on int8 tensor cores) or the FP8 rate for FP8 weights
    in vLLM / TensorRT-LLM. MoE models use their own fitted MFU (is_moe). weights_name
    (GGUF file type or HF dtype) selects the F16 / BF16 format factor of llama.cpp-family
    engines (prefill_format_factor); "" = quantized. A layer split adds no compute (devices
    run in turn). Raises when no TFLOPS figure is known. The factors are fitted on
    llama-bench ppN rows, so they carry the engine's dequantisation and launch costs.
    offloaded_bytes (weights in host RAM, llama.cpp family) add the host-link streaming
    time of offload_stream_seconds_per_token, which does not shrink with a faster GPU.
    """
    tflops = compute_tflops or device.fp16_tflops
    if not tflops:
        raise ValueError("prefill needs the device's fp16 TFLOPS")
    fac = factors or resolve_factors(engine, backend, device.device_class, is_moe)
    flops = prefill_flops_per_token(
        params_active,
        n_layers=n_layers,
        attention_width=attention_width,
        prompt_tokens=prompt_tokens,
        depth_tokens=depth_tokens,
    )
    factor = prefill_format_factor(fac, weights_name)
    seconds = prefill_seconds_per_token(
        flops, params_active, tflops, fac, format_factor=factor, tensor_parallel=tensor_parallel
    )
    if normalize_engine(engine) in ("llama.cpp", "mlx"):
        seconds += offload_stream_seconds_per_token(
            offloaded_bytes, prompt_tokens, n_ubatch, host_link_gbps
        )
    tps = 1.0 / seconds
    return PrefillSpeed(
        tokens_per_s=Range(tps, tps * fac.prefill_ratio_low, tps * fac.prefill_ratio_high),
        flops_per_token=flops,
    )


def prefill_compute_tflops(fp16_tflops: float | None, int8_tops: float | None) -> float | None:
    """The compute rate the prefill MFU is fitted against: max(fp16 TFLOPS, int8 TOPS / 2).

    llama.cpp's quantised matmuls (MMQ) use int8 tensor-core MMA, and GeForce cards' listed
    fp16 rate is the FP32-accumulate one (half the FP16-accumulate rate, accelerators.csv
    notes), so RTX 4090 (165 fp16 / 661 int8) and RTX 6000 Ada (364 / 728) with the same
    AD102 chip get similar prefill speeds in throughput.csv; int8 / 2 puts them level.
    """
    rates = [r for r in (fp16_tflops, int8_tops / 2 if int8_tops else None) if r]
    return max(rates) if rates else None


def ttft_seconds(
    prompt_tokens: int, prefill: Range, first_step_s: Range, floor_s: float = 0.0
) -> Range:
    """Time to first token = prompt / prefill tokens/s + one decode step + floor_s.

    floor_s is the engine's fixed start-up cost of a request (scheduling, the first
    prefill step's graph and MoE set-up, the HTTP round trip of the benchmark client),
    which real serving engines show even for a few prompt tokens: ttft_floor_seconds.
    The low bound pairs the fastest prefill with the fastest step, and the high bound the
    slowest with the slowest. Excludes queueing behind other requests.
    """
    return Range(
        prompt_tokens / prefill.estimate + first_step_s.estimate + floor_s,
        prompt_tokens / prefill.high + first_step_s.low + floor_s,
        prompt_tokens / prefill.low + first_step_s.high + floor_s,
    )


def ttft_floor_seconds(factors: SpeedFactors, n_layers: int, moe: bool = False) -> float:
    """The fixed part of TTFT: ttft_floor_s, or ttft_floor_moe_s for MoE models (fitted
    per 32 layers on ttft.csv: the measured TTFT minus the predicted prefill and first
    step, median over the serving rows of that kind) x overhead_scale(n_layers). 0 for
    llama.cpp-family engines, whose measured TTFT equals prompt / prompt tokens/s."""
    floor = factors.ttft_floor_moe_s if moe else factors.ttft_floor_s
    return floor * overhead_scale(n_layers)


# llama.cpp runs matrix multiplications of weights kept in host RAM on the GPU when a
# batch has at least this many tokens (ggml-backend.cpp, op offload: GGML_OP_OFFLOAD_MIN_BATCH
# = 32 in ggml-cuda's offload_op), copying the weights over the host link each ubatch.
OP_OFFLOAD_MIN_BATCH = 32
# Effective host-to-GPU copy rate of llama.cpp's pageable host buffers on PCIe 4.0 / 5.0
# x16, GB/s (a PCIe 4.0 x16 link carries 31.5 GB/s raw; tests/estimator/test_offload_speed.py
# checks the resulting prefill against published --cpu-moe runs).
DEFAULT_HOST_LINK_GBPS = 25.0


def offload_stream_seconds_per_token(
    offloaded_bytes: float, prompt_tokens: int, n_ubatch: int, host_link_gbps: float | None
) -> float:
    """Prefill seconds per prompt token spent streaming host-RAM weights to the GPU.

    Each ubatch of min(n_ubatch, prompt) tokens copies every offloaded byte over the host
    link once (llama.cpp op offload, OP_OFFLOAD_MIN_BATCH), so per token:
    offloaded bytes / (link GB/s x min(n_ubatch, prompt)). Prompts shorter than
    OP_OFFLOAD_MIN_BATCH run on the CPU instead: 0 here (the host-bandwidth decode term
    covers them). Example: gpt-oss-120b with all experts in RAM (61 GB), 25 GB/s,
    ubatch 512: 61e9 / (25e9 x 512) = 4.8 ms per token, at most ~210 tokens/s.
    """
    if offloaded_bytes <= 0 or prompt_tokens < OP_OFFLOAD_MIN_BATCH:
        return 0.0
    link = (host_link_gbps or DEFAULT_HOST_LINK_GBPS) * GB
    return offloaded_bytes / (link * min(n_ubatch, prompt_tokens))


def step_range(speed: DecodeSpeed) -> Range:
    """Per-sequence decode speed turned into a step-time range (seconds)."""
    return speed.per_sequence_tokens_per_s.inverted()


def with_factors(factors: SpeedFactors, **changes: float) -> SpeedFactors:
    """A copy of `factors` with some fields replaced (used by the fit and by tests)."""
    return replace(factors, **changes)  # type: ignore[arg-type]
