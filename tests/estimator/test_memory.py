"""Engine overhead, usable memory and the fit verdict against the published start-up logs."""

from __future__ import annotations

import csv
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator.kv import kv_tokens_that_fit
from estimator.memory import (
    apple_gpu_working_set_bytes,
    engine_overhead,
    fit_verdict,
    llama_cpp_compute_buffer_bytes,
    llama_cpp_compute_phases,
    usable_bytes_per_device,
    vllm_activation_peak_bytes,
    vllm_kv_budget_bytes,
    vllm_non_torch_bytes,
)
from estimator.model.spec import ModelSpec
from estimator.units import GIB, MIB
from estimator.validate import fully_placed
from tests.estimator.test_kv import DEEPSEEK_MLA, LLAMA_31_8B, hand_spec, parsed

VALIDATION = Path(__file__).resolve().parents[2] / "estimator" / "data" / "validation"


def _rows(name: str) -> list[dict[str, str]]:
    with (VALIDATION / name).open(newline="") as handle:
        return list(csv.DictReader(handle))


def _stats(errors: list[float]) -> tuple[int, float, float, float]:
    """(count, median, p90, max) of absolute relative errors."""
    ordered = sorted(abs(e) for e in errors)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return len(ordered), statistics.median(ordered), p90, ordered[-1]


def arch(
    base: ModelSpec,
    *,
    hidden: int,
    vocab: int,
    heads: int,
    ff: int,
    experts: int = 0,
    used: int = 0,
    shared: int = 0,
    ff_exp: int = 0,
) -> ModelSpec:
    """The hand spec with the dimensions the overhead formulas read."""
    return replace(
        base,
        hidden_size=hidden,
        vocab_size=vocab,
        n_heads=heads,
        intermediate_size=ff,
        n_experts=experts,
        n_experts_per_token=used,
        n_shared_experts=shared,
        moe_intermediate_size=ff_exp,
    )


# --- llama.cpp compute buffer -----------------------------------------------------------

# Dimensions from the models' config.json (model_configs.csv where listed there).
DEEPSEEK_V3 = arch(
    hand_spec(61, 1, 576, head_dim_v=512, n_heads=128, pattern=("mla",), mla=DEEPSEEK_MLA),
    hidden=7168, vocab=129280, heads=128, ff=18432, experts=256, used=8, shared=1, ff_exp=2048,
)  # fmt: skip
LLAMACPP_ARCH = {
    ("deepseek2", "61"): DEEPSEEK_V3,
    ("deepseek2", "27"): arch(  # DeepSeek-Coder-V2-Lite, full per-head cache (mla 0)
        hand_spec(27, 16, 192, head_dim_v=128, n_heads=16),
        hidden=2048, vocab=102400, heads=16, ff=10944, experts=64, used=6, shared=2, ff_exp=1408,
    ),
    ("llama", "32"): arch(LLAMA_31_8B, hidden=4096, vocab=128256, heads=32, ff=14336),
    ("gemma3", "62"): arch(
        hand_spec(62, 16, 128, pattern=("sliding",) * 5 + ("full",), window=1024),
        hidden=5376, vocab=262144, heads=32, ff=21504,
    ),
}  # fmt: skip


def _largest_device_mib(row: dict[str, str]) -> float | None:
    """Largest GPU compute buffer, or the CPU one for CPU-only runs."""
    sizes = dict(part.split("=") for part in row["compute_buffers_mib"].split(";") if "=" in part)
    gpus = [float(v) for k, v in sizes.items() if "CPU" not in k and not k.endswith("Host")]
    if gpus:
        return max(gpus)
    return float(sizes["CPU"]) if "CPU" in sizes else None


def _mla_layout(row: dict[str, str]) -> str:
    if row["n_head_kv"] == "1":  # mainline MLA GGUF: K 576 + V 512 (row L055)
        return "latent_kv"
    return "latent" if row["type_k"].startswith("c^KV") else "full"


