"""config.json -> ModelSpec: layer specs and the exact tensor inventory.

Public names: parse_hf_config, ConfigError, ModelSpec, Tensor, LayerSpec, MLASpec.
"""

from estimator.model.parse import parse_hf_config
from estimator.model.spec import ConfigError, LayerSpec, MLASpec, ModelSpec, Tensor

__all__ = ["ConfigError", "LayerSpec", "MLASpec", "ModelSpec", "Tensor", "parse_hf_config"]
