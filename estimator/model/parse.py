"""parse_hf_config: config.json dict -> ModelSpec, dispatching on model_type."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from estimator.model import dense, families, hybrid, moe, sparse
from estimator.model.fields import Config, get_sub
from estimator.model.generic import parse_generic
from estimator.model.multimodal import multimodal_tensors
from estimator.model.spec import ConfigError, ModelSpec
from estimator.model.text import TextArch, assemble

Parser = Callable[[Config, str], TextArch]

PARSERS: dict[str, Parser] = {
    "llama": dense.parse_llama,
    "granite": dense.parse_llama,
    "mistral": dense.parse_mistral,
    "qwen2": dense.parse_qwen2,
    "qwen2_vl": dense.parse_qwen2,
    "qwen2_5_vl": dense.parse_qwen2,
    "qwen3": dense.parse_qwen3,
    "phi3": dense.parse_phi3,
    "gemma2": dense.parse_gemma2,
    "gemma3": dense.parse_gemma3,
    "gemma3_text": dense.parse_gemma3,
    "mixtral": moe.parse_mixtral,
    "qwen2_moe": moe.parse_qwen_moe,
    "qwen3_moe": moe.parse_qwen_moe,
    "qwen3_next": moe.parse_qwen3_next,
    "deepseek_v2": moe.parse_deepseek,
    "deepseek_v3": moe.parse_deepseek,
    "kimi_k2": moe.parse_deepseek,
    "glm4_moe": moe.parse_glm4_moe,
    "gpt_oss": moe.parse_gpt_oss,
    "llama4": moe.parse_llama4,
    "llama4_text": moe.parse_llama4,
    "qwen3_vl": families.parse_qwen3_vl_text,
    "qwen3_vl_text": families.parse_qwen3_vl_text,
    "qwen3_vl_moe": families.parse_qwen3_vl_moe_text,
    "qwen3_vl_moe_text": families.parse_qwen3_vl_moe_text,
    "qwen3_5": hybrid.parse_qwen3_5,
    "qwen3_5_text": hybrid.parse_qwen3_5,
    "qwen3_5_moe": hybrid.parse_qwen3_5,
    "qwen3_5_moe_text": hybrid.parse_qwen3_5,
    "nemotron_h": hybrid.parse_nemotron_h,
    "minimax_m1": hybrid.parse_minimax_m1,
    "deci": hybrid.parse_deci,
    "nemotron-nas": hybrid.parse_deci,
    "mimo": families.parse_mimo,
    "cohere2": families.parse_cohere2,
    "olmo2": families.parse_olmo2,
    "smollm3": families.parse_smollm3,
    "granitemoe": families.parse_granitemoe,
    "granitemoeshared": families.parse_granitemoe,
    "phimoe": families.parse_phimoe,
    "minimax_m2": sparse.parse_minimax_m2,
    "glm_moe_dsa": sparse.parse_dsa,
    "deepseek_v32": sparse.parse_dsa,
    "mimo_v2_flash": sparse.parse_mimo_v2,
    "gemma4": sparse.parse_gemma4,
    "gemma4_text": sparse.parse_gemma4,
    "ernie4_5_moe": sparse.parse_ernie_moe,
    "hunyuan_v1_moe": sparse.parse_hunyuan_moe,
    "hunyuan": sparse.parse_hunyuan_moe,
}

# Wrappers whose text model lives under text_config (Gemma3ForConditionalGeneration,
# Llama4ForConditionalGeneration, newer Qwen2.5-VL exports).
_TEXT_MODEL_TYPE = {"gemma3": "gemma3_text", "llama4": "llama4_text"}


def _text_part(config: Config) -> tuple[str, Config]:
    """The model_type and dict describing the text decoder.

    Multimodal wrappers keep it under text_config; its own model_type wins when present.
    """
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        raise ConfigError("model_type", "missing or not a string")
    text = get_sub(config, "text_config")
    if text is None:
        return model_type, config
    if "tie_word_embeddings" not in text and "tie_word_embeddings" in config:
        # Qwen3.5 and others keep tying on the wrapper only.
        text = {**text, "tie_word_embeddings": config["tie_word_embeddings"]}
    inner = text.get("model_type")
    if isinstance(inner, str) and inner in PARSERS:
        return inner, text
    return _TEXT_MODEL_TYPE.get(model_type, model_type), text


# The MoE-aware generic parser (estimator/model/generic.py); the old name is kept.
parse_fallback = parse_generic


def parse_hf_config(config: Mapping[str, Any]) -> ModelSpec:
    """Parse a Hugging Face config.json dict into a ModelSpec.

    Absent keys take the defaults of the architecture's transformers config class (see
    estimator/model/dense.py and moe.py). Raises ConfigError on unreadable configs.
    """
    if not isinstance(config, Mapping):
        raise ConfigError("config", "must be a JSON object")
    model_type, text = _text_part(config)
    parser = PARSERS.get(model_type, parse_fallback)
    arch = parser(text, model_type)
    outer_type = config.get("model_type")
    mm, mm_notes = multimodal_tensors(str(outer_type), config, arch.common.hidden)
    return assemble(arch, mm, mm_notes)
