"""Prefill speed and time to first token (the package docstring's prefill model):

    seconds per prompt token = (FLOPs x format_factor / (TFLOPS x prefill_mfu)
                                + active params x prefill_s_per_param) / tensor_parallel

plus, for weights kept in host RAM, the time to stream them over the host link; TTFT =
prompt / prefill tokens/s + one decode step + the engine's fixed floor.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.factors import SpeedFactors, expert_stream_share
from estimator.speed.corrections import family_range, speed_multiplier
from estimator.speed.decode import DecodeWork, expert_coverage, overhead_scale
from estimator.speed.devices import TFLOP, Device
from estimator.speed.groups import normalize_engine, resolve_factors
from estimator.units import GB, Range


@dataclass(frozen=True)
class PrefillSpeed:
    tokens_per_s: Range
    flops_per_token: float


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
    stream_bytes: float = 0.0,
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
    time of offload_stream_seconds_per_token, which does not shrink with a faster GPU;
    stream_bytes (moe_stream_bytes: experts a ubatch reads beyond the active ones, same
    engines) add expert_stream_seconds_per_token at the device's bandwidth.
    The result is multiplied by the family / weights-kind / vendor correction and
    bounded by the family's hold-out range for the local engines (speed.corrections).
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
    if streams_per_ubatch(engine):
        seconds += offload_stream_seconds_per_token(
            offloaded_bytes, prompt_tokens, n_ubatch, host_link_gbps
        ) + expert_stream_seconds_per_token(
            stream_bytes, prompt_tokens, n_ubatch, device.bandwidth_gbps, expert_stream_share()
        ) / max(tensor_parallel, 1)
    tps = speed_multiplier("prefill", engine, backend, device, weights_name, moe=is_moe) / seconds
    rng = family_range("prefill", device, engine)
    low, high = (
        (rng.ratio_low, rng.ratio_high)
        if rng
        else (
            fac.prefill_ratio_low,
            fac.prefill_ratio_high,
        )
    )
    return PrefillSpeed(tokens_per_s=Range(tps, tps * low, tps * high), flops_per_token=flops)


def prefill_compute_tflops(fp16_tflops: float | None, int8_tops: float | None) -> float | None:
    """The compute rate the prefill MFU is fitted against: max(fp16 TFLOPS, int8 TOPS / 2).

    llama.cpp's quantised matmuls (MMQ) use int8 tensor-core MMA, and GeForce cards' listed
    fp16 rate is the FP32-accumulate one (half the FP16-accumulate rate, accelerators.csv
    notes), so RTX 4090 (165 fp16 / 661 int8) and RTX 6000 Ada (364 / 728) with the same
    AD102 chip get similar prefill speeds in throughput.csv; int8 / 2 puts them level.
    """
    rates = [r for r in (fp16_tflops, int8_tops / 2 if int8_tops else None) if r]
    return max(rates) if rates else None


def power_capped_tflops(
    tflops: float, tdp_w: float | None, vendor: str, tflops_per_watt: float
) -> float:
    """The compute rate an NVIDIA board sustains in llama.cpp's prefill matmuls:
    min(tflops, tflops_per_watt x board power).

    A tensor-core GEMM at the listed rate draws more than some boards may: the RTX 6000
    Ada (300 W) and L40S (350 W) list 364 TFLOPS (int8 / 2) but prefill slower than the
    450 W RTX 4090 listed at 330 (throughput.csv: 5,792 and 6,035 against 7,139 tokens/s,
    Llama 3 8B Q4_K_M), and the 350 W H100 PCIe gains 1.36x over the A100 PCIe where its
    listing promises 2.4x. tflops_per_watt is fitted on the llama.cpp NVIDIA prefill rows
    with a board power (calibration.json "prefill_tflops_per_watt"; 0 = no cap). Example at
    0.9 TFLOPS per W: RTX 6000 Ada min(364, 0.9 x 300) = 270; RTX 4090 min(330, 405) = 330.
    Other vendors, boards without a power figure: the listed rate.
    """
    if tflops_per_watt <= 0 or not tdp_w or vendor != "nvidia":
        return tflops
    return min(tflops, tflops_per_watt * tdp_w)


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


# The engines that run a prompt in ubatches, each reading the weights it uses once: the
# llama.cpp family (and its wrappers) and MLX. Their prefill adds the host-RAM and expert
# streaming terms; the serving engines' batched model has its own.
UBATCH_ENGINES = ("llama.cpp", "mlx")


def streams_per_ubatch(engine: str) -> bool:
    """Whether `engine` (any spelling normalize_engine knows) is one of UBATCH_ENGINES."""
    return normalize_engine(engine) in UBATCH_ENGINES


def moe_stream_bytes(work: DecodeWork, ubatch_tokens: int) -> float:
    """Routed-expert bytes an MoE prefill ubatch reads beyond the active ones:
    expert_bytes x (expert_coverage(ubatch, E, k) - k / E).

    One ubatch of u tokens routes u x k expert slots over E experts and touches a share
    1 - (1 - k/E)^u of them (decode.expert_coverage); the k/E share that a token reads
    anyway is in the active parameters, so the rest is read only because of the batch.
    Example: gpt-oss-120b (E 128, k 4, ~57 GB of MXFP4 experts), u 512: coverage
    1 - (124/128)^512 = 1.0, so 57 x (1 - 4/128) = 55 GB per ubatch. 0 for dense models
    and MoE models without expert shapes.
    """
    e, k = work.n_experts, work.n_experts_per_token
    if not work.is_moe or not e or not k or work.expert_bytes <= 0:
        return 0.0
    return work.expert_bytes * max(expert_coverage(ubatch_tokens, e, k) - k / e, 0.0)


def expert_stream_seconds_per_token(
    stream_bytes: float,
    prompt_tokens: int,
    n_ubatch: int,
    bandwidth_gbps: float,
    share: float,
) -> float:
    """Prefill seconds per prompt token spent reading an MoE model's experts once per ubatch.

    llama.cpp's MUL_MAT_ID runs each ubatch of min(n_ubatch, prompt) tokens expert by
    expert, so every expert the ubatch touches is read once per ubatch however few tokens
    it got: stream_bytes (moe_stream_bytes) at the device's bandwidth x share, shared by
    the ubatch's tokens:

        stream_bytes / (bandwidth x share x min(n_ubatch, prompt))

    share is the rate llama.cpp reaches reading experts (calibration.json
    "prefill_expert_stream_share": the median of bytes read x tokens/s / bandwidth over
    throughput.csv's MoE decode rows at batch 1). Example: gpt-oss-120b, 55 GB per ubatch
    of 512 on a 1,792 GB/s card at share 0.54: 55e9 / (1792e9 x 0.54 x 512) = 111 us per
    token, a ceiling of ~9,000 tokens/s however fast the matmuls. Dense models: 0.
    """
    if stream_bytes <= 0 or bandwidth_gbps <= 0 or prompt_tokens <= 0 or share <= 0:
        return 0.0
    return stream_bytes / (bandwidth_gbps * GB * share * min(n_ubatch, prompt_tokens))
