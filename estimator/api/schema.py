"""Typed request and result of the public estimator contract (see docs/estimator.md).

Every request field that may be left out has its default here, next to the field, and
the same default is listed in docs/estimator.md. Requests are frozen and hashable so the
expensive per-model work (tensor inventory, per-quant weights) can be cached on them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from estimator.units import Range

# The engines, their backends and cache types: estimator.engines.ENGINE_TABLE.
MLA_LAYOUTS = ("latent", "latent_kv", "full")
VENDORS = ("nvidia", "amd", "apple", "intel", "cpu", "other")
MEMORY_KINDS = ("discrete", "unified")
DEVICE_CLASSES = ("consumer", "datacenter")
FINETUNE_METHODS = ("full", "lora", "qlora")


@dataclass(frozen=True)
class ModelInput:
    """The model's config.json, kept as canonical JSON text so requests stay hashable.

    max_context_tokens: a longer context than config.json allows that the model card
    states with RoPE scaling (Qwen3-8B: 131,072 with YaRN; config.json 40,960); None to
    take the config's own (ModelSpec.extended_context_tokens)."""

    hf_config_json: str
    max_context_tokens: int | None = None

    @property
    def hf_config(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.hf_config_json)
        return loaded


@dataclass(frozen=True)
class WeightsSpec:
    format: str  # "gguf" | "hf"
    quant: str | None = None  # GGUF file type, e.g. "Q4_K_M"
    dtype: str | None = None  # HF dtype, e.g. "bf16", "fp8", "awq-int4"
    file_bytes: int | None = None  # measured GGUF file size; overrides the computed size
    imatrix: bool = True
    group_size: int = 128

    @property
    def name(self) -> str:
        """The format name the weights module understands (quant, dtype or "custom")."""
        return self.quant or self.dtype or "custom"


@dataclass(frozen=True)
class Device:
    memory_gb: float  # per device, decimal GB
    bandwidth_gbps: float  # per device, decimal GB/s
    fp16_tflops: float | None = None
    fp8_tflops: float | None = None
    int8_tops: float | None = None  # dense INT8 tensor rate (llama.cpp's quantized matmuls)
    fp4_tflops: float | None = None  # dense FP4 tensor rate (Blackwell, MI355X): serving GEMMs
    tdp_w: float | None = None  # board power per device, W: llama.cpp prefill's power cap
    count: int = 1
    memory_kind: str = "discrete"
    vendor: str = "nvidia"
    interconnect_gbps: float | None = None
    host_memory_gb: float | None = None
    host_bandwidth_gbps: float | None = None
    name: str | None = None
    device_class: str | None = None  # "consumer" | "datacenter"; None = speed.device_class_for
    architecture: str | None = None  # "Pascal", "Volta", "GCN 5" ...: speed.architecture_factor
    # fp16_tflops was imputed from the unit count and clock (speed.compute_rates), not
    # published; fp16_imputed_from is the arithmetic ("38 GPU cores x 128 ALUs x ...")
    fp16_imputed: bool = False
    fp16_imputed_from: str | None = None
    memory_type: str | None = None  # "HBM3", "GDDR7", "LPDDR5X" ...: speed.device_family


def metal_working_set(device: Device) -> bool:
    """Apple's GPU may wire only the Metal working set of its unified RAM (see
    memory.apple_gpu_working_set_bytes); other unified-memory devices (DGX Spark, Strix
    Halo) give engines the total their driver reports, so the caller passes that total."""
    return device.memory_kind == "unified" and device.vendor == "apple"


@dataclass(frozen=True)
class Engine:
    name: str = "llama.cpp"
    backend: str = "cuda"
    n_ubatch: int = 512
    n_batch: int = 2048
    flash_attention: bool = True
    type_k: str | None = None  # llama.cpp -ctk; None = the workload's kv_cache_dtype
    type_v: str | None = None
    gpu_memory_utilization: float | None = None  # None = the engine's default (memory.py)
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None  # None = memory.VLLM_MAX_NUM_SEQS
    block_size: int = 16
    cuda_graphs: bool = True
    mla_layout: str | None = None  # MLA cache layout; None = the engine's current default
    swa_full: bool = False  # llama.cpp --swa-full: sliding layers cache the full context


@dataclass(frozen=True)
class Offload:
    fraction: float = 0.0  # share of the repeating layers kept in host memory
    layers: int | None = None  # exact number of layers in host memory
    moe_experts: bool = False  # all routed experts in host memory (--cpu-moe / -ot exps=CPU)
    moe_layers: int | None = None  # routed experts of the first N layers (--n-cpu-moe N)


@dataclass(frozen=True)
class Workload:
    context_tokens: int = 8192
    concurrent_sequences: int = 1
    prompt_tokens: int = 512
    output_tokens: int = 256
    kv_cache_dtype: str = "f16"
    tensor_parallel: int = 1
    offload: Offload = field(default_factory=Offload)


@dataclass(frozen=True)
class Pricing:
    usd_per_hour: float | None = None  # rent: price of the whole instance per hour
    purchase_usd: float | None = None  # buy: hardware price for all devices
    power_w: float | None = None  # buy: wall power while serving
    usd_per_kwh: float = 0.15
    amortisation_years: float = 3.0
    utilisation: float = 1.0  # share of the counted hours at power_w
    hours_per_day: float = 24.0
    pue: float = 1.0  # datacenter power usage effectiveness


