"""Batched serving speed of vLLM, SGLang and TensorRT-LLM: one engine step, rooflined.

A serving engine runs steps. Each step reads the weights once, reads each running
sequence's KV cache at its current length, multiplies the batch's tokens (one per
decoding sequence plus the prefill chunk that continuous batching with chunked prefill
puts in the same step) and, under tensor parallelism, all-reduces twice per layer:

    tokens     = batch + prefill_tokens
    bandwidth  = peak bandwidth x the hardware's measured share x bandwidth_share
                 (x the class factor for hardware without measured tables)
    weights_s  = weight bytes read for `tokens` (MoE: experts touched, speed.expert_coverage)
                 / bandwidth                                  [per device under TP]
    gemm_s     = 2 x active params x tokens / (peak at the precision
                 x the hardware's measured GEMM share at that precision
                 x compute_share [moe_compute_share for MoE models] x class factor)
    linear_s   = max(weights_s, gemm_s)                       # the roofline: overlapped
    attention_s= batch x KV bytes at the sequence's depth / bandwidth
                 + prefill_tokens x 4 x layers x n_heads x head_dim x mean prompt context
                   / (BF16 peak x the measured attention share x compute_share
                      x class factor)
    comm_s     = 2 x layers x all-reduce(tokens x hidden x 2 bytes)   (speed.allreduce_seconds)
    step_s     = linear_s + attention_s + comm_s + (step_overhead_s [+ moe_step_overhead_s])
                 x layers / 32 + sequence_overhead_s x batch

The peak is the precision's own dense tensor rate (`precision_tflops`): FP8 weights run
FP8 GEMMs where the device has an FP8 rate, FP4 weights FP4 GEMMs where it has an FP4
rate (Blackwell, MI355X), INT8 (W8A8) the INT8 rate; 4-bit integer weights (AWQ, GPTQ)
and everything else multiply in BF16.

Closed-loop serving (a benchmark at fixed concurrency, or users who come back): over one
user's request cycle the batch's prompts are spread over the steps, at most
`max_num_batched_tokens` a step (`closed_loop_point`, which gives TPOT, TTFT and the
aggregate output tokens/s). A run at a given request rate takes its users from Little's
law, rate x request cycle (calibration.serving.predicted).

What the hardware reaches is measured, not fitted: HARDWARE_EFFICIENCY holds the shares
of peak bandwidth and of each precision's peak that NVIDIA's per-operation tables show.
What the engine adds on top is fitted per engine family on `data/validation/serving.csv`
by `python -m estimator.calibration.serving` and read from
`data/serving_calibration.json`: bandwidth_share and compute_share as multipliers of the
hardware's shares (1 = the engine reaches what the bare kernels reach), the step and
per-sequence overheads, the MoE terms, the held-out bounds; and a compute factor per
hardware class that has no measured tables (AMD CDNA 3 ...).
Excludes: speculative decoding, prefix-cache hits beyond `cached_prompt_share`, pipeline
parallelism and CPU offload (serving engines keep the model on the GPUs).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from estimator.speed import (
    TFLOP,
    DecodeWork,
    Device,
    Parallelism,
    comm_seconds_per_step,
    kv_bytes_read,
    normalize_backend,
    normalize_engine,
    overhead_scale,
    weight_bytes_per_step,
)
from estimator.units import GB, Range

SERVING_CALIBRATION_JSON = Path(__file__).resolve().parent / "data" / "serving_calibration.json"
# vLLM V1's default chunk for online serving on datacenter GPUs (max_num_batched_tokens;
# vllm/engine/arg_utils.py, "default_max_num_batched_tokens", UsageContext.OPENAI_API_SERVER:
# 8192 on GPUs with >= 70 GiB, else 2048); SGLang's chunked_prefill_size is 8192 on H100-class.
DEFAULT_CHUNK_TOKENS = 8192
# What the hardware itself reaches, from NVIDIA's measured per-operation tables
# (ai-dynamo/aiconfigurator @095f58a5, systems/data/<gpu>/gemm, TensorRT-LLM 1.3.0rc20;
# A100: 1.0.0; Apache-2.0, (c) NVIDIA CORPORATION & AFFILIATES): per hardware class, the
# share of peak HBM bandwidth a weight-streaming GEMM reaches at one token (median over
# shapes at least twice the L2 cache: H100 82 %, H200 81 %, B200 80 %, A100 77 %; L40S
# 91 % is partly L2, 85 % here), and the share of each precision's dense peak an
# 8192^3 GEMM reaches (H100 79 % BF16 / 63 % FP8, H200 82 / 63, B200 66 / 52 / NVFP4 43,
# A100 84, L40S 62 / 49), and the BF16 share causal prefill attention reaches at 8-16k
# tokens ("context_attention": H100/H200 51-54 %, B200 ~50 %, A100 ~46 %, L40S ~40 %).
# Other hardware (AMD, Intel, Huawei ...) takes DEFAULT_EFFICIENCY and a fitted class
# factor where serving rows exist (serving_calibration.json).
HARDWARE_EFFICIENCY: dict[str, tuple[float, dict[str, float]]] = {
    "ampere": (0.77, {"bf16": 0.84, "int8": 0.84, "attention": 0.46}),
    "hopper": (0.81, {"bf16": 0.80, "fp8": 0.63, "int8": 0.63, "attention": 0.52}),
    "blackwell": (0.80, {"bf16": 0.66, "fp8": 0.52, "fp4": 0.43, "int8": 0.52, "attention": 0.50}),
    "ada": (0.85, {"bf16": 0.62, "fp8": 0.49, "int8": 0.49, "attention": 0.40}),
}
# Hardware without measured tables: the median of the measured classes.
DEFAULT_EFFICIENCY: tuple[float, dict[str, float]] = (
    0.80,
    {"bf16": 0.79, "fp8": 0.63, "fp4": 0.43, "int8": 0.63, "attention": 0.48},
)
MEASURED_CLASSES = tuple(HARDWARE_EFFICIENCY)


def hardware_efficiency(hardware: str, precision: str) -> tuple[float, float]:
    """(bandwidth share, GEMM share of the precision's peak) the hardware class reaches
    in NVIDIA's measured tables (HARDWARE_EFFICIENCY), DEFAULT_EFFICIENCY without them."""
    bandwidth, gemm = HARDWARE_EFFICIENCY.get(hardware, DEFAULT_EFFICIENCY)
    return bandwidth, gemm.get(precision, gemm["bf16"])


@dataclass(frozen=True)
class ServingFactors:
    """Fitted efficiencies of one engine family (serving_calibration.json).

    bandwidth_share: multiplier of the hardware's measured bandwidth share
    (HARDWARE_EFFICIENCY) for the engine's weight and KV reads; compute_share: multiplier
    of the hardware's measured GEMM share; step_overhead_s:
    fixed time per step and 32 layers (kernel launches, scheduler, sampling);
    moe_step_overhead_s: the extra per step of MoE models (routing, permutation);
    sequence_overhead_s: host time per running sequence and step.
    ratio_low / ratio_high: quantiles (10 % / 90 %) of measured / predicted on rows whose
    device was held out of the fit, so the bounds are what an unseen device showed.
    """

    group: str
    bandwidth_share: float
    compute_share: float
    step_overhead_s: float
    moe_step_overhead_s: float = 0.0
    # compute_share of mixture-of-experts models (grouped expert GEMMs with few tokens
    # per expert, routing and token permutation); None = compute_share
    moe_compute_share: float | None = None
    # host time per running sequence and step (scheduling, input preparation, sampling,
    # detokenisation in the engine's Python or C++ loop); grows with the batch
    sequence_overhead_s: float = 0.0
    ratio_low: float = 0.7
    ratio_high: float = 1.3
    rows: int = 0


@lru_cache(maxsize=1)
def load_serving_calibration() -> dict[str, Any]:
    """serving_calibration.json as a dict (read once per process)."""
    with SERVING_CALIBRATION_JSON.open() as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def _factors_from(key: str, entry: dict[str, Any]) -> ServingFactors:
    return ServingFactors(
        group=key,
        bandwidth_share=float(entry["bandwidth_share"]),
        compute_share=float(entry["compute_share"]),
        step_overhead_s=float(entry["step_overhead_s"]),
        moe_step_overhead_s=float(entry.get("moe_step_overhead_s", 0.0)),
        sequence_overhead_s=float(entry.get("sequence_overhead_s", 0.0)),
        moe_compute_share=(
            float(entry["moe_compute_share"]) if entry.get("moe_compute_share") else None
        ),
        ratio_low=float(entry.get("ratio_low", 0.7)),
        ratio_high=float(entry.get("ratio_high", 1.3)),
        rows=int(entry.get("rows", 0)),
    )


def serving_group_candidates(engine: str, backend: str) -> tuple[str, ...]:
    """Groups to try, most specific first: engine/backend, engine, then "serving" (all
    serving engines pooled)."""
    eng, back = normalize_engine(engine), normalize_backend(backend)
    return (f"{eng}/{back}", eng, "serving")


@cache
def serving_factors(engine: str, backend: str) -> ServingFactors:
    """The factors of the most specific fitted group (serving_group_candidates)."""
    groups = load_serving_calibration()["groups"]
    key = next(k for k in serving_group_candidates(engine, backend) if k in groups)
    return _factors_from(key, groups[key])


def serving_calibrated(engine: str, backend: str) -> bool:
    """Whether rows of this engine on this backend back its factors (the group names the
    backend); otherwise another backend's or the pooled factors stand in."""
    return "/" in serving_factors(engine, backend).group


def compute_precision(weights_name: str) -> str:
    """The GEMM precision a serving engine runs a weights format at: "fp8" (FP8, W8A8-FP8),
    "fp4" (NVFP4, MXFP4), "int8" (W8A8 INT8), else "bf16" (BF16/FP16 and weight-only
    4-bit integer formats such as AWQ and GPTQ, which dequantise to BF16)."""
    name = weights_name.strip().lower()
    if "fp8" in name or name in ("w8a8-fp8", "f8"):
        return "fp8"
    if "fp4" in name:
        return "fp4"
    if name in ("w8a8", "int8", "w8a8-int8"):
        return "int8"
    return "bf16"


def precision_tflops(device: Device, precision: str) -> tuple[float | None, str]:
    """(dense TFLOPS, the precision it is) for GEMMs at `precision`: the device's own rate
    for it when known, else the next wider one it has (FP4 -> FP8 -> BF16; INT8 -> BF16).
    Returns (None, "bf16") when the device has no BF16 rate."""
    ladder = {
        "fp4": (("fp4", device.fp4_tflops), ("fp8", device.fp8_tflops)),
        "fp8": (("fp8", device.fp8_tflops),),
        "int8": (("int8", device.int8_tops),),
    }.get(precision, ())
    for label, rate in ladder:
        if rate:
            return rate, label
    return device.fp16_tflops, "bf16"


# GPU generation from the catalog's architecture (or the device name): the serving
# calibration fits one compute multiplier per class (serving_calibration.json
# "hardware_classes"); a class without enough rows gets 1.
_HARDWARE_CLASSES = (
    ("blackwell", "blackwell"),
    ("hopper", "hopper"),
    ("ada", "ada"),
    ("ampere", "ampere"),
    ("cdna 3", "cdna3"),
    ("cdna3", "cdna3"),
    ("cdna 4", "cdna4"),
    ("cdna4", "cdna4"),
)
_NAME_CLASSES = (
    ("gb200", "blackwell"),
    ("b200", "blackwell"),
    ("b300", "blackwell"),
    ("rtx pro 6000", "blackwell"),
    ("rtx 50", "blackwell"),
    ("h100", "hopper"),
    ("h200", "hopper"),
    ("h20", "hopper"),
    ("h800", "hopper"),
    ("gh200", "hopper"),
    ("l40", "ada"),
    ("l4", "ada"),
    ("rtx 40", "ada"),
    ("6000 ada", "ada"),
    ("a100", "ampere"),
    ("a800", "ampere"),
    ("a40", "ampere"),
    ("a10", "ampere"),
    ("rtx 30", "ampere"),
    ("mi300", "cdna3"),
    ("mi325", "cdna3"),
    ("mi355", "cdna4"),
)


def hardware_class(architecture: str, name: str = "") -> str:
    """ "ampere" | "ada" | "hopper" | "blackwell" | "cdna3" | "cdna4" from the architecture
    ("Hopper", "CDNA 3") or, without one, the device name; "" when neither tells."""
    arch = architecture.strip().lower()
    found = next((cls for key, cls in _HARDWARE_CLASSES if arch.startswith(key)), "")
    if found:
        return found
    lowered = name.lower()
    return next((cls for key, cls in _NAME_CLASSES if key in lowered), "")


def class_factor(hardware: str) -> float:
    """The fitted multiplier of a hardware class without measured tables: its share of
    DEFAULT_EFFICIENCY's bandwidth and compute (1 when not fitted)."""
    entry = load_serving_calibration().get("hardware_classes", {}).get(hardware)
    return float(entry["compute_factor"]) if entry else 1.0


@dataclass(frozen=True)
class StepTime:
    """One engine step and its parts, seconds (the parts add up to step_s)."""

    step_s: float
    weights_s: float
    gemm_s: float
    attention_s: float
    comm_s: float
    overhead_s: float
    batch: float
    prefill_tokens: float

    @property
    def compute_bound(self) -> bool:
        return self.gemm_s > self.weights_s


@dataclass(frozen=True)
class StepInputs:
    """What does not change from step to step of one setup."""

    work: DecodeWork
    device: Device
    parallelism: Parallelism
    factors: ServingFactors
    precision: str = "bf16"
    attention_width: int = 0  # n_heads x head_dim
    # MLA's latent cache is one vector per token shared by all heads: every tensor-parallel
    # rank keeps and reads all of it (DeepSeek-V3 and kin), unlike per-head K/V
    kv_replicated: bool = False
    # the hardware class's multiplier of the default efficiencies (class_factor): 1 for
    # classes with measured tables; bandwidth and compute alike for the others
    compute_factor: float = 1.0
    hardware: str = ""  # hardware_class of the device: its measured efficiencies


def _tp(par: Parallelism) -> int:
    return par.n_devices if par.mode == "tensor" and par.n_devices > 1 else 1


@dataclass(frozen=True, slots=True)
class StepWork:
    """What one step moves and computes, before any efficiency: bytes one device reads
    (weights, KV), FLOPs it runs (GEMMs at their precision's peak, prefill attention at
    BF16), the interconnect seconds and the overhead's layer scale."""

    weight_bytes: float
    kv_bytes: float
    gemm_flops: float
    gemm_peak_flops: float  # the precision's dense peak x the hardware's measured GEMM share
    attention_flops: float
    bf16_peak_flops: float  # x the hardware's measured prefill-attention share
    bandwidth_bytes_per_s: float  # peak x the hardware's measured bandwidth share
    comm_s: float
    layer_scale: float
    batch: float
    prefill_tokens: float
    is_moe: bool
    compute_factor: float = 1.0  # the hardware class's (StepInputs.compute_factor)


def step_work(
    inputs: StepInputs,
    *,
    batch: float,
    depth_tokens: float,
    prefill_tokens: float = 0.0,
    prompt_tokens: float = 0.0,
) -> StepWork:
    """The StepWork of one step (module docstring): `batch` decoding sequences at mean KV
    depth `depth_tokens` and `prefill_tokens` prompt tokens of prompts `prompt_tokens`
    long. Raises ValueError when the device has no bandwidth or no BF16 rate."""
    work, device, par = inputs.work, inputs.device, inputs.parallelism
    if device.bandwidth_gbps <= 0 or not device.fp16_tflops:
        raise ValueError("serving speed needs the device's bandwidth and BF16 TFLOPS")
    tp = _tp(par)
    tokens = batch + prefill_tokens
    weights = weight_bytes_per_step(work, max(1, math.ceil(tokens)))
    replicated = min(work.replicated_bytes, weights) if tp > 1 else 0.0
    peak, label = precision_tflops(device, inputs.precision)
    bw_share, gemm_share = hardware_efficiency(inputs.hardware, label)
    attention_share = hardware_efficiency(inputs.hardware, "attention")[1]
    kv_ranks = 1 if inputs.kv_replicated else tp
    attn_flops = prefill_tokens * 4.0 * work.n_layers * inputs.attention_width
    return StepWork(
        weight_bytes=(weights - replicated) / tp + replicated,
        kv_bytes=batch * kv_bytes_read(work, depth_tokens) / kv_ranks,
        gemm_flops=2.0 * work.params_active * tokens / tp,
        gemm_peak_flops=(peak or device.fp16_tflops) * TFLOP * gemm_share,
        attention_flops=attn_flops * (prompt_tokens / 2) / tp,
        bf16_peak_flops=device.fp16_tflops * TFLOP * attention_share,
        bandwidth_bytes_per_s=device.bandwidth_gbps * GB * bw_share,
        comm_s=comm_seconds_per_step(work, par, max(1, math.ceil(tokens))),
        layer_scale=overhead_scale(work.n_layers),
        batch=batch,
        prefill_tokens=prefill_tokens,
        is_moe=work.is_moe,
        compute_factor=inputs.compute_factor,
    )


def _step_parts(sw: StepWork, fac: ServingFactors) -> tuple[float, float, float, float, float]:
    """(step, weights, GEMM, attention, overhead) seconds of a step (step_seconds)."""
    bandwidth = sw.bandwidth_bytes_per_s * fac.bandwidth_share * sw.compute_factor
    weights_s = sw.weight_bytes / bandwidth
    base = fac.moe_compute_share if sw.is_moe and fac.moe_compute_share else fac.compute_share
    gemm_s = sw.gemm_flops / (sw.gemm_peak_flops * base * sw.compute_factor)
    attention_s = sw.kv_bytes / bandwidth + sw.attention_flops / (
        sw.bf16_peak_flops * fac.compute_share * sw.compute_factor
    )
    fixed = fac.step_overhead_s + (fac.moe_step_overhead_s if sw.is_moe else 0.0)
    overhead_s = fixed * sw.layer_scale + fac.sequence_overhead_s * sw.batch
    step = max(weights_s, gemm_s) + attention_s + sw.comm_s + overhead_s
    return step, weights_s, gemm_s, attention_s, overhead_s


def step_seconds(sw: StepWork, fac: ServingFactors) -> StepTime:
    """The step's time from its StepWork and the engine's factors (module docstring):
    max(weights, GEMM) + attention + communication + overhead."""
    step, weights_s, gemm_s, attention_s, overhead_s = _step_parts(sw, fac)
    return StepTime(
        step,
        weights_s,
        gemm_s,
        attention_s,
        sw.comm_s,
        overhead_s,
        sw.batch,
        sw.prefill_tokens,
    )


def step_time(
    inputs: StepInputs,
    *,
    batch: float,
    depth_tokens: float,
    prefill_tokens: float = 0.0,
    prompt_tokens: float = 0.0,
) -> StepTime:
    """One step: step_seconds(step_work(...)) with the inputs' factors."""
    sw = step_work(
        inputs,
        batch=batch,
        depth_tokens=depth_tokens,
        prefill_tokens=prefill_tokens,
        prompt_tokens=prompt_tokens,
    )
    return step_seconds(sw, inputs.factors)


def prefill_steps(prompt_tokens: float, chunk_tokens: int) -> int:
    """Steps one prompt's prefill takes: ceil(prompt / chunk), at least 1 (the first output
    token comes out of the last prefill step)."""
    return max(1, math.ceil(prompt_tokens / max(chunk_tokens, 1)))


@dataclass(frozen=True)
class ServingPoint:
    """The steady state of `batch` closed-loop users (closed_loop_point): per-user decode
    speed (1 / TPOT), the time to first token without queueing, and the aggregate output
    tokens/s over a whole request cycle."""

    batch: int
    tpot_s: float
    ttft_s: float
    cycle_s: float  # one user's request from first prefill step to last token
    output_tokens: int
    step: StepTime  # a decode step (one without prefill where the cycle has such steps)

    @property
    def per_user_tokens_per_s(self) -> float:
        return 1.0 / self.tpot_s

    @property
    def aggregate_tokens_per_s(self) -> float:
        """batch x output / cycle: what a benchmark at this concurrency reports as output
        throughput."""
        return self.batch * self.output_tokens / self.cycle_s


@dataclass(frozen=True, slots=True)
class CycleWork:
    """One closed-loop request cycle before any efficiency (closed_loop_point)."""

    batch: int
    output_tokens: int
    prefill_steps: int  # s
    steps: int  # n
    heavy_steps: int  # k
    heavy: StepWork
    light: StepWork


def cycle_work(
    inputs: StepInputs,
    *,
    batch: int,
    prompt_tokens: int,
    output_tokens: int,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    cached_prompt_share: float = 0.0,
) -> CycleWork:
    """The steps of one user's request cycle among `batch` closed-loop users
    (closed_loop_point's docstring)."""
    output = max(int(output_tokens), 1)
    share = 1.0 - min(max(cached_prompt_share, 0.0), 1.0)
    prompt = prompt_tokens * share
    s = prefill_steps(prompt, chunk_tokens)
    n = s + output - 1
    k = min(n, batch * s)
    k = max(k, math.ceil(batch * prompt / max(chunk_tokens, 1)))
    n = max(n, k)
    decoding = batch * (output - 1) / n
    depth = prompt_tokens + output / 2
    heavy = step_work(
        inputs,
        batch=decoding,
        depth_tokens=depth,
        prefill_tokens=batch * prompt / k,
        prompt_tokens=prompt_tokens,
    )
    light = step_work(inputs, batch=decoding, depth_tokens=depth) if n > k else heavy
    return CycleWork(batch, output, s, n, k, heavy, light)


def cycle_seconds(cw: CycleWork, factors: ServingFactors) -> tuple[float, float, float]:
    """(TPOT, TTFT, cycle) seconds of a CycleWork with the engine's factors (_cycle_times),
    cycle_point's figures as plain numbers (the serving calibration's grid search asks for
    millions of them)."""
    heavy = _step_parts(cw.heavy, factors)[0]
    return _cycle_times(cw, heavy, _step_parts(cw.light, factors)[0])


def _cycle_times(cw: CycleWork, heavy: float, light: float) -> tuple[float, float, float]:
    """(TPOT, TTFT, cycle) from the heavy and light step seconds:

    cycle = k x heavy step + (n - k) x light step      TTFT = s x heavy step
    TPOT  = (cycle - TTFT) / (output - 1)  (the heavy step for a one-token output)
    """
    k, n, output = cw.heavy_steps, cw.steps, cw.output_tokens
    cycle = k * heavy + (n - k) * light
    ttft = cw.prefill_steps * heavy
    tpot = (cycle - ttft) / (output - 1) if output > 1 else heavy
    return tpot, ttft, cycle


def cycle_point(cw: CycleWork, factors: ServingFactors) -> ServingPoint:
    """The ServingPoint of a CycleWork with the engine's factors (_cycle_times)."""
    light = step_seconds(cw.light, factors)
    heavy = _step_parts(cw.heavy, factors)[0]
    tpot, ttft, cycle = _cycle_times(cw, heavy, light.step_s)
    return ServingPoint(cw.batch, tpot, ttft, cycle, cw.output_tokens, light)


def closed_loop_point(
    inputs: StepInputs,
    *,
    batch: int,
    prompt_tokens: int,
    output_tokens: int,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    cached_prompt_share: float = 0.0,
) -> ServingPoint:
    """`batch` users who send a new request as soon as the last one ends (the way
    `vllm bench serve --max-concurrency` and `sglang.bench_serving` measure).

    One user's request takes n = s + output - 1 steps: s = prefill_steps(prompt, chunk)
    that carry its prompt, then output - 1 decode steps. Over those n steps the batch's
    users send batch x s prompt chunks, so k = min(n, batch x s) steps carry prefill (at
    least batch x prompt / chunk: a step holds at most `chunk_tokens`), each with
    batch x prompt / k prompt tokens, and n - k steps decode only; batch x (output - 1) / n
    sequences decode in each step. Then

        cycle = k x heavy step + (n - k) x light step
        TTFT  = s x heavy step  (no queueing)          TPOT = (cycle - TTFT) / (output - 1)
        aggregate output tokens/s = batch x output / cycle

    One user: s heavy steps of his own prompt and output - 1 light ones; many users: every
    step carries batch x prompt / n prompt tokens. The KV depth is prompt + output / 2.
    A share `cached_prompt_share` of each prompt comes from the prefix cache.
    """
    cw = cycle_work(
        inputs,
        batch=batch,
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        chunk_tokens=chunk_tokens,
        cached_prompt_share=cached_prompt_share,
    )
    return cycle_point(cw, inputs.factors)


def speed_range(value: float, factors: ServingFactors) -> Range:
    """A serving speed with its held-out bounds (value x ratio_low, value x ratio_high)."""
    return Range(value, value * factors.ratio_low, value * factors.ratio_high)


def kv_admission_sequences(
    kv_capacity_tokens: int,
    prompt_tokens: int,
    output_tokens: int,
    max_num_seqs: int,
    block_tokens: int = 16,
) -> int:
    """Sequences a paged KV pool holds in steady state: the pool over the average in-flight
    sequence, prompt + output / 2 tokens rounded up to whole blocks (vLLM and SGLang
    admit a request when its prompt's blocks are free and grow it block by block,
    preempting when the pool runs out, so on average a running sequence holds half its
    output), capped by the engine's max_num_seqs."""
    if kv_capacity_tokens <= 0:
        return 0
    mean_tokens = prompt_tokens + output_tokens / 2
    blocks = math.ceil(max(mean_tokens, 1) / block_tokens) * block_tokens
    return max(0, min(max_num_seqs, int(kv_capacity_tokens // blocks)))
