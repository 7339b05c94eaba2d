"""The quality tier table (estimator.quality): every format the portal knows has a tier,
the tiers follow llama.cpp's published KLD, the catalog's rows agree, and the default
floor is "good"."""

from __future__ import annotations

import csv
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from estimator import quality, recommend
from estimator.launch import MLX_QUANTS
from estimator.weights import EXTRA_GGUF_FILE_TYPES, GGUF_FILE_TYPES, HF_FORMATS

CSV = Path(__file__).resolve().parents[2] / "catalog" / "data" / "quant_formats.csv"


def catalog_rows() -> list[dict[str, str]]:
    with CSV.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_every_format_the_estimator_sizes_has_a_tier() -> None:
    known = {*GGUF_FILE_TYPES, *EXTRA_GGUF_FILE_TYPES, *HF_FORMATS, *MLX_QUANTS}
    assert sorted(known - set(quality.FORMATS)) == []
    assert all(f.tier in quality.TIERS for f in quality.FORMATS.values())


def test_tiers_follow_llama_cpps_published_kld() -> None:
    # llama.cpp tools/perplexity/README.md, LLaMA 3 8b Scoreboard, mean KLD vs FP16:
    # Q4_K_M 0.031273 <= 0.035 (recommended); Q4_K_S 0.043136 <= 0.08 (good);
    # Q3_K_M 0.101913 <= 0.5 (degraded); IQ2_XXS 0.812022 > 0.5 (experimental).
    assert quality.tier_of("Q4_K_M") == "recommended"
    assert quality.tier_of("Q4_K_S") == "good"
    assert quality.tier_of("Q3_K_M") == "degraded"
    assert quality.tier_of("IQ2_XXS") == "experimental"
    for entry in quality.FORMATS.values():
        if entry.kld is not None and entry.source == quality.LLAMA_KLD:
            assert entry.tier == quality.tier_for_kld(entry.kld), entry.name


def test_iq1_s_is_experimental_and_below_the_default_floor() -> None:
    # IQ1_S: mean KLD 2.211 and perplexity 58.1 against FP16's 6.23 on Llama 3 8B.
    entry = quality.format_quality("IQ1_S")
    assert entry is not None and entry.tier == "experimental" and entry.kld == 2.211278
    assert not quality.at_least("IQ1_S")
    assert quality.tier_of("UD-IQ1_S") == "experimental"  # a recipe takes its base's tier


def test_every_catalog_row_agrees_with_the_tier_table() -> None:
    rows = catalog_rows()
    assert len(rows) == 40
    for row in rows:
        entry = quality.format_quality(row["name"])
        assert entry is not None, row["name"]
        assert entry.family == row["family"]
        assert entry.bits_per_weight == float(row["bits_per_weight"]), row["name"]
        assert f"Quality tier: {entry.tier}." in row["description"], row["name"]
        assert "estimator/quality.py" in row["source"]


def test_tiers_never_rise_as_the_catalog_quality_rank_falls() -> None:
    for family in ("gguf", "hf"):
        ranked = sorted(
            (r for r in catalog_rows() if r["family"] == family),
            key=lambda r: -int(r["quality_rank"]),
        )
        tiers = [quality.tier_rank(quality.tier_of(r["name"]) or "") for r in ranked]
        assert tiers == sorted(tiers), family


def test_the_default_floor_is_the_lowest_good_rung_of_each_ladder() -> None:
    assert quality.DEFAULT_MIN_TIER == recommend.DEFAULT_MIN_TIER == "good"
    gguf = [n for n, bits in recommend.GGUF_LADDER if recommend.within_floor(n, bits)]
    hf = [n for n, bits in recommend.HF_LADDER if recommend.within_floor(n, bits)]
    # IQ4_XS (4.25 bpw, KLD 0.036) is the last "good" GGUF rung; Q3_K_L is degraded.
    assert gguf[-1] == "IQ4_XS" and "Q3_K_L" not in gguf and "IQ3_XXS" not in gguf
    assert hf == ["bf16", "fp8", "w8a8", "awq-int4", "gptq-int4"]
    assert quality.lowest_at_least(name for name, _ in recommend.GGUF_LADDER) == "IQ4_XS"


@given(st.sampled_from(sorted(quality.FORMATS)), st.sampled_from(quality.TIERS))
def test_a_floor_lets_through_exactly_the_formats_at_or_above_it(name: str, tier: str) -> None:
    entry = quality.FORMATS[name]
    assert quality.at_least(name, tier) == (
        quality.tier_rank(entry.tier) <= quality.tier_rank(tier)
    )


def test_an_unknown_format_passes_no_floor() -> None:
    assert quality.tier_of("Q9_Z") is None
    assert not quality.at_least("Q9_Z", "experimental")
