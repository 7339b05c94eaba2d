"""CSV import/export for bulk edits in admin (django-import-export), keyed by slug.

Imported rows go through full_clean, so the admin's validation (impossible figures)
applies to CSV rows too, and each saved row gets a history entry.
"""

from __future__ import annotations

from import_export import resources

from catalog.models import Accelerator, LLMModel


class AcceleratorResource(resources.ModelResource):
    class Meta:
        model = Accelerator
        import_id_fields = ["slug"]
        exclude = ["id", "seeded_fields", "updated"]
        clean_model_instances = True
        skip_unchanged = True
        report_skipped = True


class LLMModelResource(resources.ModelResource):
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
