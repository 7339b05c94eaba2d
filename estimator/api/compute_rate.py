"""What the result says about the device's FP16 rate when it is not a published one.

The decode step adds compute time, 2 x active params x batch / (fp16 TFLOPS x decode_mfu),
and prefill is compute-bound on the same rate (estimator.speed). A device without
`fp16_tflops` gets no compute term: decode then counts memory reads and fixed overhead
only, and prefill and TTFT are null. That is never left silent:

- rate given: nothing is added;
- rate imputed (device.fp16_imputed, from units x FLOP per unit per clock x clock,
  estimator.speed.compute_rates): a note with the arithmetic and the result section
  compute_rate {fp16_tflops, imputed: true, imputed_from, decode_compute: "included"};
- no rate: a warning and compute_rate {fp16_tflops: null, imputed: false, imputed_from:
  null, decode_compute: "unknown"}.
"""

from __future__ import annotations

from typing import Any

from estimator.api.schema import Device

DECODE_COMPUTE_UNKNOWN = (
    "decode compute term unknown: no device.fp16_tflops, so decode counts memory reads and "
    "fixed overhead only (optimistic where compute matters: many sequences, large models "
    "on small GPUs)"
)


def compute_rate_section(device: Device) -> dict[str, Any] | None:
    """Result.compute_rate: None for a published rate (module docstring)."""
    if device.fp16_tflops and not device.fp16_imputed:
        return None
    known = bool(device.fp16_tflops)
    return {
        "fp16_tflops": device.fp16_tflops if known else None,
        "imputed": known,
        "imputed_from": device.fp16_imputed_from if known else None,
        "decode_compute": "included" if known else "unknown",
    }


def compute_notes(device: Device) -> tuple[str, ...]:
    """The note of an imputed rate, with its arithmetic."""
    if not (device.fp16_tflops and device.fp16_imputed):
        return ()
    basis = device.fp16_imputed_from or "the unit count and clock"
    return (f"device.fp16_tflops imputed (no published rate): {basis}",)


def compute_warnings(device: Device) -> tuple[str, ...]:
    """The warning of a device without any FP16 rate."""
    return () if device.fp16_tflops else (DECODE_COMPUTE_UNKNOWN,)
