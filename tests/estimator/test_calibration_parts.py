import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator.calibration import load_calibration
from estimator.calibration.build import group_key, lineage, prefill_key, prefill_lineage
from estimator.calibration.fit import quantile, shrunk_bounds
from estimator.calibration.models import breakdown, config_stem, model_spec
from estimator.calibration.rows import load_measurements
from estimator.factors import SpeedFactors
from estimator.speed import (
    prefill_format_factor,
    prefill_seconds_per_token,
    weights_family,
)
from estimator.units import GB

FACTORS = SpeedFactors(
    group="test",
    bandwidth_share=0.8,
    decode_overhead_s=0.002,
    moe_decode_overhead_s=0.0,
    decode_mfu=0.5,
    prefill_mfu=0.5,
    decode_ratio_low=0.9,
    decode_ratio_high=1.1,
    prefill_ratio_low=0.8,
    prefill_ratio_high=1.25,
    prefill_s_per_param=5e-15,
    prefill_f16_factor=0.8,
    prefill_bf16_factor=2.5,
)


def test_it_shrinks_a_group_quantile_toward_the_pool_by_pseudo_rows():
    own = [1.0] * 10  # every quantile is 1.0
    pooled = [0.5, 2.0] * 10  # 7.5 % quantile 0.5, 92.5 % quantile 2.0
    low, high = shrunk_bounds(own, pooled, shrink_rows=10)
    # log bound = (10 x log 1 + 10 x log 0.5) / 20 -> sqrt(0.5); high -> sqrt(2)
    assert low == pytest.approx(math.sqrt(0.5))
    assert high == pytest.approx(math.sqrt(2.0))


def test_it_uses_the_pool_alone_for_a_group_without_rows():
    assert shrunk_bounds([], [0.8, 1.0, 1.25]) == pytest.approx(
        (quantile([0.8, 1.0, 1.25], 0.075), quantile([0.8, 1.0, 1.25], 0.925))
    )


@given(
    st.lists(st.floats(0.3, 3.0), min_size=1, max_size=30),
    st.lists(st.floats(0.3, 3.0), min_size=2, max_size=60),
)
def test_it_keeps_shrunk_bounds_between_the_group_and_the_pool(own, pooled):
    low, high = shrunk_bounds(own, pooled)
    for q, bound in zip((0.075, 0.925), (low, high), strict=True):
        a, b = sorted((quantile(own, q), quantile(pooled, q)))
        assert a * (1 - 1e-9) <= bound <= b * (1 + 1e-9)


def test_it_adds_a_fixed_per_parameter_cost_to_the_prefill_matmul_time():
    # 16e9 FLOPs / (100e12 x 0.5) = 320 us; + 8e9 x 5e-15 = 40 us -> 360 us per token
    seconds = prefill_seconds_per_token(16e9, 8e9, 100, FACTORS)
    assert seconds == pytest.approx(360e-6)
    # F16 weights: 320 us x 0.8 + 40 us = 296 us; TP 2 halves it
    assert prefill_seconds_per_token(
        16e9, 8e9, 100, FACTORS, format_factor=0.8, tensor_parallel=2
    ) == pytest.approx(148e-6)


def test_it_names_weight_families_for_the_prefill_format_factor():
    assert weights_family("F16") == weights_family("fp16") == "f16"
    assert weights_family("BF16") == "bf16"
    assert weights_family("Q4_K_M") == weights_family("MXFP4_MOE") == "quantized"
    assert prefill_format_factor(FACTORS, "BF16") == 2.5
    assert prefill_format_factor(FACTORS, "") == 1.0


def test_it_maps_throughput_model_names_to_configs():
    assert config_stem("Llama 3 70B") == "meta-llama__Llama-3.1-70B-Instruct"
    assert config_stem("Llama 3.x 8B (llama 8B)") == "meta-llama__Llama-3.1-8B-Instruct"
    assert config_stem("Llama 2 13B") == "meta-llama__Llama-2-13b-hf"
    assert config_stem("GLM-4.7-Flash") is None


@pytest.mark.parametrize(
    "name, params_b",
    [
        ("Llama 2 13B", 13.02),
        ("Llama 2 70B", 68.98),
        ("DeepSeek-V2-Lite (deepseek2 16B)", 15.7),
        ("Gemma 3 4B (QAT)", 3.88),
        ("Qwen3-Next 80B-A3B", 79.67),
    ],
)
def test_it_rebuilds_configs_whose_parameter_count_matches_the_csv(name, params_b):
    spec = model_spec(name)
    assert spec is not None
    assert spec.params_total / 1e9 == pytest.approx(params_b, abs=0.01)


def test_it_reads_llama_3_8b_q4_k_m_as_file_bytes_minus_the_token_embedding():
    wb = breakdown("Llama 3 8B", "Q4_K_M", "llama.cpp", 4.92 * GB)
    assert wb is not None
    # 4.92 GB file; token_embd (128256 x 4096, Q4_K 4.5 bpw) ~ 0.3 GB is a lookup, not read
    assert 4.5 * GB < wb.active_bytes_per_token < 4.75 * GB


