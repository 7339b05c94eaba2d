"""Catalog rows and a validated Setup in, the estimator's typed Request out.

The request is built field by field from the estimator's dataclasses (estimator.api) and
passes estimator.api.check_request, which makes parse_request's cross-field checks and
raises the same RequestError (field, message), so a page can put the complaint on the
form field at fault.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from catalog import hardware
from catalog.models import Accelerator, LLMModel, ModelWeights
from catalog.sizing.imputed import device_rate
from estimator import recommend
from estimator.api import (
    Device,
    Engine,
    Offload,
    Request,
    WeightsSpec,
    Workload,
    check_request,
    default_backend,
    model_input,
)
from estimator.api import cache as estimator_cache
from estimator.engines import llama_family, runs_gguf, runs_on_hardware
from estimator.launch import native_dtype
from estimator.units import GB
from estimator.weights import EXTRA_GGUF_FILE_TYPES, GGUF_FILE_TYPES, REPACK_BASE

# Catalog vendors are display names ("NVIDIA", "Moore Threads"); the estimator knows a few
# lower-case families. Which engine and backend run on a card is the support matrix's
# business (catalog.hardware), not the vendor's.
ESTIMATOR_VENDORS = ("nvidia", "amd", "apple", "intel")
GGUF_QUANTS: tuple[str, ...] = GGUF_FILE_TYPES + EXTRA_GGUF_FILE_TYPES
# Quants the configurator's matrix lists: the file types llama.cpp's quantize tool offers.
MATRIX_GGUF_QUANTS: tuple[str, ...] = GGUF_FILE_TYPES

# An estimator Engine field a published run set (gpu_memory_utilization, n_ubatch, ...).
EngineOption = tuple[str, int | float | bool | str | None]


@dataclass(frozen=True)
class Setup:
    """The configurator's inputs, validated by its form (units in the names). `quant` ""
    asks for the least-compressed quant that fits (workflows.size_setup picks it). `gpus`
    counts boards: a board of several devices (MI250X: 2) gives gpus x chips_per_board
    devices. `backend` "" lets the estimator pick its default for the vendor."""

    quant: str
    context_tokens: int
    gpus: int = 1
    sequences: int = 1
    kv: str = "f16"
    engine: str = "llama.cpp"
    offload_percent: int = 0
    prompt_tokens: int = 512
    output_tokens: int = 256
    backend: str = ""
    offload_moe_experts: bool = False  # llama.cpp --cpu-moe: every routed expert in host RAM
    offload_layers: int | None = None  # llama.cpp -ngl: the first N layers in host RAM
    offload_moe_layers: int | None = None  # llama.cpp --n-cpu-moe N: experts of layers 0..N-1
    host_bandwidth_gbps: float | None = None  # None: the estimator's DDR5 default
    # Further estimator Engine settings a published run used (gpu_memory_utilization,
    # n_ubatch, flash_attention, max_num_seqs, ...): validate_portal replays logs with them.
    engine_options: tuple[EngineOption, ...] = ()


def is_gguf(quant: str) -> bool:
    """A GGUF file type (GGUF_QUANTS) or an ARM repack of Q4_0, sized as Q4_0."""
    return quant in GGUF_QUANTS or quant in REPACK_BASE


def fallback_quant(engine: str) -> str:
    """The quant a setup takes when nothing fits, of the engine's weights family."""
    return "Q4_K_M" if runs_gguf(engine) else "bf16"


def family_ladder(engine: str, native: str = "") -> list[str]:
    """The quality ladder of the engine's weights family down to estimator.recommend's
    floor, least compressed first; for a model that ships quantized (`native`, from
    native_format), from its own format down (native_ladder)."""
    gguf = runs_gguf(engine)
    ladder = recommend.GGUF_LADDER if gguf else recommend.HF_LADDER
    names = [name for name, bits in ladder if recommend.within_floor(name, bits)]
    return native_ladder(names, native, gguf=gguf)


