"""The fit verdict: does_not_fit only above what the device can give the engine; tight
within the engine's default margin, with the settings that start it (estimator.memory
fit_verdict and start_settings, estimator.api.fit, the launch commands)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from estimator import memory
from estimator.api import parse_request, run_estimate
from estimator.launch import launch_commands, launch_config
from estimator.units import GIB, MIB

CONFIGS = Path(__file__).resolve().parents[2] / "estimator" / "data" / "validation" / "configs"
CARD = 24 * GIB  # 24 x 2^30 = 25,769,803,776 B
RANK = {"comfortable": 0, "tight": 1, "does_not_fit": 2}


def judge(engine: str, need: int, total: int = CARD, apple: bool = False) -> memory.Fit:
    usable = memory.usable_bytes_per_device(engine=engine, total_bytes=total, unified_memory=apple)
    top = memory.max_usable_bytes_per_device(engine=engine, total_bytes=total, unified_memory=apple)
    return memory.fit_verdict(need, usable, top)


def settings(engine: str, need: int, total: int = CARD, apple: bool = False) -> Any:
    return memory.start_settings(
        engine=engine,
        need_bytes=need,
        total_bytes=total,
        unified_memory=apple,
        context_tokens=8192,
    )


# --- llama.cpp on a 24 GiB card: usable 23 GiB (1 GiB --fit margin), most 24 GiB ----------


def test_llama_cpp_inside_its_1_gib_margin_is_tight_with_fit_off() -> None:
    need = CARD - GIB // 2  # 23.5 GiB = 25,232,932,864 B: above 23 GiB, below 24 GiB
    fit = judge("llama.cpp", need)
    assert fit.verdict == "tight" and fit.within_default_margin
    assert fit.reserve_bytes == 23 * GIB - need == -(GIB // 2)
    assert fit.margin_bytes == GIB
    assert settings("llama.cpp", need).flags == ("--fit", "off", "-c", "8192")


def test_llama_cpp_one_mib_past_the_card_does_not_fit() -> None:
    assert judge("llama.cpp", CARD).verdict == "tight"  # exactly the card: still fits
    fit = judge("llama.cpp", CARD + MIB)  # 25,770,852,352 B > 25,769,803,776 B
    assert fit.verdict == "does_not_fit" and not fit.within_default_margin
    assert settings("llama.cpp", CARD + MIB).flags == ()


def test_llama_cpp_below_its_margin_is_comfortable_or_tight_by_the_8_percent_rule() -> None:
    # 8 % of 23 GiB = 1.84 GiB. 22 GiB leaves 1 GiB (4.3 %): tight, but inside the default
    # budget, so no flag; 21 GiB leaves 2 GiB (8.7 %): comfortable.
    tight = judge("llama.cpp", 22 * GIB)
    assert tight.verdict == "tight" and not tight.within_default_margin
    assert settings("llama.cpp", 22 * GIB).flags == ()
    assert round(tight.reserve_fraction, 4) == round(1 / 23, 4) == 0.0435
    assert judge("llama.cpp", 21 * GIB).verdict == "comfortable"


def test_ollama_and_mlx_are_tight_inside_the_margin_with_no_flag_of_their_own() -> None:
    need = CARD - GIB // 2
    for engine in ("ollama", "mlx"):
        assert judge(engine, need).within_default_margin
        assert settings(engine, need).flags == ()


# --- vLLM and SGLang: default share 0.9 / 0.88, at most 0.95 --------------------------------


def test_vllm_at_93_percent_of_the_card_starts_with_a_higher_share() -> None:
    need = int(0.93 * CARD)  # 23,965,917,511 B > 0.9 x CARD = 23,192,823,398 B
    fit = judge("vllm", need)
    assert fit.verdict == "tight" and fit.within_default_margin
    # margin: 0.95 x CARD - 0.9 x CARD = 24,481,313,587 - 23,192,823,398
    assert fit.margin_bytes == int(0.95 * CARD) - int(0.9 * CARD) == 1_288_490_189
    # floor(100 x 23,965,917,511 / 25,769,803,776) = floor(92.99...) = 92, + 1 -> 0.93
    start = settings("vllm", need)
    assert start.flags == ("--gpu-memory-utilization", "0.93")
    assert start.memory_share == 0.93 and int(CARD * 0.93) >= need


def test_vllm_above_the_raised_share_or_the_card_does_not_fit() -> None:
    assert judge("vllm", int(0.95 * CARD)).verdict == "tight"  # 0.95 x CARD: the most
    assert judge("vllm", int(0.95 * CARD) + 1).verdict == "does_not_fit"
    assert judge("vllm", CARD + 1).verdict == "does_not_fit"
    # 0.80 x CARD leaves 0.10 / 0.90 = 11 % of the default budget: comfortable
    assert judge("vllm", int(0.8 * CARD)).verdict == "comfortable"


def test_sglang_spells_the_share_its_own_way() -> None:
    need = int(0.92 * CARD)  # above 0.88 x CARD; floor(91.99...) + 1 = 92 -> 0.92
    assert settings("sglang", need).flags == ("--mem-fraction-static", "0.92")


def test_tensorrt_llm_has_no_raised_share_so_its_default_is_its_limit() -> None:
    fit = judge("tensorrt-llm", int(0.9 * CARD) + 1)
    assert fit.verdict == "does_not_fit" and fit.margin_bytes == 0


# --- Apple: a 64 GiB Mac, working set 3/4 x 64 = 48 GiB, wired limit up to 65,535 MiB -------


def test_a_mac_raises_its_wired_limit_when_the_working_set_is_too_small() -> None:
    ram = 64 * GIB
    # 47.5 GiB: within the 48 GiB working set but inside llama.cpp's 1 GiB margin.
    inside = settings("llama.cpp", 47 * GIB + GIB // 2, ram, apple=True)
    assert inside.flags[:2] == ("--fit", "off") and inside.wired_limit_mb is None
    # 50 GiB: ceil((50 + 1) GiB / MiB) = 52,224 MB, room for the 1 GiB margin: no --fit off.
    above = settings("llama.cpp", 50 * GIB, ram, apple=True)
    assert above.wired_limit_mb == 52_224 and above.flags == ()
    assert judge("llama.cpp", 50 * GIB, ram, apple=True).verdict == "tight"
    # 63.5 GiB: the wired limit stops at 65,535 MiB (RAM - 1 MiB), so --fit off too.
    last = settings("llama.cpp", 63 * GIB + GIB // 2, ram, apple=True)
    assert last.wired_limit_mb == 65_535 and last.flags[:2] == ("--fit", "off")
    assert judge("llama.cpp", ram, ram, apple=True).verdict == "does_not_fit"


# --- properties -------------------------------------------------------------------------------


@given(
    engine=st.sampled_from(["llama.cpp", "ollama", "mlx", "vllm", "sglang", "tensorrt-llm"]),
    total_gib=st.integers(min_value=4, max_value=192),
    apple=st.booleans(),
    needs=st.lists(st.integers(min_value=0, max_value=200 * GIB), min_size=2, max_size=2),
)
def test_the_verdict_never_improves_as_the_need_grows(
    engine: str, total_gib: int, apple: bool, needs: list[int]
) -> None:
    low, high = sorted(needs)
    total = total_gib * GIB
    first = judge(engine, low, total, apple).verdict
    second = judge(engine, high, total, apple).verdict
    assert RANK[first] <= RANK[second]


@given(
    engine=st.sampled_from(["llama.cpp", "vllm", "sglang"]),
    total_gib=st.integers(min_value=8, max_value=192),
    share=st.floats(min_value=0.5, max_value=1.0),
)
def test_start_settings_always_make_a_setup_within_the_margin_fit(
    engine: str, total_gib: int, share: float
) -> None:
    total = total_gib * GIB
    need = int(total * share)
    fit = judge(engine, need, total)
    start = settings(engine, need, total)
    assert bool(start.flags) == fit.within_default_margin
    if start.memory_share is not None:
        assert int(total * start.memory_share) >= need
        assert start.memory_share <= 0.95


# --- through the estimate and the launch commands --------------------------------------------


def request(weights: dict[str, Any], memory_gb: float, engine: str) -> Any:
    config = json.loads((CONFIGS / "meta-llama__Llama-3.1-8B-Instruct.json").read_text())
    return parse_request(
        {
            "model": {"hf_config": config},
            "weights": weights,
            "device": {"memory_gb": memory_gb, "bandwidth_gbps": 1000},
            "engine": {"name": engine},
            "workload": {"context_tokens": 8192},
        }
    )


def commands(parsed: Any) -> dict[str, Any]:
    result = run_estimate(parsed)
    config = launch_config(
        parsed,
        result,
        hf_repo="meta-llama/Llama-3.1-8B-Instruct",
        gguf_repo="bartowski/Meta-Llama-3.1-8B-Instruct-GGUF",
        weights_repo="",
        n_layers=32,
        offloaded_layers=0,
    )
    return launch_commands(config)


def test_a_10_gb_card_runs_llama_8b_q8_0_with_fit_off() -> None:
    # 9,919,742,994 B needed: above 10e9 - 2^30 = 8,926,258,176 B, within 10e9 B.
    parsed = request({"format": "gguf", "quant": "Q8_0"}, 10, "llama.cpp")
    fit = run_estimate(parsed).fit
    assert fit.verdict == "tight" and fit.within_default_margin
    assert fit.start_flags == ("--fit", "off", "-c", "8192")
    text = commands(parsed)["llama.cpp"].text
    assert text is not None and "--fit off" in text and "-c 8192" in text


def test_vllm_launches_with_the_share_the_fit_computed() -> None:
    need = run_estimate(request({"format": "hf", "dtype": "bf16"}, 80, "vllm")).per_device_bytes
    memory_gb = need / 0.92 / 1e9  # the need is 92 % of this card: above 0.9, below 0.95
    parsed = request({"format": "hf", "dtype": "bf16"}, memory_gb, "vllm")
    result = run_estimate(parsed)
    total = round(memory_gb * 1e9)
    share = ((100 * result.per_device_bytes) // total + 1) / 100
    assert result.per_device_bytes == need and share == 0.93
    assert result.fit.within_default_margin and result.fit.start_memory_share == share
    text = commands(parsed)["vllm"].text
    assert text is not None and "--gpu-memory-utilization 0.93" in text