def test_it_reads_more_than_the_param_share_of_an_mxfp4_moe_file():
    # gpt-oss-20b: attention and embeddings stay 8/16-bit while experts are MXFP4, so the
    # bytes read per token exceed file x active / total (12.1 GB x 3.61 / 20.91 = 2.09 GB)
    wb = breakdown("gpt-oss-20b", "MXFP4 (MoE)", "llama.cpp", 12.1 * GB)
    assert wb is not None and wb.active_bytes_per_token > 2.3 * GB


def test_it_has_a_tflops_figure_for_every_prefill_row_but_the_unsourced_ones():
    rows = [m for m in load_measurements() if m.kind == "prefill" and not m.excluded]
    without = {m.device_name for m in rows if not m.compute_tflops}
    # calibration_devices.csv leaves these blank: no source gives their tensor rate (the
    # M2 Ultra row does not say which GPU bin ran, the Lunar Lake row which SKU); the
    # prefill fit skips their rows.
    assert without == {
        "NVIDIA GeForce RTX 2080 Ti",
        "Apple M2 Ultra (GPU cores not stated)",
        "Intel Lunar Lake iGPU (Arc 130V/140V, SKU not stated)",
    }
    assert load_calibration()["rows"]["prefill_without_tflops"] == 4


def test_it_keeps_dense_and_moe_prefill_leaves_apart_and_falls_back_by_kind():
    assert prefill_lineage("llama.cpp/rocm+dense") == (
        "llama.cpp/rocm+dense",
        "llama.cpp+dense",
        "llama.cpp",
        "default",
    )
    assert lineage("vllm/cuda") == ("vllm/cuda", "serving", "default")
    m = next(m for m in load_measurements() if m.work.is_moe and m.kind == "prefill")
    assert prefill_key(m) == group_key(m) + "+moe"


def test_it_stores_held_out_statistics_for_every_fitted_group():
    calibration = load_calibration()
    stats = [g["decode_stats"] for g in calibration["groups"].values() if "decode_stats" in g]
    assert sum(s["n"] for s in stats) == calibration["overall"]["decode"]["n"]
    assert calibration["overall"]["prefill"]["n"] == calibration["rows"]["prefill_used"]


def test_it_scales_the_step_overhead_with_the_layer_count():
    from estimator.speed import DecodeWork, Device, decode_step_seconds, overhead_scale

    assert overhead_scale(0) == 1.0 and overhead_scale(80) == 2.5
    work = DecodeWork(weight_bytes_per_token=4e9, params_active=8e9, n_layers=64)
    step, _ = decode_step_seconds(work, Device(1000), FACTORS)
    # 4e9 / (1000e9 x 0.8) = 5 ms; overhead 2 ms x 64 / 32 = 4 ms; no TFLOPS -> no compute
    assert step == pytest.approx(0.009)


def test_it_reports_a_by_source_holdout_beside_the_in_sample_fit():
    holdout = load_calibration()["by_source_holdout"]
    assert holdout["decode"]["n"] == load_calibration()["in_sample"]["decode"]["n"]
    # holding out a whole source is harder than checking on the fitted rows
    assert (
        holdout["decode"]["median_abs_pct_err"]
        >= (load_calibration()["in_sample"]["decode"]["median_abs_pct_err"])
    )


def test_grouped_holdouts_hold_out_whole_devices_models_and_sources():
    calibration = load_calibration()
    grouped = calibration["grouped_holdout"]
    loo = calibration["in_sample"]
    for name in ("by_device", "by_model", "by_source"):
        for kind in ("decode", "prefill"):
            held = grouped[name][kind]
            assert held["n"] == loo[kind]["n"]  # every row is predicted once
            # Holding out every row of a device (model, source) is harder than fitting it.
            assert held["median_abs_pct_err"] >= loo[kind]["median_abs_pct_err"]
    # The stored "overall" statistics and the ranges are the whole-device hold-out's.
    for kind in ("decode", "prefill"):
        overall = calibration["overall"][kind]
        device = grouped["by_device"][kind]
        assert overall["median_abs_pct_err"] == device["median_abs_pct_err"]
    # The first by-source figures are the grouped ones, not a second computation.
    for kind in ("decode", "prefill"):
        first = calibration["by_source_holdout"][kind]
        assert first == {k: grouped["by_source"][kind][k] for k in first}
    # Bias splits add up to every decode row.
    by_backend = grouped["by_device"]["decode"]["bias_by_backend"]
    assert sum(v["n"] for v in by_backend.values()) == loo["decode"]["n"]


def test_validate_prints_the_grouped_holdouts_first():
    from estimator.validate import format_speed_holdouts

    calibration = load_calibration()
    lines = list(format_speed_holdouts(calibration))
    device = calibration["grouped_holdout"]["by_device"]["decode"]
    assert lines[2].split() == [
        "decode",
        "whole",
        "devices",
        "held",
        "out",
        str(device["n"]),
        f"{device['median_abs_pct_err']:.2f}",
        f"{device['p90_abs_pct_err']:.2f}",
        f"{device['median_signed_pct_err']:.1f}",
    ]
    assert lines.index(next(x for x in lines if "in-sample" in x)) > 2
