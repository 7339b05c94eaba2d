"""throughput.csv model names -> ModelSpec, and the real estimator's bytes per token.

Each model name maps to a config.json (estimator/data/validation/configs/ or
estimator/data/calibration_configs/, see its SOURCES.md, or a model_configs.csv rebuild);
MODEL_CONFIGS is the one such table, shared with estimator.validate. The decode inputs then come
from the same functions the public API uses: `estimator.model.parse_hf_config` for
layers, KV widths and experts, and `estimator.weights.weights_breakdown` with the
measured file size for the bytes read per token (the file size is applied tensor by
tensor, so experts, attention and the excluded token_embd keep their own bit widths).
Models without a config return None; rows.py then uses the file's own columns.
"""

from __future__ import annotations

import csv
import json
from functools import cache
from pathlib import Path
from typing import Any

from estimator.model import ModelSpec, csv_configs, parse_hf_config
from estimator.weights import WeightsBreakdown, WeightsFormat, weights_breakdown

DATA = Path(__file__).resolve().parent.parent / "data"
CONFIG_DIRS = (DATA / "validation" / "configs", DATA / "calibration_configs")

# The one model-name table of the tooling (calibration, validate, catalog's validate_portal):
# lower-case substrings of the data sets' model names -> a config file stem in CONFIG_DIRS
# or a csv_configs.CSV_REBUILDS key (rebuilt from model_configs.csv). First match wins,
# so longer names come first. Stand-ins with the same tensor shapes: Llama 3 8B/70B ->
# Llama 3.1 (same layers, heads and 128256 vocabulary; only RoPE scaling differs);
# Qwen2.5-Coder-7B -> Qwen2.5-7B; Qwen3-Coder-30B-A3B -> Qwen3-30B-A3B; Mistral 7B v0.2 ->
# v0.3 (vocabulary 32768 vs 32000: 3 M of 7.2 B parameters, and token_embd is not read
# when decoding); DeepSeek-Coder-V2-Lite -> DeepSeek-V2-Lite. NVIDIA's NVFP4 / FP8
# re-quantisations of Qwen3.6 / Gemma 4 / Nemotron 3 keep the base model's shapes; their
# quantization_config is ignored (the GGUF format comes from the row).
MODEL_CONFIGS: tuple[tuple[str, str], ...] = (
    # serving.csv names (engine benchmark tables spell models as their HF repositories)
    ("llama-3.1-405b", "meta-llama__Meta-Llama-3.1-405B"),
    ("llama 3.1 405b", "meta-llama__Meta-Llama-3.1-405B"),
    ("hermes-3-llama-3.1-405b", "meta-llama__Meta-Llama-3.1-405B"),
    ("meta-llama-3.1-70b", "meta-llama__Llama-3.1-70B-Instruct"),
    ("llama-3.3-70b", "meta-llama__Llama-3.1-70B-Instruct"),
    ("llama 3.3 70b", "meta-llama__Llama-3.1-70B-Instruct"),
    ("meta-llama-3.1-8b", "meta-llama__Llama-3.1-8B-Instruct"),
    ("qwen3-8b", "Qwen__Qwen3-8B"),
    ("qwen3-14b", "Qwen__Qwen3-14B"),
    ("qwen3-32b", "Qwen__Qwen3-32B"),
    ("qwen3-235b-a22b", "Qwen__Qwen3-235B-A22B"),
    ("qwen3.5-35b-a3b", "Qwen__Qwen3.5-35B-A3B"),
    ("glm-4.5-air", "zai-org__GLM-4.5-Air"),
    ("glm-4.6", "zai-org__GLM-4.5"),
    ("glm-4.5", "zai-org__GLM-4.5"),
    ("deepseek-v3.2", "deepseek-ai__DeepSeek-V3.2"),
    ("deepseek v3.2", "deepseek-ai__DeepSeek-V3.2"),
    ("deepseek-r1-0528", "deepseek-ai__DeepSeek-R1"),
    ("mistral-nemo", "mistralai__Mistral-Nemo-Instruct-2407"),
    ("mixtral-8x22b", "mistralai__Mixtral-8x22B-Instruct-v0.1"),
    ("llama 3 70b", "meta-llama__Llama-3.1-70B-Instruct"),
    ("llama 3.1 70b", "meta-llama__Llama-3.1-70B-Instruct"),
    ("llama-3.2-3b", "meta-llama__Llama-3.2-3B"),
    ("qwen3 8b", "Qwen__Qwen3-8B"),
    ("qwen3 14b", "Qwen__Qwen3-14B"),
    ("qwen3-coder-480b", "Qwen__Qwen3-Coder-480B-A35B-Instruct"),
    ("llama-3.1-70b", "meta-llama__Llama-3.1-70B-Instruct"),
    ("llama 3", "meta-llama__Llama-3.1-8B-Instruct"),
    ("llama-3.1-8b", "meta-llama__Llama-3.1-8B-Instruct"),
    ("llama_3.1_8b", "meta-llama__Llama-3.1-8B-Instruct"),
    ("llama 3.1 8b", "meta-llama__Llama-3.1-8B-Instruct"),
    ("meta-llama-3-8b", "meta-llama__Llama-3.1-8B-Instruct"),
    ("llama 2 70b", "meta-llama__Llama-2-70b-hf"),
    ("llama 2 13b", "meta-llama__Llama-2-13b-hf"),
    ("llama 2 7b", "meta-llama__Llama-2-7b-hf"),
    ("llama-2-7b", "meta-llama__Llama-2-7b-hf"),
    ("codellama-7b", "codellama__CodeLlama-7b-hf"),
    ("gpt-oss-120b", "openai__gpt-oss-120b"),
    ("gpt-oss-20b", "openai__gpt-oss-20b"),
    ("qwen2.5-coder-7b", "Qwen__Qwen2.5-7B-Instruct"),
    ("qwen2.5-7b", "Qwen__Qwen2.5-7B-Instruct"),
    ("qwen3-coder-30b-a3b", "Qwen__Qwen3-30B-A3B"),
    ("qwen3-next", "rebuilt__Qwen3-Next-80B-A3B"),
    ("qwen3 32b", "Qwen__Qwen3-32B"),
    ("mixtral 8x7b", "mistralai__Mixtral-8x7B-Instruct-v0.1"),
    ("mixtral-8x7b", "mistralai__Mixtral-8x7B-Instruct-v0.1"),
    ("mistral-7b-instruct-v0.3", "mistralai__Mistral-7B-Instruct-v0.3"),
    ("mistral 7b", "mistralai__Mistral-7B-Instruct-v0.3"),
    ("gemma-2-9b", "google__gemma-2-9b-it"),
    ("gemma-2-27b", "Gemma-2-27B-it"),
    ("gemma 3 27b", "Gemma-3-27B-it"),
    ("gemma 3 4b", "rebuilt__Gemma-3-4B-it"),
    ("gemma-4-26b-a4b", "google__gemma-4-26B-A4B"),
    ("gemma-4-31b", "nvidia__Gemma-4-31B-IT-NVFP4"),
    ("phi-4", "microsoft__phi-4"),
    ("deepseek v3", "deepseek-ai__DeepSeek-V3"),
    ("deepseek-v3", "deepseek-ai__DeepSeek-V3"),
    ("deepseek r1", "deepseek-ai__DeepSeek-R1"),
    ("deepseek-coder-v2-lite", "deepseek-ai__DeepSeek-V2-Lite"),
    ("deepseek-v2-lite", "deepseek-ai__DeepSeek-V2-Lite"),
    ("qwen3moe", "Qwen__Qwen3-235B-A22B"),
    ("minimax-m2.7", "MiniMaxAI__MiniMax-M2.7"),
    ("qwen3.5-122b-a10b", "Qwen__Qwen3.5-122B-A10B"),
    ("qwen3.6-35b-a3b", "nvidia__Qwen3.6-35B-A3B-NVFP4"),
    ("qwen3.6-27b", "nvidia__Qwen3.6-27B-NVFP4"),
    ("nemotron-3-super-120b", "nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-FP8"),
)

