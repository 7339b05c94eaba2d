"""Decode, prefill and TTFT for a request: builds estimator.speed's inputs from the placement."""

from __future__ import annotations

from dataclasses import dataclass

from estimator import kv as kvmod
from estimator import serving, speed
from estimator.api.schema import Device, Request
from estimator.engines import llama_family
from estimator.factors import prefill_tflops_per_watt
from estimator.model import ModelSpec
from estimator.units import Range
from estimator.weights import WeightsBreakdown

# Dual-channel DDR5-5600 peak (2 x 44.8 GB/s): the host bandwidth assumed when a request
# offloads weights without giving device.host_bandwidth_gbps.
DEFAULT_HOST_BANDWIDTH_GBPS = 89.6
# PCIe 4.0 x16 one direction, usable: the link assumed between devices when not given.
DEFAULT_INTERCONNECT_GBPS = 25.0
FP8_WEIGHTS = ("fp8", "w8a8")


@dataclass(frozen=True)
class Speeds:
    decode: speed.DecodeSpeed
    prefill: Range | None
    ttft_s: Range | None
    work: speed.DecodeWork
    device: speed.Device
    compute_tflops: float | None
    host_bandwidth_gbps: float | None
    # the batched serving model's inputs and steady state (vLLM, SGLang, TensorRT-LLM on
    # the GPUs alone); None for the llama.cpp family, offload and devices without TFLOPS
    serving_inputs: serving.StepInputs | None = None
    serving_point: serving.ServingPoint | None = None
    # expert bytes a prefill ubatch reads beyond the active ones (speed.moe_stream_bytes,
    # the GPU-resident share; the llama.cpp family and MLX read them, others 0)
    stream_bytes: float = 0.0


def kv_read_bytes_per_token(model: ModelSpec, request: Request) -> tuple[int, int, int]:
    """kv.kv_read_split at the request's cache types."""
    kv_dtype = request.engine.type_k or request.workload.kv_cache_dtype
    return kvmod.kv_read_split(model, kv_dtype=kv_dtype, v_dtype=request.engine.type_v)


def decode_work(
    model: ModelSpec, wb: WeightsBreakdown, request: Request, offloaded_bytes: int
) -> speed.DecodeWork:
    """What one decode step reads. Offloaded bytes read per token: all of an offloaded
    dense layer; k/E of offloaded experts (the routed share of what lives in host RAM)."""
    active = wb.active_bytes_per_token
    offload = request.workload.offload
    if (offload.moe_experts or offload.moe_layers) and model.n_experts:
        host = offloaded_bytes * model.n_experts_per_token / model.n_experts
    else:
        host = offloaded_bytes * min(1.0, active / max(1, wb.total_bytes))
    return model_work(model, wb, kv_read_bytes_per_token(model, request), host)


def model_work(
    model: ModelSpec,
    wb: WeightsBreakdown,
    kv_split: tuple[int, int, int],
    offloaded_bytes_per_token: float = 0.0,
) -> speed.DecodeWork:
    """speed.DecodeWork of a parsed model and its weights; kv_split is kv.kv_read_split's
    (full, windowed, window). The one builder: the calibration fits on the same inputs."""
    full, windowed, window = kv_split
    return speed.DecodeWork(
        weight_bytes_per_token=wb.active_bytes_per_token,
        params_active=model.params_active,
        kv_bytes_per_token=full,
        windowed_kv_bytes_per_token=windowed,
        window_tokens=window,
        expert_bytes=wb.expert_bytes,
        n_experts=model.n_experts,
        n_experts_per_token=model.n_experts_per_token,
        replicated_bytes=wb.replicated_bytes,
        offloaded_bytes_per_token=offloaded_bytes_per_token,
        n_layers=model.n_layers,
        hidden_size=model.hidden_size,
        is_moe=model.n_experts > 0,
    )


def speed_device(request: Request) -> speed.Device:
    return device_for_speed(request.device)


def device_for_speed(device: Device) -> speed.Device:
    """speed.Device for a request device; the class comes from speed.device_class_for
    unless the request names it."""
    name = device.name or device.vendor
    device_class = device.device_class or speed.device_class_for(
        name,
        device.bandwidth_gbps,
        memory_gb=device.memory_gb,
        unified=device.memory_kind == "unified",
        memory_type=device.memory_type or "",
    )
    return speed.Device(
        device.bandwidth_gbps,
        device.fp16_tflops,
        device_class,
        device.architecture or "",
        fp8_tflops=device.fp8_tflops,
        fp4_tflops=device.fp4_tflops,
        int8_tops=device.int8_tops,
        tdp_w=device.tdp_w,
        family=speed.device_family(
            device.name or "", device.architecture or "", device.memory_type or "", device.vendor
        ),
        vendor=(device.vendor or "").strip().lower(),
    )


def weights_name(request: Request) -> str:
    """The GGUF type or HF dtype the speed corrections key on ("Q4_K_M", "bf16")."""
    return request.weights.quant or request.weights.dtype or ""


def parallelism(request: Request, split: str) -> speed.Parallelism:
    return speed.Parallelism(
        n_devices=request.device.count if split != "none" else 1,
        mode=split,
        interconnect_gbps=request.device.interconnect_gbps or DEFAULT_INTERCONNECT_GBPS,
    )


def compute_tflops(request: Request) -> float | None:
    """The rate prefill is fitted against: llama.cpp family max(fp16, int8 / 2)
    (speed.prefill_compute_tflops: its quantized matmuls use int8 MMA); vLLM-like engines
    the FP8 rate for FP8 checkpoints, else the FP16 rate."""
    device = request.device
    if llama_family(request.engine.name):
        rate = speed.prefill_compute_tflops(device.fp16_tflops, device.int8_tops)
        vendor = (device.vendor or "").strip().lower()
        if rate is None:
            return None
        return speed.power_capped_tflops(rate, device.tdp_w, vendor, prefill_tflops_per_watt())
    if request.weights.dtype in FP8_WEIGHTS and device.fp8_tflops:
        return device.fp8_tflops
    return device.fp16_tflops