# Formats that only widen a checkpoint published in FP8 or MXFP4: they add bytes, not
# quality, so "best that fits" starts at the published format instead.
_UPCASTS = {"gguf": ("BF16", "F16", "F32"), "hf": ("bf16", "fp16", "f16")}
# The published format's name in each family: gpt-oss's MXFP4 experts are MXFP4_MOE in
# GGUF files (ggml-org/gpt-oss-*-GGUF) and "mxfp4" as a checkpoint; FP8 has no GGUF type.
_NATIVE_NAMES = {("mxfp4", True): "MXFP4_MOE", ("mxfp4", False): "mxfp4", ("fp8", False): "fp8"}


def native_format(config: Mapping[str, Any]) -> str:
    """The format a model ships in when it ships quantized: config.json's
    quantization_config.quant_method "fp8" (DeepSeek-V3) or "mxfp4" (gpt-oss); "" else
    (estimator.launch.native_dtype without the unquantized torch_dtype)."""
    dtype = native_dtype(config)
    return dtype if dtype in ("fp8", "mxfp4") else ""


def native_ladder(names: Sequence[str], native: str, *, gguf: bool) -> list[str]:
    """`names` for a model published in `native`: the published format first, and no
    format that only widens it (BF16 of an MXFP4 or FP8 checkpoint); unchanged without one."""
    if not native:
        return list(names)
    upcasts = _UPCASTS["gguf" if gguf else "hf"]
    own = _NATIVE_NAMES.get((native, gguf))
    rest = [name for name in names if name not in upcasts and name != own]
    return [own, *rest] if own else rest


def estimator_vendor(accelerator: Accelerator) -> str:
    vendor = accelerator.vendor.strip().lower()
    return vendor if vendor in ESTIMATOR_VENDORS else "other"


def can_size_accelerator(accelerator: Accelerator) -> bool:
    return bool(accelerator.memory_gb or accelerator.memory_gib) and bool(
        accelerator.bandwidth_gbps
    )


def _figure(value: float | None) -> float | None:
    """A catalog figure for the estimator: blank (None or 0) leaves its documented default."""
    return float(value) if value else None


def device(
    accelerator: Accelerator, *, count: int = 1, host_bandwidth_gbps: float | None = None
) -> Device:
    """The estimator's Device for `count` boards: count x chips_per_board devices, each
    with the memory it reports to engines (hardware.device_memory_bytes, in decimal GB as
    the estimator's contract says) and its share of the board's bandwidth and compute. The
    speed class follows the memory technology. A card without an FP16 rate gets one imputed
    from its units and clock where that can be sourced (catalog.sizing.imputed), flagged
    fp16_imputed with the arithmetic."""
    imputed = device_rate(accelerator)
    return Device(
        memory_gb=hardware.device_memory_bytes(accelerator) / GB,
        bandwidth_gbps=_figure(hardware.per_device(accelerator.bandwidth_gbps, accelerator)) or 0.0,
        fp16_tflops=_figure(hardware.per_device(accelerator.fp16_tflops, accelerator))
        or (imputed.tflops if imputed else None),
        fp8_tflops=_figure(hardware.per_device(accelerator.fp8_tflops, accelerator)),
        int8_tops=_figure(hardware.per_device(accelerator.int8_tops, accelerator)),
        fp4_tflops=_figure(hardware.per_device(accelerator.fp4_tflops, accelerator)),
        tdp_w=_figure(hardware.per_device(accelerator.tdp_w, accelerator)),
        count=count * hardware.chips(accelerator),
        memory_kind=accelerator.memory_kind,
        vendor=estimator_vendor(accelerator),
        interconnect_gbps=_figure(accelerator.interconnect_gbps),
        host_bandwidth_gbps=_figure(host_bandwidth_gbps),
        name=accelerator.name.strip() or None,
        device_class=hardware.speed_class(accelerator),
        architecture=accelerator.architecture.strip() or None,
        memory_type=accelerator.memory_type.strip() or None,
        fp16_imputed=imputed is not None,
        fp16_imputed_from=imputed.explanation if imputed else None,
    )


