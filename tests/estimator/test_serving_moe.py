"""Mixture-of-experts decode in the serving engines (vLLM, SGLang) against the public
reports collected in throughput.csv for the speed model v2, as the product predicts them (current
builds: decode_speed without the old-build term), so in-sample."""

import pytest

from estimator.calibration.product import product_decode
from estimator.calibration.rows import Measurement, load_measurements


def _current_moe_rows() -> list[Measurement]:
    return [
        m
        for m in load_measurements()
        if m.kind == "decode"
        and m.engine in ("vllm", "sglang")
        and m.work.is_moe
        and not m.excluded
        and not m.legacy_build
        and m.device.bandwidth_gbps > 0
    ]


def _error(m: Measurement) -> float:
    speed = product_decode(m).per_sequence_tokens_per_s.estimate
    return (speed - m.measured_tps) / m.measured_tps


def test_deepseek_r1_on_eight_b200_in_sglang_matches_the_cookbook():
    # sgl-project/sglang cookbook (DeepSeek-R1-0528 FP8, TP 8, SGLang 0.5.6): 109.17 tok/s
    # for one stream, 911.16 / 16 = 56.9 per user at 16 concurrent
    rows = [
        m
        for m in _current_moe_rows()
        if m.model == "DeepSeek R1" and "B200" in m.device_name and m.batch in (1, 16)
    ]
    assert sorted(round(m.measured_tps, 1) for m in rows) == [56.9, 109.2]
    for m in rows:
        assert abs(_error(m)) <= 0.25


def test_most_current_serving_moe_reports_are_within_a_quarter():
    errors = [_error(m) for m in _current_moe_rows()]
    within = sum(abs(e) <= 0.25 for e in errors) / len(errors)
    # 13 of 19 at this commit; the misses: gpt-oss-120b on 8x B200 (single stream 1.9x
    # faster than predicted, 100 streams 1.9x slower), gpt-oss-120b in vLLM on one A100
    # (90 tok/s measured, 133 predicted; 256 before the speed model v2), Qwen3-Coder-480B on
    # 8x MI300X (+97 %) and 8x B200 at 64 streams (+39 %), Qwen3-Next on 4x B200 at 256
    # streams (+64 %)
    assert len(errors) >= 19
    assert within >= 13 / 19


@pytest.mark.xfail(strict=True, reason="speed model v2 target: every report within 25 %")
def test_every_current_serving_moe_report_is_within_a_quarter():
    assert all(abs(_error(m)) <= 0.25 for m in _current_moe_rows())