def _compute_rows() -> list[dict[str, str]]:
    return [
        row
        for row in _rows("llamacpp_memory.csv")
        if (row["arch"], row["n_layer"]) in LLAMACPP_ARCH
        and _largest_device_mib(row)
        and fully_placed(row)  # partial offload stages weights in the compute buffer
        # The data's exclude_compute_buffer column: L040 comes from ik_llama.cpp PR #237,
        # which chunks the KQ matrix (-amb): the full KQ of 163,840 x 1,024 x 128 heads
        # would be 80 GiB; mainline has no such cap
        and not row["exclude_compute_buffer"]
    ]


def _compute_error(row: dict[str, str]) -> float:
    model = LLAMACPP_ARCH[(row["arch"], row["n_layer"])]
    predicted = llama_cpp_compute_buffer_bytes(
        model,
        context_tokens=int(row["n_ctx"]),
        n_ubatch=int(row["n_ubatch"]),
        flash_attention=row["flash_attn"] == "1",
        mla_layout=_mla_layout(row),
    )
    measured = _largest_device_mib(row)
    assert measured is not None
    return predicted / MIB / measured - 1


def test_it_reproduces_the_llama_31_8b_output_phase_exactly() -> None:
    # L013 logs 266.5 MiB = logits 128,256 x 512 x 4 B (250.5 MiB)
    #                     + hidden 2 x 4,096 x 512 x 4 B (16 MiB); the buffer adds 10% slack
    model = LLAMACPP_ARCH[("llama", "32")]
    phases = llama_cpp_compute_phases(
        model, context_tokens=1024, n_ubatch=512, flash_attention=False
    )
    assert phases["output"] / MIB == 266.5
    assert llama_cpp_compute_buffer_bytes(
        model, context_tokens=1024, n_ubatch=512, flash_attention=False
    ) == int(1.1 * 266.5 * MIB)


def test_the_llama_cpp_compute_buffer_median_error_is_within_15_percent() -> None:
    errors = [_compute_error(row) for row in _compute_rows()]
    count, median, p90, worst = _stats(errors)
    print(f"llama.cpp compute buffer: n={count} median={median:.1%} p90={p90:.1%} max={worst:.1%}")
    assert count >= 15
    assert median <= 0.15


# --- vLLM -------------------------------------------------------------------------------

VLLM_ARCH = {
    "codellama/CodeLlama-7b-hf": arch(
        hand_spec(32, 32, 128), hidden=4096, vocab=32016, heads=32, ff=11008
    ),
    "google/gemma-2-27b-it": arch(
        hand_spec(46, 16, 128, pattern=("sliding", "full"), window=4096),
        hidden=4608, vocab=256000, heads=32, ff=36864,
    ),
    "google/gemma-2-2b-it": arch(
        hand_spec(26, 4, 256, pattern=("sliding", "full"), window=4096),
        hidden=2304, vocab=256000, heads=8, ff=9216,
    ),
    "google/gemma-2-9b-it": arch(
        hand_spec(42, 8, 256, pattern=("sliding", "full"), window=4096),
        hidden=3584, vocab=256000, heads=16, ff=14336,
    ),
    "google/gemma-7b": arch(hand_spec(28, 16, 256), hidden=3072, vocab=256000, heads=16, ff=24576),
    "ibm-granite/granite-3.1-2b-instruct": arch(
        hand_spec(40, 8, 64), hidden=2048, vocab=49155, heads=32, ff=8192
    ),
    "ibm-granite/granite-3.1-8b-instruct": arch(
        hand_spec(40, 8, 128), hidden=4096, vocab=49155, heads=32, ff=12800
    ),
    "meta-llama/Llama-3.1-8B-Instruct": arch(
        LLAMA_31_8B, hidden=4096, vocab=128256, heads=32, ff=14336
    ),
    "microsoft/phi-2": arch(hand_spec(32, 32, 80), hidden=2560, vocab=51200, heads=32, ff=10240),
    "microsoft/phi-4": arch(hand_spec(40, 10, 128), hidden=5120, vocab=100352, heads=40, ff=17920),
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503": arch(
        hand_spec(40, 8, 128), hidden=5120, vocab=131072, heads=32, ff=32768
    ),
    "openai/gpt-oss-20b": arch(
        hand_spec(24, 8, 64, n_heads=64, pattern=("sliding", "full"), window=128),
        hidden=2880, vocab=201088, heads=64, ff=2880, experts=32, used=4, ff_exp=2880,
    ),
}  # fmt: skip
VLLM_ALIASES = {
    "ibm-granite/granite-3.3-8b-instruct": "ibm-granite/granite-3.1-8b-instruct",
    "ibm-granite/granite-vision-3.3-2b": "ibm-granite/granite-3.1-2b-instruct",
    "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16": "meta-llama/Llama-3.1-8B-Instruct",
    "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8": "meta-llama/Llama-3.1-8B-Instruct",
    "RedHatAI/Mistral-Small-3.1-24B-Instruct-2503-quantized.w8a8": (
        "mistralai/Mistral-Small-3.1-24B-Instruct-2503"
    ),
}


