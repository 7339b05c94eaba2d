import json
import statistics

import pytest

from estimator.calibration import factors_for, load_calibration
from estimator.calibration.build import build_calibration, group_key
from estimator.calibration.fit import quantile
from estimator.calibration.product import product_decode, product_prefill
from estimator.calibration.rows import load_measurements, parse_test

# The one-user model's targets on whole-device hold-outs of current hardware (local engines,
# batch 1; calibration.json "hardware_holdout.current").
TARGETS = {"median": 8.0, "p90": 20.0, "inside": 0.85, "high_low": 1.6, "prefill_median": 15.0}
PREFILL_P90_TARGETS = {"cuda": 35.0, "vulkan": 35.0, "metal": 35.0, "rocm": 50.0}
# Where it stands with 307 decode / 199 prefill rows (the llama.cpp pull-request, Intel Arc,
# RDNA 4, MI100 and M1 Ultra rows added with the hardware families); a refit must not fall
# behind these. "overall" is every engine and batch; "current" the one-user headline.
REACHED = {"median": 14.4, "p90": 47.4, "inside": 0.83, "high_low": 1.68, "prefill_median": 27.9}
REACHED_CURRENT = {"median": 11.3, "p90": 36.8, "inside": 0.83, "high_low": 1.83}
NOT_YET = (
    "the one-user model v3 is out of reach on this data (python -m "
    "estimator.calibration.oracle): same-setup CUDA decode rows differ by a median 12 % "
    "and up to 46 % between builds, 47 % on Vulkan; with a free factor per device the "
    "in-sample fit still leaves decode p90 22 % and Vulkan prefill p90 83 %; Intel Arc "
    "under Vulkan and SYCL pays a per-token cost several times NVIDIA's; the Strix Halo "
    "iGPU (one device of its family) prefills dense BF16 at half of what others predict"
)


def _current(kind: str) -> dict:
    return load_calibration()["hardware_holdout"]["current"][kind]


@pytest.mark.slow
def test_it_reproduces_the_committed_calibration_when_refitted():
    refit = json.loads(json.dumps(build_calibration(), sort_keys=True))
    assert refit == load_calibration()


def test_it_parses_the_test_names_of_throughput_csv():
    assert parse_test("tg32@d32768", 1) == ("decode", 32768, 32)
    assert parse_test("batched TG32 after PP512 (aggregate S_TG)", 8) == ("decode", 512, 32)
    assert parse_test('pp512 (reported as "prompt evaluation")', 1) == ("prefill", 512, 0)
    derived = parse_test("prefill 2048 tok (derived = 2048 / 1st-token latency)", 1)
    assert derived is not None and derived[1] == 2048
    # vLLM's benchmark_serving on ShareGPT: mean prompt and output lengths
    assert parse_test("batched ShareGPT (avg 233 in / 221 out)", 4) == ("decode", 233, 221)


def test_it_keeps_the_held_out_decode_figures_it_reached():
    decode = load_calibration()["overall"]["decode"]
    assert decode["n"] >= 300
    assert decode["median_abs_pct_err"] <= REACHED["median"]
    assert decode["p90_abs_pct_err"] <= REACHED["p90"]
    assert decode["inside_bounds_share"] >= REACHED["inside"]
    assert decode["median_high_low_ratio"] <= REACHED["high_low"]
    prefill = load_calibration()["overall"]["prefill"]
    assert prefill["median_abs_pct_err"] <= REACHED["prefill_median"]


def test_it_keeps_the_one_user_figures_it_reached_on_current_hardware():
    decode = _current("decode")
    assert decode["n"] >= 230 and decode["devices"] >= 60
    assert decode["median_abs_pct_err"] <= REACHED_CURRENT["median"]
    assert decode["p90_abs_pct_err"] <= REACHED_CURRENT["p90"]
    assert decode["inside_range_share"] >= REACHED_CURRENT["inside"]
    assert decode["median_high_over_low"] <= REACHED_CURRENT["high_low"]


def test_every_backends_one_user_decode_bias_is_within_ten_percent():
    # whole devices held out, current hardware: cuda -1.1, metal -2.0, rocm -3.2,
    # sycl +7.3, vulkan -5.5 % (median signed error; before the families and corrections,
    # on the same rows: vulkan -13.4, sycl +57.0)
    for backend, figures in _current("decode")["by_backend"].items():
        assert abs(figures["median_signed_pct_err"]) <= 10.0, backend


def test_older_or_rare_hardware_ranges_cover_four_fifths_of_its_rows():
    older = load_calibration()["hardware_holdout"]["older_or_rare"]
    # V100, MI50 / MI60 and two Pascal cards, each held out: 92 % and 90 % inside
    assert older["decode"]["inside_range_share"] >= 0.8
    assert older["prefill"]["inside_range_share"] >= 0.8