@dataclass(frozen=True)
class ServingTargets:
    """The service level of the serving point (result "serving"): the most users that
    each decode at tokens_per_s_per_user or faster with a first token within ttft_s.
    cached_prompt_share: the share of every prompt the engine's prefix cache serves (a
    shared system prompt, a chat's earlier turns), left out of each step's prefill."""

    tokens_per_s_per_user: float = 20.0
    ttft_s: float = 1.0
    cached_prompt_share: float = 0.0


@dataclass(frozen=True)
class FinetuneSpec:
    method: str = "lora"
    lora_rank: int = 16
    batch_size: int = 1
    sequence_tokens: int = 2048
    gradient_checkpointing: bool = True
    optimizer: str = "adamw"


@dataclass(frozen=True)
class Request:
    model: ModelInput
    weights: WeightsSpec
    device: Device
    engine: Engine
    workload: Workload
    pricing: Pricing | None = None
    finetune: FinetuneSpec | None = None
    recommend: bool = False
    id: str | None = None
    serving_targets: ServingTargets | None = None


@dataclass(frozen=True)
class Fit:
    """The verdict (estimator.memory.fit_verdict): does_not_fit only above what the device
    can give the engine; tight when it fits with under 8 % of the default budget to spare,
    including a need inside the engine's default margin (within_default_margin), which
    starts with start_flags (and on a Mac the raised wired limit)."""

    verdict: str  # "comfortable" | "tight" | "does_not_fit"
    reserve_bytes: int  # usable_bytes_per_device - need (negative within the margin)
    reserve_fraction: float
    utilisation: float
    margin_bytes: int = 0  # what the engine's defaults leave unused that start flags release
    within_default_margin: bool = False  # fits only with start_flags / wired_limit_mb
    start_flags: tuple[str, ...] = ()  # engine command-line words, e.g. ("--fit", "off")
    start_memory_share: float | None = None  # servers: the share start_flags set
    wired_limit_mb: int | None = None  # Apple: sudo sysctl iogpu.wired_limit_mb=N


@dataclass(frozen=True)
class Explanation:
    figure: str
    formula: str
    inputs: dict[str, float | int | str | bool | None]
    value: float | int
    source: str


@dataclass(frozen=True)
class QuantChoice:
    """One quant of the ladder on the request's device (estimator.api.recommend)."""

    name: str
    nominal_bits_per_weight: float
    fits: bool
    verdict: str
    per_device_bytes: int
    decode_tokens_per_s: float


@dataclass(frozen=True)
class PlanStep:
    """One single change that brings a request within memory, as the estimator sizes the
    changed request (estimator.api.recommend.make_it_fit)."""

    action: str  # "shorter_context" | "quantize_kv" | "smaller_quant" | ...
    description: str
    flags: tuple[str, ...]  # engine command-line flags that apply the step
    fits: bool
    verdict: str
    per_device_bytes: int
    usable_bytes_per_device: int
    decode_tokens_per_s: float
    context_tokens: int
    change: dict[str, Any]  # the request fields the step changes


@dataclass(frozen=True)
class Recommendations:
    """The result's "recommendations" section (request "recommend"): the least-compressed
    quant at or above the quality floor that fits, and when the request does not fit, the
    ranked single changes that make it fit (empty when it fits). The floor: tier
    `min_quality_tier` or better (estimator.quality) and `min_bits_per_weight`."""

    min_bits_per_weight: float
    best_quant: QuantChoice | None
    make_it_fit: tuple[PlanStep, ...]
    min_quality_tier: str = "good"


@dataclass(frozen=True)
class Result:
    """Everything the estimator says about one request; numbers only, no formatted text."""

    params_total: int
    params_active: int
    params_multimodal: int
    weights_bytes: int
    per_device_weights_bytes: int
    multimodal_bytes: int
    offloaded_bytes: int
    kv_cache_bytes: int
    kv_cache_bytes_per_token: float
    overhead_bytes: int
    overhead_breakdown: dict[str, int]
    total_bytes: int
    per_device_bytes: int
    usable_bytes_per_device: int
    fit: Fit
    max_context_tokens: int
    kv_cache_capacity_tokens: int
    max_concurrent_sequences: int
    decode_tokens_per_s: Range
    aggregate_decode_tokens_per_s: Range
    prefill_tokens_per_s: Range | None  # None without device.fp16_tflops
    ttft_s: Range | None
    explanation: tuple[Explanation, ...]
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    # False when no published measurement covers the engine on this backend and device
    # class: the speeds use a wider group's factors (speed.measured_group).
    speed_calibrated: bool = True
    cost: dict[str, Any] | None = None
    finetune: dict[str, Any] | None = None
    recommendations: Recommendations | None = None
    id: str | None = None
    # vLLM, SGLang and TensorRT-LLM on the GPUs alone: the batched serving point
    # (extras.serving_section); None for the llama.cpp family and offloaded setups
    serving: dict[str, Any] | None = None
    # The FP16 rate the speeds used when it was not a published one: imputed (with its
    # arithmetic) or unknown (decode then counts no compute time); None for a given rate
    # (api/compute_rate.py, compute_rate_section)
    compute_rate: dict[str, Any] | None = None
    # The local engines' hardware family behind the speed corrections and ranges
    # (calibrated.speed_family_section); None for the serving engines
    speed_family: dict[str, Any] | None = None
