"""Weight formats and sizes: GGUF per-tensor types (llama.cpp rules), HF dtypes.

Public names: GGUF_FILE_TYPES, HF_FORMATS, WeightsFormat, WeightsBreakdown,
weights_breakdown, tp_shard_bytes.
"""

from estimator.weights.breakdown import (
    WeightsBreakdown,
    WeightsFormat,
    tp_shard_bytes,
    weights_breakdown,
)
from estimator.weights.gguf_types import BLOCKS, EXTRA_GGUF_FILE_TYPES, GGUF_FILE_TYPES
from estimator.weights.hf import HF_FORMATS

__all__ = [
    "BLOCKS",
    "EXTRA_GGUF_FILE_TYPES",
    "GGUF_FILE_TYPES",
    "HF_FORMATS",
    "WeightsBreakdown",
    "WeightsFormat",
    "tp_shard_bytes",
    "weights_breakdown",
]