def _vllm_rows() -> list[dict[str, str]]:
    """The v0.19 H100 start-up logs: every figure of the budget is in the row."""
    return [row for row in _rows("vllm_memory.csv") if row["vllm_version"] == "v0.19.0"]


def _vllm_model(row: dict[str, str]) -> ModelSpec:
    model = VLLM_ARCH[VLLM_ALIASES.get(row["model"], row["model"])]
    stages = int(row["pp"] or 1)
    if stages > 1:  # pipeline parallel: each stage keeps n_layers / pp layers
        model = replace(model, layers=model.layers[: len(model.layers) // stages])
    return model


def _kv_dtype(row: dict[str, str]) -> str:
    if row["kv_cache_dtype"] == "fp8":
        return "fp8"
    return "f32" if row["dtype"] == "float32" else "bf16"


def _tokens(row: dict[str, str], budget_bytes: int) -> int:
    return kv_tokens_that_fit(
        _vllm_model(row),
        budget_bytes,
        kv_dtype=_kv_dtype(row),
        tensor_parallel=int(row["tp"] or 1),
    )


@pytest.mark.parametrize(
    "row",
    # pipeline-parallel rows log one stage's memory but the minimum tokens over stages
    [row for row in _vllm_rows() if int(row["pp"] or 1) == 1],
    ids=lambda row: row["record_id"],
)
def test_it_converts_the_logged_kv_memory_into_vllm_tokens(row: dict[str, str]) -> None:
    # kv_cache_gib is rounded to 0.01 GiB: 0.5% covers it at every row's size
    tokens = _tokens(row, int(float(row["kv_cache_gib"]) * GIB))
    assert tokens == pytest.approx(int(row["kv_cache_tokens"]), rel=0.005)


def _end_to_end_error(row: dict[str, str]) -> float:
    """KV tokens from the row's weights and our activation + non-torch estimate."""
    total = float(row["total_gpu_memory_gib"]) * GIB
    usable = usable_bytes_per_device(
        engine="vllm",
        total_bytes=int(total),
        gpu_memory_utilization=float(row["gpu_memory_utilization"]),
    )
    overhead = engine_overhead(
        _vllm_model(row), engine="vllm", context_tokens=int(row["max_model_len"]),
        tensor_parallel=int(row["tp"] or 1),
    )  # fmt: skip
    budget = vllm_kv_budget_bytes(
        usable_bytes=usable,
        weights_bytes=int(float(row["weights_gib"]) * GIB),
        activation_bytes=overhead.breakdown["activation_peak"],
        non_torch_bytes=overhead.breakdown["non_torch"],
    )
    return _tokens(row, budget) / int(row["kv_cache_tokens"]) - 1


def test_vllm_kv_capacity_from_our_overheads_is_within_5_percent_median() -> None:
    count, median, p90, worst = _stats([_end_to_end_error(row) for row in _vllm_rows()])
    print(f"vLLM KV tokens: n={count} median={median:.1%} p90={p90:.1%} max={worst:.1%}")
    assert median <= 0.05
    assert p90 <= 0.15


def test_vllm_activation_and_non_torch_track_the_logs() -> None:
    activation, non_torch = [], []
    for row in _vllm_rows():
        if int(row["pp"] or 1) > 1:
            continue  # the first stage has no sampler: not modelled
        model = _vllm_model(row)
        measured = float(row["activation_peak_gib"]) * GIB
        activation.append(vllm_activation_peak_bytes(model) / measured - 1)
        measured_nt = float(row["non_torch_gib"]) * GIB
        non_torch.append(vllm_non_torch_bytes(int(row["tp"] or 1)) / measured_nt - 1)
    act, nt = _stats(activation), _stats(non_torch)
    print(f"vLLM activation: n={act[0]} median={act[1]:.1%} p90={act[2]:.1%} max={act[3]:.1%}")
    print(f"vLLM non-torch: n={nt[0]} median={nt[1]:.1%} p90={nt[2]:.1%} max={nt[3]:.1%}")
    assert act[1] <= 0.10
    assert nt[1] <= 0.05


def test_the_vllm_budget_formula_reproduces_every_logged_kv_size() -> None:
    for row in _vllm_rows():
        usable = float(row["gpu_memory_utilization"]) * float(row["total_gpu_memory_gib"]) * GIB
        budget = vllm_kv_budget_bytes(
            usable_bytes=int(usable),
            weights_bytes=int(float(row["weights_gib"]) * GIB),
            activation_bytes=int(float(row["activation_peak_gib"]) * GIB),
            non_torch_bytes=int(float(row["non_torch_gib"]) * GIB),
        )
        # each logged figure is rounded to 0.01 GiB: four of them, 0.03 GiB slack
        assert abs(budget / GIB - float(row["kv_cache_gib"])) < 0.03, row["record_id"]


# --- usable memory and verdict ----------------------------------------------------------


def test_it_gives_vllm_its_utilization_share() -> None:
    # 0.9 x 80 GiB = 72 GiB
    assert usable_bytes_per_device(engine="vllm", total_bytes=80 * GIB) == 72 * GIB


def test_it_leaves_llama_cpp_its_one_gib_fit_margin() -> None:
    assert usable_bytes_per_device(engine="llama.cpp", total_bytes=24 * GIB) == 23 * GIB


def test_it_caps_apple_unified_memory_at_the_metal_working_set() -> None:
    # 16 GiB Mac: 2/3 -> 10.67 GiB; 64 GiB Mac: 3/4 -> 48 GiB
    assert apple_gpu_working_set_bytes(16 * GIB) == int(16 * GIB * 2 / 3)
    assert apple_gpu_working_set_bytes(64 * GIB) == 48 * GIB


def test_it_calls_a_small_reserve_tight_and_an_overflow_does_not_fit() -> None:
    assert fit_verdict(90 * GIB, 100 * GIB).verdict == "comfortable"  # 10% spare
    assert fit_verdict(95 * GIB, 100 * GIB).verdict == "tight"  # 5% spare
    assert fit_verdict(101 * GIB, 100 * GIB).verdict == "does_not_fit"
    assert fit_verdict(95 * GIB, 100 * GIB).reserve_bytes == 5 * GIB


@given(
    context=st.integers(1, 131_072),
    extra=st.integers(0, 65_536),
    engine=st.sampled_from(["llama.cpp", "vllm"]),
    flash=st.booleans(),
)
def test_overhead_never_shrinks_as_context_grows(
    context: int, extra: int, engine: str, flash: bool
) -> None:
    def size(tokens: int) -> int:
        return engine_overhead(
            LLAMACPP_ARCH[("llama", "32")],
            engine=engine,
            context_tokens=tokens,
            flash_attention=flash,
        ).total_bytes

    assert size(context + extra) >= size(context)


@given(sequences=st.integers(1, 32), more=st.integers(0, 32))
def test_overhead_never_shrinks_with_more_sequences(sequences: int, more: int) -> None:
    def size(n: int) -> int:
        return engine_overhead(
            DEEPSEEK_V3, engine="llama.cpp", context_tokens=4096, sequences=n
        ).total_bytes

    assert size(sequences + more) >= size(sequences)


PARSED_FOR_VLLM_ROW = {
    "codellama/CodeLlama-7b-hf": "codellama__CodeLlama-7b-hf.json",
    "google/gemma-2-9b-it": "google__gemma-2-9b-it.json",
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama__Llama-3.1-8B-Instruct.json",
    "microsoft/phi-4": "microsoft__phi-4.json",
    "openai/gpt-oss-20b": "openai__gpt-oss-20b.json",
}


@pytest.mark.parametrize(
    "row",
    [
        row
        for row in _vllm_rows()
        if VLLM_ALIASES.get(row["model"], row["model"]) in PARSED_FOR_VLLM_ROW
        and int(row["pp"] or 1) == 1
    ],
    ids=lambda row: row["record_id"],
)
def test_it_converts_vllm_kv_memory_into_tokens_from_the_parsed_config(
    row: dict[str, str],
) -> None:
    model = parsed(PARSED_FOR_VLLM_ROW[VLLM_ALIASES.get(row["model"], row["model"])])
    tokens = kv_tokens_that_fit(
        model,
        int(float(row["kv_cache_gib"]) * GIB),
        kv_dtype=_kv_dtype(row),
        tensor_parallel=int(row["tp"] or 1),
    )
    assert tokens == pytest.approx(int(row["kv_cache_tokens"]), rel=0.005)


HF_FORMAT_FOR_ROW = {
    ("bfloat16", ""): "bf16",
    ("float16", ""): "fp16",
    ("float32", ""): "fp32",
    ("bfloat16", "fp8"): "fp8",
    ("bfloat16", "mxfp4"): "mxfp4",
}


def test_vllm_end_to_end_from_config_weights_and_overheads() -> None:
    """Weights (weights.py) + our overheads -> KV tokens, for rows with a config.json."""
    from estimator.weights import WeightsFormat, tp_shard_bytes, weights_breakdown

    weight_errors, token_errors = [], []
    for row in _vllm_rows():
        key = (row["dtype"], row["quantization"])
        if row["model"] not in PARSED_FOR_VLLM_ROW or key not in HF_FORMAT_FOR_ROW:
            continue
        if int(row["pp"] or 1) > 1:
            continue
        model, tp = parsed(PARSED_FOR_VLLM_ROW[row["model"]]), int(row["tp"] or 1)
        weights = tp_shard_bytes(
            weights_breakdown(model, WeightsFormat(family="hf", name=HF_FORMAT_FOR_ROW[key])), tp
        )
        weight_errors.append(weights / (float(row["weights_gib"]) * GIB) - 1)
        overhead = engine_overhead(
            model, engine="vllm", context_tokens=int(row["max_model_len"]), tensor_parallel=tp
        )
        usable = usable_bytes_per_device(
            engine="vllm",
            total_bytes=int(float(row["total_gpu_memory_gib"]) * GIB),
            gpu_memory_utilization=float(row["gpu_memory_utilization"]),
        )
        budget = vllm_kv_budget_bytes(
            usable_bytes=usable,
            weights_bytes=weights,
            activation_bytes=overhead.breakdown["activation_peak"],
            non_torch_bytes=overhead.breakdown["non_torch"],
        )
        tokens = kv_tokens_that_fit(model, budget, kv_dtype=_kv_dtype(row), tensor_parallel=tp)
        token_errors.append(tokens / int(row["kv_cache_tokens"]) - 1)
    weights_stats, token_stats = _stats(weight_errors), _stats(token_errors)
    print(f"vLLM weights (weights.py): n={weights_stats[0]} median={weights_stats[1]:.1%}")
    print(f"vLLM KV tokens end to end: n={token_stats[0]} median={token_stats[1]:.1%}")
    assert weights_stats[1] <= 0.03
    assert token_stats[1] <= 0.05
    assert token_stats[2] <= 0.15


def test_cpu_offload_gb_is_gib_per_device_rounded_up() -> None:
    # 3.5e9 bytes over 2 GPUs: 3.5e9 / (2 x 2^30) = 1.63 GiB each -> --cpu-offload-gb 2
    # (the plan and the launch command both use this; 3.5e9 / 1e9 = 4 was the old plan's).
    from estimator.memory import cpu_offload_gib_per_device

    assert cpu_offload_gib_per_device(3_500_000_000, 2) == 2
    assert cpu_offload_gib_per_device(2**30, 1) == 1
    assert cpu_offload_gib_per_device(2**30 + 1, 1) == 2
    assert cpu_offload_gib_per_device(0, 4) == 0
