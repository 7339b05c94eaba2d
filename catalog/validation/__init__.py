"""End-to-end accuracy through the catalog (`manage.py validate_portal`).

`python -m estimator.validate` replays the published measurements in
estimator/data/validation/ with ideal inputs: fixture configs and the device totals the logs
print. This module replays the same rows through the page's code path instead (catalog rows
-> catalog.sizing.size_setup, the configurator's sizing) and sets both side by side, so
that a difference points at catalog data or at the sizing service, not at the estimator.

A row is replayed when its model (an LLMModel with a config) and its device (an Accelerator)
are in the catalog. GGUF file sizes name no device: they are sized on REFERENCE_ACCELERATOR,
since weights_bytes does not depend on the device.
"""

from catalog.validation.cases import DATASET_KEYS, DATASETS, MEMORY, SPEED, Case, Dataset
from catalog.validation.lookup import (
    REFERENCE_ACCELERATOR,
    CatalogIndex,
    Match,
    catalog_index,
    match_case,
    portal_sizing,
    setup_for,
)
from catalog.validation.report import (
    MEMORY_TOLERANCE_PCT,
    SPEED_TOLERANCE_POINTS,
    DatasetReport,
    Errors,
    RowComparison,
    ValidationReport,
    portal_validation,
)

__all__ = [
    "DATASETS",
    "DATASET_KEYS",
    "MEMORY",
    "MEMORY_TOLERANCE_PCT",
    "REFERENCE_ACCELERATOR",
    "SPEED",
    "SPEED_TOLERANCE_POINTS",
    "Case",
    "CatalogIndex",
    "Dataset",
    "DatasetReport",
    "Errors",
    "Match",
    "RowComparison",
    "ValidationReport",
    "catalog_index",
    "match_case",
    "portal_sizing",
    "portal_validation",
    "setup_for",
]