def measured_weights(model: LLMModel) -> dict[str, ModelWeights]:
    """The model's weights rows with a measured file size, by quant (prefetched rows)."""
    return {w.quant: w for w in model.weights.all() if w.file_bytes}


def measured_bytes(measured: Mapping[str, ModelWeights]) -> dict[str, int]:
    """GGUF quant -> measured file size, for estimator.api.sweep."""
    return {
        quant: row.file_bytes
        for quant, row in measured.items()
        if row.format == "gguf" and row.file_bytes
    }


def weights_spec(quant: str, measured: Mapping[str, ModelWeights]) -> WeightsSpec:
    """A GGUF file type (sized from its measured file when the catalog has one) or an HF
    checkpoint format."""
    if not is_gguf(quant):
        return WeightsSpec("hf", dtype=quant)
    row = measured.get(quant)
    file_bytes = row.file_bytes if row is not None and row.format == "gguf" else None
    return WeightsSpec("gguf", quant=quant, file_bytes=file_bytes)


def _engine(setup: Setup, vendor: str) -> Engine:
    """The setup's engine on its backend (the estimator's default for the vendor when the
    setup names none), with the setup's further engine settings."""
    options: dict[str, Any] = dict(setup.engine_options)
    named = setup.backend or options.pop("backend", None)
    backend = str(named) if named else default_backend(setup.engine, vendor)
    return replace(Engine(name=setup.engine, backend=backend), **options)


def sizing_request(
    *,
    model: LLMModel,
    accelerator: Accelerator,
    setup: Setup,
    measured: Mapping[str, ModelWeights],
) -> Request:
    """The estimator request for one configuration (setup.quant set). llama.cpp splits
    layers over several GPUs (-ts); vLLM-like engines use tensor parallelism over all of
    them. Raises RequestError naming the field at fault."""
    target = device(accelerator, count=setup.gpus, host_bandwidth_gbps=setup.host_bandwidth_gbps)
    workload = Workload(
        context_tokens=setup.context_tokens,
        concurrent_sequences=setup.sequences,
        prompt_tokens=setup.prompt_tokens,
        output_tokens=setup.output_tokens,
        kv_cache_dtype=setup.kv,
        tensor_parallel=1 if llama_family(setup.engine) else target.count,
        offload=Offload(
            fraction=setup.offload_percent / 100,
            layers=setup.offload_layers,
            moe_experts=setup.offload_moe_experts,
            moe_layers=setup.offload_moe_layers,
        ),
    )
    request = Request(
        model=model_input(model.config, max_context_tokens=model.rope_scaling_max_context_tokens),
        weights=weights_spec(setup.quant, measured),
        device=target,
        engine=_engine(setup, target.vendor),
        workload=workload,
    )
    return check_request(request)


def offloads(request: Request) -> bool:
    """Whether the request keeps any weights in host memory (a percentage, layers or MoE
    experts): such requests need the full estimate, not estimator.api.sweep."""
    return request.workload.offload != Offload()


def sizeable_quants(request: Request, quants: Sequence[str]) -> list[str]:
    """The quants of the request's weights family the estimator can size for its model
    (MXFP4_MOE needs experts) and, for checkpoints, the request's card runs
    (estimator.engines.runs_on_hardware: NVFP4 on Blackwell only, MXFP4 not on a
    Cambricon MLU). The quant matrix, "best that fits" and the explore tables all ask here."""
    out = []
    gguf = request.weights.format == "gguf"
    backend, architecture = request.engine.backend, request.device.architecture
    for quant in quants:
        if not gguf and not runs_on_hardware(quant, backend, architecture):
            continue
        spec = WeightsSpec("gguf", quant=quant) if gguf else WeightsSpec("hf", dtype=quant)
        try:
            estimator_cache.weights(request.model.hf_config_json, spec)
        except ValueError:
            continue
        out.append(quant)
    return out