# throughput.csv quant label -> GGUF file type whose per-tensor rules apply (Unsloth "UD"
# mixes keep their base type's layout; the measured file size then scales every tensor).
GGUF_QUANTS = {
    "Q4_K_M": "Q4_K_M",
    "Q4_0": "Q4_0",
    "Q8_0": "Q8_0",
    "Q2_K": "Q2_K",
    "F16": "F16",
    "BF16": "BF16",
    "MXFP4 (MoE)": "MXFP4_MOE",
    "Q4_K_M GGUF (MXFP4 experts)": "MXFP4_MOE",
    "UD-Q8_K_XL": "Q8_0",
    "UD-Q5_K_XL": "Q5_K_M",
    "UD-Q4_K_XL": "Q4_K_M",
    "UD-Q3_K_S": "Q3_K_S",
    "UD-Q2_K_XL": "Q2_K",
    "Q6_K": "Q6_K",
    "Q5_K_M": "Q5_K_M",
    "Q4_K_S": "Q4_K_S",
    "Q3_K_M": "Q3_K_M",
}
# Checkpoint formats of the other engines -> HF dtype (EXL2 and MLC's q4f16_1 are sized as
# bf16 scaled to the nominal file size, i.e. uniformly compressed).
# MLX 4-bit (mlx_lm.convert -q: 4-bit weights, an fp16 scale and bias per 64) is sized as
# AWQ int4 at group 64, MLX 8-bit as int8 with per-channel scales (w8a8): both within a few
# percent of MLX's 4.5 / 8.5 bits per weight.
HF_QUANTS = (
    ("fp8", "fp8"),
    ("gptq", "gptq-int4"),
    ("awq", "awq-int4"),
    ("int4", "gptq-int4"),
    ("mlx 4-bit", "awq-int4"),
    ("mlx 8-bit", "w8a8"),
    ("4-bit", "gptq-int4"),
    ("mxfp4", "mxfp4"),
    ("fp16", "fp16"),
)


