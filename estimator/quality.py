"""Quality tiers of weights formats: the one table that says how much a format costs in
quality, for the pages' labels, the explore filter's default and "best that fits".

Four tiers, best first (`TIERS`):

- **recommended**: indistinguishable from the original in everyday use;
- **good**: a small loss most users will not notice;
- **degraded**: a loss you can notice, acceptable only when nothing better fits;
- **experimental**: large loss; for trying a model out, not for work.

How a format gets its tier. For the GGUF file types the yardstick is the mean
Kullback-Leibler divergence (KLD) of the quantized model's token distribution from FP16's
on Llama 3 8B, wikitext-2 (llama.cpp tools/perplexity/README.md, "LLaMA 3 8b Scoreboard",
revision f364eb6f: the row without an importance matrix for the K-quants and legacy
types, the "WT 10m" imatrix row for the I-quants, which need one):

    recommended   KLD <= 0.035   (Q4_K_M 0.031 and every wider type)
    good          KLD <= 0.08    (Q4_K_S 0.043, IQ4_XS 0.036, Q4_0 0.072)
    degraded      KLD <= 0.5     (Q3_K_L 0.087 ... Q2_K 0.445)
    experimental  KLD >  0.5     (IQ2_XS 0.546, IQ2_XXS 0.812, IQ1_M 1.39, IQ1_S 2.21)

The same table's perplexity rises from 6.23 (FP16) to 6.41 at Q4_K_M, 9.75 at Q2_K and
58 at IQ1_S. Formats the scoreboard does not list take the tier of the measured type
they are built on (Q3_K_XL = Q3_K_L with Q8_0 embeddings; unsloth's UD-* take their base
type: they keep more tensors wider, so they are at least as good), and say so. The ARM
repacks Q4_0_4_4/Q4_0_4_8/Q4_0_8_8 are Q4_0's blocks reordered: Q4_0's tier (its KLD was
measured without an imatrix, where a repack file has the same tensor types).

Checkpoints (Hugging Face) are tiered from their published accuracy: FP8 W8A8 is
"effectively lossless" and well-tuned INT8 W8A8 loses 1-3 % while INT4 weight-only (AWQ,
GPTQ) "rivals 8-bit" (Kurtic et al., "Give Me BF16 or Give Me Death", ACL 2025,
arXiv:2411.02355, on the Llama 3.1 family); NVFP4 loses under 1 % against FP8 on
DeepSeek-R1 and Llama 3 (NVIDIA, "Introducing NVFP4 for Efficient and Accurate
Low-Precision Inference", 2025). MLX's affine quants (a scale and a bias per 64 weights,
mlx.core.quantize) are not measured here: they take the tier of the llama.cpp type with
the same bits and a per-group offset, and say so.

Bits per weight are nominal: the main type's block size (GGUF_QUANTS.md), not a whole
file's average (a Q4_K_M file measures 4.8-5.0 bpw, as its output and some layers stay
wider). The catalog's QuantFormat rows (catalog/data/quant_formats.csv) carry the same
tier, bits and sentence (a test keeps them equal).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from estimator.weights.gguf_types import RECIPE_BASE, REPACK_BASE, UD_RECIPES


def _(text: str) -> str:
    """Mark a sentence for translation (makemessages extracts `_`); a page renders it
    through gettext. The estimator has no Django, so the text stays English here."""
    return text


TIERS: tuple[str, ...] = ("recommended", "good", "degraded", "experimental")
# The floor of "best that fits", the explore filter's default and recommendations.
DEFAULT_MIN_TIER = "good"
# Upper KLD bound of each tier but the last (see the module docstring).
KLD_BOUNDS: dict[str, float] = {"recommended": 0.035, "good": 0.08, "degraded": 0.5}

LLAMA_KLD = (
    "llama.cpp tools/perplexity/README.md, LLaMA 3 8b Scoreboard (mean KLD vs FP16): "
    "https://github.com/ggml-org/llama.cpp/blob/master/tools/perplexity/README.md"
)
LLAMA_BF16 = (
    "llama.cpp tools/perplexity/README.md, LLaMA 3 BF16 vs. FP16 comparison (mean KLD "
    "0.000025): https://github.com/ggml-org/llama.cpp/blob/master/tools/perplexity/README.md"
)
KURTIC = (
    "Kurtic et al., Give Me BF16 or Give Me Death, ACL 2025 (arXiv:2411.02355), "
    "findings 1-3; vLLM docs, FP8 W8A8: https://docs.vllm.ai/en/stable/features/quantization/fp8/"
)
NVFP4_BLOG = (
    "NVIDIA, Introducing NVFP4 for Efficient and Accurate Low-Precision Inference (2025): "
    "https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/"
)
GPT_OSS = (
    "OpenAI, gpt-oss model card (MoE weights post-trained in MXFP4), "
    "https://openai.com/index/gpt-oss-model-card/; OCP Microscaling Formats (MX) v1.0"
)
MLX_QUANT = (
    "MLX docs, mlx.core.quantize (affine, group_size 64, a scale and a bias per group): "
    "https://ml-explore.github.io/mlx/build/html/python/_autosummary/mlx.core.quantize.html"
)


@dataclass(frozen=True)
class FormatQuality:
    """One weights format's tier: `bits_per_weight` nominal, `kld` the mean KLD from FP16
    on Llama 3 8B where llama.cpp measured it (None: not measured, tier from `source`),
    `description` one sentence for a reader, `source` where the tier comes from."""

    name: str
    family: str  # "gguf", "hf" or "mlx"
    tier: str
    bits_per_weight: float
    description: str
    source: str
    kld: float | None = None


def _gguf(name: str, bits: float, kld: float, description: str) -> FormatQuality:
    return FormatQuality(name, "gguf", tier_for_kld(kld), bits, description, LLAMA_KLD, kld)


def tier_for_kld(kld: float) -> str:
    """The tier of a mean KLD from FP16: the first tier whose bound (KLD_BOUNDS) it is
    within, else experimental."""
    for tier, bound in KLD_BOUNDS.items():
        if kld <= bound:
            return tier
    return "experimental"


_NEAR = _("Practically the original: no loss a user can notice.")
# Sentences several formats share (one msgid each).
_FIVE_BIT = _("5-bit with a very small loss.")
_LEGACY_FIVE_BIT = _("Legacy 5-bit with a very small loss.")
_LEGACY_FOUR_BIT = _("Legacy 4-bit: a noticeable but small loss.")
_THREE_BIT_NOTICEABLE = _("3-bit: a loss you can notice; use when 4-bit does not fit.")
_THREE_BIT_CLEAR = _("3-bit: a clear loss; for large models that fit no other way.")
_TWO_BIT_CLEAR = _("2-bit: a clear loss; for large models that fit no other way.")

_GGUF_MEASURED: tuple[FormatQuality, ...] = (
    FormatQuality("F32", "gguf", "recommended", 32, _NEAR, LLAMA_BF16),
    FormatQuality("F16", "gguf", "recommended", 16, _NEAR, LLAMA_BF16, 0.000551),
    FormatQuality("BF16", "gguf", "recommended", 16, _NEAR, LLAMA_BF16, 0.000025),
    _gguf("Q8_0", 8.5, 0.001355, _NEAR),
    _gguf("Q6_K", 6.5625, 0.005452, _("Near-lossless 6-bit: the safe choice when it fits.")),
    _gguf("Q5_K_M", 5.5, 0.010762, _FIVE_BIT),
    _gguf("Q5_K_S", 5.5, 0.016595, _FIVE_BIT),
    _gguf("Q5_1", 6, 0.018045, _LEGACY_FIVE_BIT),
    _gguf("Q5_0", 5.5, 0.022239, _LEGACY_FIVE_BIT),
    _gguf("Q4_K_M", 4.5, 0.031273, _("The usual 4-bit: a small loss for a quarter of the memory.")),
    _gguf("Q4_K_S", 4.5, 0.043136, _("4-bit, a little below Q4_K_M.")),
    _gguf("IQ4_NL", 4.5, 0.035742, _("4-bit non-linear: close to Q4_K_S.")),
    _gguf("IQ4_XS", 4.25, 0.036334, _("4-bit non-linear, smaller than Q4_K_S at similar quality.")),
    _gguf("Q4_1", 5, 0.071683, _LEGACY_FOUR_BIT),
    _gguf("Q4_0", 4.5, 0.07194, _LEGACY_FOUR_BIT),
    _gguf("Q3_K_L", 3.4375, 0.087176, _THREE_BIT_NOTICEABLE),
    _gguf("Q3_K_M", 3.4375, 0.101913, _THREE_BIT_NOTICEABLE),
    _gguf("IQ3_M", 3.4375, 0.102534, _THREE_BIT_NOTICEABLE),
    _gguf("IQ3_S", 3.4375, 0.111278, _THREE_BIT_NOTICEABLE),
    _gguf(
        "IQ3_XS",
        3.4375,
        0.138693,
        _THREE_BIT_CLEAR,
    ),
    _gguf(
        "IQ3_XXS",
        3.0625,
        0.183625,
        _THREE_BIT_CLEAR,
    ),
    _gguf(
        "Q3_K_S",
        3.4375,
        0.228217,
        _THREE_BIT_CLEAR,
    ),
    _gguf("IQ2_M", 2.5625, 0.325989, _TWO_BIT_CLEAR),
    _gguf("Q2_K_S", 2.625, 0.40336, _TWO_BIT_CLEAR),
    _gguf("IQ2_S", 2.3125, 0.439197, _TWO_BIT_CLEAR),
    _gguf("Q2_K", 2.625, 0.445132, _TWO_BIT_CLEAR),
    _gguf("IQ2_XS", 2.3125, 0.54629, _("2-bit: large loss; for trying a model out, not for work.")),
    _gguf(
        "IQ2_XXS", 2.0625, 0.812022, _("2-bit: large loss; for trying a model out, not for work.")
    ),
    _gguf("IQ1_M", 1.75, 1.393084, _("1-bit: severe loss; for trying a model out, not for work.")),
    _gguf(
        "IQ1_S", 1.5625, 2.211278, _("1-bit: severe loss; for trying a model out, not for work.")
    ),
    FormatQuality(
        "MXFP4_MOE",
        "gguf",
        "good",
        4.25,
        _("Experts in MXFP4: gpt-oss's own release format; elsewhere unmeasured 4-bit."),
        GPT_OSS,
    ),
)
_HF: tuple[FormatQuality, ...] = (
    FormatQuality("fp32", "hf", "recommended", 32, _NEAR, LLAMA_BF16),
    FormatQuality("bf16", "hf", "recommended", 16, _NEAR, LLAMA_BF16),
    FormatQuality("fp16", "hf", "recommended", 16, _NEAR, LLAMA_BF16),
    FormatQuality(
        "fp8",
        "hf",
        "recommended",
        8,
        _("FP8: effectively lossless in published evaluations."),
        KURTIC,
    ),
    FormatQuality(
        "w8a8",
        "hf",
        "recommended",
        8,
        _("INT8 weights and activations: 1-3 % accuracy loss when well tuned."),
        KURTIC,
    ),
    FormatQuality(
        "nvfp4",
        "hf",
        "good",
        4.5,
        _("NVFP4: loss under one percent against FP8 in NVIDIA's evaluations."),
        NVFP4_BLOG,
    ),
    FormatQuality(
        "awq-int4",
        "hf",
        "good",
        4,
        _("4-bit weights (AWQ): close to 8-bit in published evaluations."),
        KURTIC,
    ),
    FormatQuality(
        "gptq-int4",
        "hf",
        "good",
        4,
        _("4-bit weights (GPTQ): close to 8-bit in published evaluations."),
        KURTIC,
    ),
    FormatQuality(
        "mxfp4",
        "hf",
        "good",
        4.25,
        _("MXFP4: gpt-oss's own release format; elsewhere unmeasured 4-bit."),
        GPT_OSS,
    ),
)
# MLX affine quants: bits + one fp16 scale and one fp16 bias per 64 weights (+0.5 bpw).
_MLX: tuple[FormatQuality, ...] = (
    FormatQuality(
        "mlx-8bit",
        "mlx",
        "recommended",
        8.5,
        _("8-bit MLX: as Q8_0, practically the original (not measured on MLX)."),
        MLX_QUANT,
    ),
    FormatQuality(
        "mlx-6bit",
        "mlx",
        "recommended",
        6.5,
        _("6-bit MLX: as Q6_K, near-lossless (not measured on MLX)."),
        MLX_QUANT,
    ),
    FormatQuality(
        "mlx-4bit",
        "mlx",
        "good",
        4.5,
        _("4-bit MLX: as Q4_1, a small loss (not measured on MLX)."),
        MLX_QUANT,
    ),
    FormatQuality(
        "mlx-3bit",
        "mlx",
        "degraded",
        3.5,
        _("3-bit MLX: as the 3-bit GGUF types, a loss you can notice (not measured on MLX)."),
        MLX_QUANT,
    ),
)


def _built_on(name: str, base: FormatQuality) -> FormatQuality:
    """An uploader recipe: the tier, bits and sentence of the llama.cpp type it is built
    on (it keeps some tensors wider, so it is at least that good)."""
    source = f"tier of {base.name}, the llama.cpp type it is built on ({base.source})"
    return FormatQuality(
        name, "gguf", base.tier, base.bits_per_weight, base.description, source, base.kld
    )


def _recipes(measured: dict[str, FormatQuality]) -> tuple[FormatQuality, ...]:
    bases = {**RECIPE_BASE, **REPACK_BASE, **{name: r.base for name, r in UD_RECIPES.items()}}
    return tuple(_built_on(name, measured[base]) for name, base in bases.items())


_MEASURED = {f.name: f for f in (*_GGUF_MEASURED, *_HF, *_MLX)}
# Every weights format the portal knows, by name (GGUF file types and recipes, checkpoint
# formats, MLX quants).
FORMATS: dict[str, FormatQuality] = {
    **_MEASURED,
    **{f.name: f for f in _recipes(_MEASURED)},
}


def format_quality(name: str) -> FormatQuality | None:
    """The tier entry of a format by its name as the pages and the API spell it (Q4_K_M,
    awq-int4, mlx-4bit); None for a name the table does not know."""
    return FORMATS.get(name)


def tier_of(name: str) -> str | None:
    """The tier of a format, None when unknown."""
    entry = FORMATS.get(name)
    return entry.tier if entry else None


def tier_rank(tier: str) -> int:
    """0 for recommended ... 3 for experimental (raises ValueError for another word)."""
    return TIERS.index(tier)


def at_least(name: str, min_tier: str = DEFAULT_MIN_TIER) -> bool:
    """Whether format `name` is of tier `min_tier` or better; an unknown format is not
    (a floor never lets through what it cannot vouch for)."""
    tier = tier_of(name)
    return tier is not None and tier_rank(tier) <= tier_rank(min_tier)


def lowest_at_least(names: Iterable[str], min_tier: str = DEFAULT_MIN_TIER) -> str | None:
    """Of `names` (least compressed first), the last one of tier `min_tier` or better:
    the floor a ladder stops at. None when none is."""
    allowed = [name for name in names if at_least(name, min_tier)]
    return allowed[-1] if allowed else None
