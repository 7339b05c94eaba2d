import json
import statistics

import pytest

from estimator.calibration import factors_for, load_calibration
from estimator.calibration.build import build_calibration, group_key
from estimator.calibration.fit import quantile
from estimator.calibration.product import product_decode, product_prefill
from estimator.calibration.rows import load_measurements, parse_test

# The speed model v2's targets on whole-device hold-outs (calibration.json "overall").
TARGETS = {"median": 8.0, "p90": 20.0, "inside": 0.85, "high_low": 1.6, "prefill_median": 15.0}
# Where the model stands (whole devices held out, 254 decode / 136 prefill rows after the
# serving-engine, MLX, old-GPU and offload data of the speed model v2 were added); a refit must not
# fall behind these.
REACHED = {"median": 12.2, "p90": 45.7, "inside": 0.82, "high_low": 1.77, "prefill_median": 26.1}
NOT_YET = (
    "the speed model v2 is open work: the serving rows mix engine versions a year apart "
    "(SGLang 0.4.3 vs 0.5.7 on DeepSeek-R1: 3x per-user speed) and a held-out device "
    "takes its version's term from other devices' rows; BF16 MoE models on Vulkan run at "
    "0.35x of the bandwidth "
    "bound; prefill on the Strix Halo iGPU (25 of 136 rows, one device) runs at a third "
    "of what its listed TFLOPS and the other devices' efficiency predict"
)


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
    assert decode["n"] >= 250
    assert decode["median_abs_pct_err"] <= REACHED["median"]
    assert decode["p90_abs_pct_err"] <= REACHED["p90"]
    assert decode["inside_bounds_share"] >= REACHED["inside"]
    assert decode["median_high_low_ratio"] <= REACHED["high_low"]
    prefill = load_calibration()["overall"]["prefill"]
    assert prefill["median_abs_pct_err"] <= REACHED["prefill_median"]


@pytest.mark.xfail(strict=True, reason=NOT_YET)
def test_it_meets_the_decode_median_target():
    assert load_calibration()["overall"]["decode"]["median_abs_pct_err"] <= TARGETS["median"]


@pytest.mark.xfail(strict=True, reason=NOT_YET)
def test_it_meets_the_decode_bound_width_target():
    assert load_calibration()["overall"]["decode"]["median_high_low_ratio"] <= TARGETS["high_low"]


@pytest.mark.xfail(strict=True, reason=NOT_YET)
def test_it_meets_the_decode_p90_target():
    assert load_calibration()["overall"]["decode"]["p90_abs_pct_err"] <= TARGETS["p90"]


@pytest.mark.xfail(strict=True, reason=NOT_YET)
def test_it_meets_the_prefill_median_target():
    prefill = load_calibration()["overall"]["prefill"]
    assert prefill["median_abs_pct_err"] <= TARGETS["prefill_median"]


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
    # in-sample through decode_speed: 9.5 % / 37.9 %, 88 % inside (calibration.json's
    # in_sample, 9.4 % / 28.8 %, adds the old-build overhead to rows of old builds; the
    # product predicts today's builds)
    assert statistics.median(errors) <= 9.6
    assert quantile(errors, 0.9) <= 38
    assert inside >= 0.87


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
