"""CSV import/export for bulk edits in admin (django-import-export), keyed by slug.

Imported rows go through full_clean, so the admin's validation (impossible figures)
applies to CSV rows too, and each saved row gets a history entry.
"""

from __future__ import annotations

from typing import Any

from import_export import resources

from catalog.exports import safe_cell, unsafe_cell
from catalog.models import Accelerator, LLMModel


class SafeExportResource(resources.ModelResource):
    """Cells a spreadsheet would run as formulas are exported quoted (catalog.exports) and
    the quote is dropped again on import, so an export round-trips."""

    def export_field(self, field: Any, instance: Any, **kwargs: Any) -> Any:
        return safe_cell(super().export_field(field, instance, **kwargs))

    def before_import_row(self, row: Any, **kwargs: Any) -> None:
        for key, value in list(row.items()):
            row[key] = unsafe_cell(value)
        super().before_import_row(row, **kwargs)


class AcceleratorResource(SafeExportResource):
    class Meta:
        model = Accelerator
        import_id_fields = ["slug"]
        exclude = ["id", "seeded_fields", "updated"]
        clean_model_instances = True
        skip_unchanged = True
        report_skipped = True


class LLMModelResource(SafeExportResource):
    class Meta:
        model = LLMModel
        import_id_fields = ["slug"]
        # config.json is edited through the importer (it runs the estimator's parser);
        # the counted parameters follow from it.
        exclude = [
            "id",
            "seeded_fields",
            "updated",
            "config",
            "params_total",
            "params_active",
            "architecture",
            "attention",
            "model_type",
        ]
        clean_model_instances = True
        skip_unchanged = True
        report_skipped = True
