"""Reading typed, validated values out of a config.json dict."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from estimator.model.spec import ConfigError, RopeScaling

Config = Mapping[str, Any]

# Larger than any size a real config states (2^53: the largest integer a JSON float
# holds exactly), so an absurd value is refused before any arithmetic on it.
MAX_CONFIG_INT = 2**53
# A model's size, bounded by the largest published models with a margin of about four,
# rounded up to a power of two (the catalog's configs, December 2026):
# - layers: Llama 3.1 405B has 126 (DeepSeek-V3 61, Qwen3-235B 94, Falcon-180B 80). The
#   estimator walks the layers one by one and a page's analysis sizes the model dozens of
#   times, so the time a request takes grows with this bound (10,000 layers: 2.7 s an
#   analysed estimate; 512: about 0.4 s).
# - hidden size: Llama 3.1 405B's 16,384 is the widest.
# - routed experts: Kimi K3's 896 (Qwen3-Next 512, DeepSeek-V3 256) is the most.
MAX_LAYERS = 512
MAX_HIDDEN = 65_536
MAX_EXPERTS = 4_096


def get_int(
    config: Config,
    key: str,
    default: int | None = None,
    *,
    minimum: int = 1,
    maximum: int = MAX_CONFIG_INT,
) -> int:
    """config[key] as an int in [minimum, maximum]; `default` when absent or null;
    ConfigError otherwise.

    Floats with an integral value (1024.0) are accepted because some exporters write them.
    """
    value = config.get(key)
    if value is None:
        if default is None:
            raise ConfigError(key, "is required")
        return default
    if isinstance(value, bool):
        raise ConfigError(key, f"must be an integer, got {value!r}")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise ConfigError(key, f"must be an integer, got {value!r}")
        value = int(value)
    if not isinstance(value, int):
        raise ConfigError(key, f"must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise ConfigError(key, f"must be >= {minimum}, got {value}")
    if value > maximum:
        raise ConfigError(key, f"must be <= {maximum}, got {value}")
    return value


def get_opt_int(config: Config, key: str, *, minimum: int = 1) -> int | None:
    """config[key] as an int >= minimum, or None when absent or null."""
    if config.get(key) is None:
        return None
    return get_int(config, key, minimum=minimum)


def get_bool(config: Config, key: str, default: bool) -> bool:
    """config[key] as a bool; `default` when absent or null."""
    value = config.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConfigError(key, f"must be true or false, got {value!r}")
    return value


def get_int_list(config: Config, key: str, default: list[int]) -> list[int]:
    """config[key] as a list of non-negative ints; `default` when absent or null."""
    value = config.get(key)
    if value is None:
        return list(default)
    if not isinstance(value, list):
        raise ConfigError(key, f"must be a list, got {type(value).__name__}")
    return [get_int({key: item}, key, minimum=0) for item in value]


def get_str_list(config: Config, key: str) -> list[str] | None:
    """config[key] as a list of strings, or None when absent or null."""
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(key, "must be a list of strings")
    return list(value)


def get_sub(config: Config, key: str) -> Config | None:
    """A nested config dict (text_config, vision_config), or None when absent or null."""
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(key, f"must be an object, got {type(value).__name__}")
    return value


def _rope_dict(config: Config) -> tuple[str, Config] | None:
    """The rope_scaling dict (transformers < 5) or rope_parameters (transformers 5), with
    its key name. A rope_parameters keyed by attention type (Gemma 4: full_attention,
    sliding_attention) gives the full-attention entry: it sets the context."""
    for key in ("rope_scaling", "rope_parameters"):
        value = get_sub(config, key)
        if value is None:
            continue
        nested = value.get("full_attention")
        if isinstance(nested, Mapping):
            return f"{key}.full_attention", nested
        return key, value
    return None


def _opt_float(section: Config, key: str, field: str) -> float | None:
    """section[key] as a positive finite float, None when absent or null."""
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(field, f"must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(field, f"must be a positive number, got {value!r}")
    return float(value)


def get_rope_scaling(config: Config) -> RopeScaling | None:
    """RoPE scaling of a text config: type ("rope_type", or the older "type"), factor and
    original_max_position_embeddings (in the dict, else top-level as in Phi-3's longrope).
    None when there is no dict or its type is "default" (plain RoPE, e.g. GLM-5's
    rope_parameters)."""
    found = _rope_dict(config)
    if found is None:
        return None
    key, rope = found
    kind = rope.get("rope_type", rope.get("type"))
    if kind is None or kind == "default":
        return None
    if not isinstance(kind, str):
        raise ConfigError(f"{key}.rope_type", f"must be a string, got {kind!r}")
    original = get_opt_int(rope, "original_max_position_embeddings")
    if original is None:
        original = get_opt_int(config, "original_max_position_embeddings")
    return RopeScaling(kind, _opt_float(rope, "factor", f"{key}.factor"), original)
