"""Which calibrated factors a speed uses: engine and backend names normalised, the
calibration groups to try (most specific first), and the group calibration.json has.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from estimator.factors import SpeedFactors, first_known

ENGINE_ALIASES = {
    "ollama": "llama.cpp",
    "llamacpp": "llama.cpp",
    "llama-cpp": "llama.cpp",
    "trt-llm": "tensorrt-llm",
    "tensorrt_llm": "tensorrt-llm",
}


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


@cache
def resolve_factors(
    engine: str, backend: str, device_class: str, moe: bool = False
) -> SpeedFactors:
    """The calibrated factors of the most specific group calibration.json has."""
    return first_known(group_candidates(engine, backend, device_class, moe))


def measured_group(
    engine: str, backend: str, device_class: str, moe: bool = False, vendor: str = ""
) -> bool:
    """Whether published measurements of this engine on this backend, on `vendor`'s
    hardware, back the factors: the resolved calibration group names the backend and its
    rows include that vendor's devices (SpeedFactors.measured_vendors; "" skips the vendor
    check). Otherwise factors fitted on other hardware stand in and the speed is a guess:
    llama.cpp's Vulkan group is fitted on AMD and NVIDIA cards only, so an Intel Arc card
    on Vulkan is not backed by it."""
    back = normalize_backend(backend)
    factors = resolve_factors(engine, back, device_class, moe)
    if f"/{back}" not in factors.group:
        return False
    return not vendor or vendor in factors.measured_vendors


def with_factors(factors: SpeedFactors, **changes: float) -> SpeedFactors:
    """A copy of `factors` with some fields replaced (used by the fit and by tests)."""
    return replace(factors, **changes)  # type: ignore[arg-type]
