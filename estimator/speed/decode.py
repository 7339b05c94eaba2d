"""Decode speed (the package docstring's decode model): one step reads the weights and
the KV cache and computes 2 x active params per token,

    step_s = memory_s + compute_s + host_s + comm_s + decode_overhead_s x n_layers / 32

with MoE expert coverage, sliding windows, tensor-parallel all-reduces and CPU-offloaded
bytes each in their own term below.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.factors import SpeedFactors
from estimator.speed.corrections import (
    FamilyRange,
    family_range,
    speed_multiplier,
)
from estimator.speed.devices import TFLOP, Device, Parallelism, architecture_factor
from estimator.speed.groups import resolve_factors
from estimator.units import GB, Range

# decode_overhead_s is fitted per step of a model with this many layers and scaled by
# n_layers / OVERHEAD_REFERENCE_LAYERS (overhead_scale); 32 = Llama 3 8B / Llama 2 7B.
OVERHEAD_REFERENCE_LAYERS = 32


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
    correction: float = 1.0,
) -> tuple[float, bool]:
    """Central estimate of one decode step (seconds) and whether memory time >= compute time.

    step = memory + compute + host + comm + decode_overhead_s x overhead_scale(n_layers)
    (x architecture_factor for GPUs older than Turing)
    (+ moe_decode_overhead_s for MoE models; module docstring). host =
    offloaded bytes / (host GB/s x host_share); raises if bytes are offloaded without a host
    bandwidth. correction divides the step: the tokens/s multiplier of the device's family
    and the weights kind (speed.corrections.speed_multiplier).
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
    return step * architecture_factor(device.architecture) / correction, memory >= compute


def decode_bounds(
    tokens_per_s: float, factors: SpeedFactors, family: FamilyRange | None = None
) -> Range:
    """A decode estimate with its bounds: estimate x the quantiles of the whole-device
    hold-out ratios (measured / predicted, calibration.json) of the device's hardware
    family when given (speed.corrections.family_range: narrow where the family has many
    measurements, wide where it has few or none), else of the engine group's, so about
    85 % of measurements on an unseen device fall inside."""
    if family is not None:
        return Range(
            tokens_per_s, tokens_per_s * family.ratio_low, tokens_per_s * family.ratio_high
        )
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
    weights_name: str = "",
) -> DecodeSpeed:
    """Mean decode speed while generating `output_tokens` after `prompt_tokens`, at `batch`
    concurrent sequences: per sequence = 1 / step, aggregate = batch / step.

    The step is taken at the mean depth prompt + output/2 (llama-bench tgN: prompt 0,
    output N). low/high = estimate x the group's held-out residual quantiles. Excludes
    prefill time (see ttft_seconds), sampling on the host and network latency.
    weights_name (GGUF type or HF dtype) selects the weights-kind correction of
    llama.cpp-family engines (speed.corrections).
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
        correction=speed_multiplier("decode", engine, backend, device, weights_name),
    )
    per_seq_range = decode_bounds(1.0 / step, fac, family_range("decode", device, engine))
    return DecodeSpeed(
        per_sequence_tokens_per_s=per_seq_range,
        aggregate_tokens_per_s=per_seq_range.scaled(batch),
        step_s=step,
        memory_bound=memory_bound,
    )


def step_range(speed: DecodeSpeed) -> Range:
    """Per-sequence decode speed turned into a step-time range (seconds)."""
    return speed.per_sequence_tokens_per_s.inverted()
