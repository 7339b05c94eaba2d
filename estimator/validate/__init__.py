"""Accuracy report: the public estimate path against the published measurements.

`python -m estimator.validate [--json]` builds one public request per measurement in
estimator/data/validation/ (config from calibration/models.py's MODEL_CONFIGS), runs
`estimator.api.estimate`, and compares one figure of the result with the measurement:

- gguf_sizes.csv        -> weights_bytes vs the Hugging Face file size (decimal GB)
- llamacpp_memory.csv   -> kv_cache_bytes and overhead_breakdown.compute_buffer (MiB)
- vllm_memory.csv       -> per_device_weights_bytes (GiB) and kv_cache_capacity_tokens
- throughput.csv        -> decode_tokens_per_s (or the aggregate for batched rows) and
                           prefill_tokens_per_s, including whether it lies in [low, high]

Rows whose model has no config, or whose engine/quant the estimator does not model, are
counted as skipped. The process always exits 0; misses against the targets are marked.

Modules: metrics (Metric, Target), data (the data sets, the base request), sizes
(gguf_sizes*.csv), memory (llamacpp_memory.csv, vllm_memory.csv), throughput
(throughput.csv), report (the table, JSON and `main`). The names below are the ones the
catalog's replay of the same rows (catalog/validation/) and the tests use.
"""

from __future__ import annotations

from estimator.validate.data import BIG_DEVICE_GB, config_for, mib, read_csv, rebuilt_config
from estimator.validate.memory import (
    compute_buffer_measure,
    fully_placed,
    llamacpp_request,
    vllm_kv_tokens,
    vllm_request,
)
from estimator.validate.metrics import Metric, Target, misses
from estimator.validate.report import format_speed_holdouts, report
from estimator.validate.sizes import gguf_request, ud_config_text, validate_gguf_sizes_ud
from estimator.validate.throughput import (
    throughput_figure,
    throughput_metric,
    throughput_request,
)

__all__ = [
    "BIG_DEVICE_GB",
    "Metric",
    "Target",
    "compute_buffer_measure",
    "config_for",
    "format_speed_holdouts",
    "fully_placed",
    "gguf_request",
    "llamacpp_request",
    "mib",
    "misses",
    "read_csv",
    "rebuilt_config",
    "report",
    "throughput_figure",
    "throughput_metric",
    "throughput_request",
    "ud_config_text",
    "validate_gguf_sizes_ud",
    "vllm_kv_tokens",
    "vllm_request",
]
