"""Weight formats and sizes: GGUF per-tensor types (llama.cpp rules), HF dtypes.

Public names: GGUF_FILE_TYPES, HF_FORMATS, REPACK_BASE (ARM repacks of Q4_0, sized as
Q4_0), WeightsFormat, WeightsBreakdown, weights_breakdown, tp_shard_bytes.
"""

from estimator.weights.breakdown import (
    WeightsBreakdown,
    WeightsFormat,
    tp_shard_bytes,
    weights_breakdown,
)
from estimator.weights.gguf_types import (
    BLOCKS,
    EXTRA_GGUF_FILE_TYPES,
    GGUF_FILE_TYPES,
    REPACK_BASE,
)
from estimator.weights.hf import HF_FORMATS

__all__ = [
    "BLOCKS",
    "EXTRA_GGUF_FILE_TYPES",
    "GGUF_FILE_TYPES",
    "HF_FORMATS",
    "REPACK_BASE",
    "WeightsBreakdown",
    "WeightsFormat",
    "tp_shard_bytes",
    "weights_breakdown",
]
