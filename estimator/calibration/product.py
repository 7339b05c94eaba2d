"""A throughput.csv Measurement through the speed functions the product calls
(speed.decode_speed, speed.prefill_speed), for the checks that compare the product's
figures with published ones (the calibration's own predictions use fit.predicted_step)."""

from __future__ import annotations

from estimator.calibration.rows import Measurement, stream_bytes_of
from estimator.factors import prefill_tflops_per_watt
from estimator.speed import (
    DecodeSpeed,
    PrefillSpeed,
    decode_speed,
    power_capped_tflops,
    prefill_speed,
)


def product_decode(m: Measurement, *, output_tokens: int | None = None) -> DecodeSpeed:
    """decode_speed for the row's work, device, engine, prompt, batch and parallelism;
    output_tokens overrides the row's (1 = the first decode step of a TTFT)."""
    return decode_speed(
        m.work,
        m.device,
        engine=m.engine,
        backend=m.backend,
        prompt_tokens=m.prompt_tokens,
        output_tokens=m.output_tokens if output_tokens is None else output_tokens,
        batch=m.batch if output_tokens is None else 1,
        parallelism=m.parallelism,
        weights_name=m.quant,
    )


def product_prefill(m: Measurement) -> PrefillSpeed:
    """prefill_speed for the row: tensor parallelism from its devices, the F16 / BF16
    format factor for llama.cpp rows (its quant label), the row's compute rate."""
    tp = m.parallelism.n_devices if m.parallelism.mode == "tensor" else 1
    return prefill_speed(
        m.work.params_active,
        m.device,
        engine=m.engine,
        backend=m.backend,
        prompt_tokens=m.prompt_tokens,
        n_layers=m.work.n_layers,
        attention_width=m.attention_width,
        tensor_parallel=tp,
        compute_tflops=power_capped_tflops(
            m.compute_tflops, m.device.tdp_w, m.device.vendor, prefill_tflops_per_watt()
        )
        if m.engine == "llama.cpp" and m.compute_tflops
        else m.compute_tflops,
        is_moe=m.work.is_moe,
        weights_name=m.quant if m.engine == "llama.cpp" else "",
        n_ubatch=m.ubatch,
        stream_bytes=stream_bytes_of(m),
    )