def config_stem(model_name: str) -> str | None:
    """The MODEL_CONFIGS stem whose key occurs in the lower-cased model name, if any."""
    name = model_name.lower()
    return next((stem for key, stem in MODEL_CONFIGS if key in name), None)


@cache
def _csv_rows() -> dict[str, dict[str, str]]:
    with (DATA / "validation" / "model_configs.csv").open(newline="", encoding="utf-8") as handle:
        return {row["model"]: row for row in csv.DictReader(handle)}


def rebuilt_config(name: str) -> dict[str, Any]:
    """A config.json dict rebuilt from a model_configs.csv row (model.csv_configs)."""
    return csv_configs.rebuilt_config(_csv_rows()[name])


@cache
def config_text(model_name: str) -> str | None:
    """The config.json text (a file of CONFIG_DIRS, or a model_configs.csv rebuild as
    JSON) standing in for a data set's model name; None for unmapped models."""
    stem = config_stem(model_name)
    if stem is None:
        return None
    path = next((p for d in CONFIG_DIRS if (p := d / f"{stem}.json").exists()), None)
    if path is not None:
        return path.read_text(encoding="utf-8")
    return json.dumps(rebuilt_config(stem))


@cache
def model_spec(model_name: str) -> ModelSpec | None:
    """parse_hf_config of the mapped config; None for unmapped models and for configs
    only the generic fallback parser reads (its shapes are a guess; the row then uses the
    file's own columns, as for unmapped models)."""
    text = config_text(model_name)
    if text is None:
        return None
    spec = parse_hf_config(json.loads(text))
    return None if spec.is_fallback else spec


def weights_format(quant: str, engine: str, file_bytes: float) -> WeightsFormat:
    """The WeightsFormat of a throughput.csv quant label, with the file size applied."""
    size = round(file_bytes)
    if engine == "llama.cpp" and quant in GGUF_QUANTS:
        return WeightsFormat("gguf", GGUF_QUANTS[quant], file_bytes=size)
    lowered = quant.lower()
    dtype = next((d for key, d in HF_QUANTS if key in lowered), "bf16")
    group = 64 if lowered.startswith("mlx") else 128
    return WeightsFormat("hf", dtype, group_size=group, file_bytes=size or None)


@cache
def breakdown(
    model_name: str, quant: str, engine: str, file_bytes: float
) -> WeightsBreakdown | None:
    """weights_breakdown(model_spec(model), weights_format(...)); None without a config."""
    spec = model_spec(model_name)
    if spec is None:
        return None
    return weights_breakdown(spec, weights_format(quant, engine, file_bytes))
