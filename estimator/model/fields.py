"""Reading typed, validated values out of a config.json dict."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from estimator.model.spec import ConfigError

Config = Mapping[str, Any]


def get_int(config: Config, key: str, default: int | None = None, *, minimum: int = 1) -> int:
    """config[key] as an int >= minimum; `default` when absent or null; ConfigError otherwise.

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