def serving_step_inputs(
    model: ModelSpec,
    work: speed.DecodeWork,
    request: Request,
    device: speed.Device,
    par: speed.Parallelism,
    offloaded_bytes: int,
) -> serving.StepInputs | None:
    """serving.StepInputs of a vLLM-like engine with everything on the GPUs; None for
    the llama.cpp family, CPU offload, a layer split or a device without a BF16 rate
    (the single-stream model of estimator.speed then answers)."""
    engine = request.engine
    hardware = serving.hardware_class(request.device.architecture or "", request.device.name or "")
    if (
        llama_family(engine.name)
        or offloaded_bytes
        or par.mode == "layer"
        or not device.fp16_tflops
        or device.bandwidth_gbps <= 0
    ):
        return None
    return serving.StepInputs(
        work=work,
        device=device,
        parallelism=par,
        factors=serving.serving_factors(engine.name, engine.backend),
        precision=serving.compute_precision(request.weights.name),
        attention_width=model.n_heads * model.head_dim,
        kv_replicated=model.mla is not None,
        compute_factor=serving.class_factor(hardware),
        hardware=hardware,
    )


def serving_decode(
    inputs: serving.StepInputs, request: Request
) -> tuple[speed.DecodeSpeed, serving.ServingPoint]:
    """Decode of `concurrent_sequences` closed-loop users (serving.closed_loop_point):
    per sequence 1 / TPOT, aggregate the benchmark's output tokens/s, batch x output /
    request cycle; bounds from the family's held-out ratios."""
    workload = request.workload
    point = serving.closed_loop_point(
        inputs,
        batch=workload.concurrent_sequences,
        prompt_tokens=workload.prompt_tokens,
        output_tokens=workload.output_tokens,
        chunk_tokens=request.engine.max_num_batched_tokens or serving.DEFAULT_CHUNK_TOKENS,
    )
    factors = inputs.factors
    per_user = serving.speed_range(point.per_user_tokens_per_s, factors)
    aggregate = serving.speed_range(point.aggregate_tokens_per_s, factors)
    decode = speed.DecodeSpeed(per_user, aggregate, point.tpot_s, not point.step.compute_bound)
    return decode, point


def estimate_speeds(
    model: ModelSpec, wb: WeightsBreakdown, request: Request, offloaded_bytes: int, split: str
) -> Speeds:
    """Decode (speed.decode_speed), prefill (speed.prefill_speed) and TTFT
    (speed.ttft_seconds); prefill and TTFT are None without a TFLOPS figure."""
    workload, engine = request.workload, request.engine
    work = decode_work(model, wb, request, offloaded_bytes)
    device = speed_device(request)
    host_bw = request.device.host_bandwidth_gbps or (
        DEFAULT_HOST_BANDWIDTH_GBPS if offloaded_bytes else None
    )
    par = parallelism(request, split)
    # the decode group, resolved once for both decode calls and the TTFT floor
    factors = speed.resolve_factors(engine.name, engine.backend, device.device_class, work.is_moe)
    inputs = serving_step_inputs(model, work, request, device, par, offloaded_bytes)
    point = None
    if inputs is not None:
        decode, point = serving_decode(inputs, request)
    else:
        decode = speed.decode_speed(
            work,
            device,
            engine=engine.name,
            backend=engine.backend,
            prompt_tokens=workload.prompt_tokens,
            output_tokens=workload.output_tokens,
            batch=workload.concurrent_sequences,
            parallelism=par,
            host_bandwidth_gbps=host_bw,
            factors=factors,
            weights_name=weights_name(request),
        )
    tflops = compute_tflops(request)
    if not tflops or workload.prompt_tokens == 0:
        return Speeds(decode, None, None, work, device, tflops, host_bw, inputs, point)
    stream = 0.0
    if speed.streams_per_ubatch(engine.name):
        ubatch = min(engine.n_ubatch, workload.prompt_tokens)
        resident = 1 - offloaded_bytes / max(wb.total_bytes, 1)
        stream = speed.moe_stream_bytes(work, ubatch) * resident
    prefill = speed.prefill_speed(
        work.params_active,  # model.params_active, summed once (it walks every tensor)
        device,
        engine=engine.name,
        backend=engine.backend,
        prompt_tokens=workload.prompt_tokens,
        n_layers=model.n_layers,
        attention_width=model.n_heads * model.head_dim,
        tensor_parallel=workload.tensor_parallel if split == "tensor" else 1,
        compute_tflops=tflops,
        is_moe=model.n_experts > 0,
        weights_name=weights_name(request),
        offloaded_bytes=offloaded_bytes,
        n_ubatch=engine.n_ubatch,
        stream_bytes=stream,
    ).tokens_per_s
    first = speed.decode_speed(
        work,
        device,
        engine=engine.name,
        backend=engine.backend,
        prompt_tokens=workload.prompt_tokens,
        output_tokens=1,
        parallelism=par,
        host_bandwidth_gbps=host_bw,
        factors=factors,
        weights_name=weights_name(request),
    )
    floor = speed.ttft_floor_seconds(factors, model.n_layers, work.is_moe)
    ttft = speed.ttft_seconds(workload.prompt_tokens, prefill, speed.step_range(first), floor)
    return Speeds(decode, prefill, ttft, work, device, tflops, host_bw, inputs, point, stream)