def test_it_keeps_the_one_user_prefill_figures_and_meets_the_rocm_and_cuda_targets():
    # whole devices held out, current hardware: 21.8 % / 86.6 % since MoE prefill reads
    # its experts once per ubatch and NVIDIA boards' power caps llama.cpp's prefill rate
    # (26.8 % / 162 % before); ROCm p90 33.0 % <= 50 %; CUDA median 13.9 % <= 15 %
    prefill = _current("prefill")
    assert prefill["n"] >= 177 and prefill["devices"] >= 48
    assert prefill["median_abs_pct_err"] <= 22.5
    assert prefill["p90_abs_pct_err"] <= 90.0
    assert prefill["median_high_over_low"] <= 3.3
    assert prefill["by_backend"]["rocm"]["p90_abs_pct_err"] <= PREFILL_P90_TARGETS["rocm"]
    assert prefill["by_backend"]["cuda"]["median_abs_pct_err"] <= TARGETS["prefill_median"]


@pytest.mark.xfail(strict=True, reason=NOT_YET)
def test_it_meets_the_decode_median_target():
    assert _current("decode")["median_abs_pct_err"] <= TARGETS["median"]


@pytest.mark.xfail(strict=True, reason=NOT_YET)
def test_it_meets_the_decode_range_target():
    decode = _current("decode")
    assert decode["median_high_over_low"] <= TARGETS["high_low"]
    assert decode["inside_range_share"] >= TARGETS["inside"]


@pytest.mark.xfail(strict=True, reason=NOT_YET)
def test_it_meets_the_decode_p90_target():
    assert _current("decode")["p90_abs_pct_err"] <= TARGETS["p90"]


@pytest.mark.xfail(strict=True, reason=NOT_YET)
def test_it_meets_the_prefill_targets():
    prefill = _current("prefill")
    assert prefill["median_abs_pct_err"] <= TARGETS["prefill_median"]
    for backend, p90 in PREFILL_P90_TARGETS.items():
        assert prefill["by_backend"][backend]["p90_abs_pct_err"] <= p90, backend


def _decode_errors():
    triples = []
    for m in load_measurements():
        if m.kind != "decode" or m.excluded or not m.device.bandwidth_gbps:
            continue
        r = product_decode(m).per_sequence_tokens_per_s
        triples.append((m.measured_tps, r.estimate, r.low, r.high))
    return triples


def test_it_predicts_throughput_csv_decode_rows_through_the_public_api():
    triples = _decode_errors()
    errors = [abs(p - m) / m * 100 for m, p, _, _ in triples]
    inside = sum(lo <= m <= hi for m, _, lo, hi in triples) / len(triples)
    # in-sample through decode_speed, 307 rows: 9.7 % / 42.1 %, 91 % inside
    # (calibration.json's in_sample adds the old-build overhead to rows of old builds; the
    # product predicts today's builds)
    assert statistics.median(errors) <= 9.8
    assert quantile(errors, 0.9) <= 42.2
    assert inside >= 0.9


def test_it_predicts_throughput_csv_prefill_rows_through_the_public_api():
    errors = []
    for m in load_measurements():
        if m.kind != "prefill" or m.excluded or not m.compute_tflops:
            continue
        speed = product_prefill(m)
        errors.append(abs(speed.tokens_per_s.estimate - m.measured_tps) / m.measured_tps * 100)
    assert statistics.median(errors) <= 25


def test_it_falls_back_to_the_llama_cpp_pool_for_backends_without_rows():
    assert factors_for("llama.cpp", "cpu", "consumer").group == "llama.cpp"
    # SGLang (5 single-stream rows) and TensorRT-LLM (4, all batched) have fewer than
    # MIN_ROWS single-stream rows: their decode factors are the serving pool's
    assert factors_for("sglang", "cuda", "datacenter").group == "sglang/cuda"
    assert load_calibration()["groups"]["sglang/cuda"]["decode_fitted_on"] == "serving"
    assert load_calibration()["groups"]["tensorrt-llm/cuda"]["decode_fitted_on"] == "serving"
    # MLX: its own profile, fitted on mlx-lm rows, not llama.cpp's
    assert factors_for("mlx", "metal", "consumer").group == "mlx/metal"


def test_it_gives_datacenter_gpus_a_lower_llama_cpp_bandwidth_share():
    dc = factors_for("llama.cpp", "cuda", "datacenter").bandwidth_share
    assert dc < factors_for("llama.cpp", "cuda", "consumer").bandwidth_share


def test_it_assigns_every_used_row_to_a_group():
    keys = {group_key(m) for m in load_measurements()}
    assert "llama.cpp/cuda/datacenter" in keys and "llama.cpp/metal" in keys
