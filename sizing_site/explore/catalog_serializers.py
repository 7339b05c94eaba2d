"""The catalog endpoints' rows (sizing_site.explore.catalog_api): what the tables store, with
their sources, in plain JSON types; and the few scalar fields staff may PATCH."""

from __future__ import annotations

import math
from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from catalog.hardware import SupportMatrix
from catalog.models import (
    Accelerator,
    Architecture,
    InferenceEngine,
    LLMModel,
    ModelWeights,
    QuantFormat,
    Segment,
)

# Provenance every catalog table carries (catalog.models.Reference).
REFERENCE_FIELDS = ("sources", "confidence", "last_verified", "needs_review", "notes", "updated")
NOTES_MAX = 5000


class ModelSerializer(serializers.ModelSerializer[LLMModel]):
    """A model with its config summary: parameters, layers, context, MoE, licence, sources.
    `layers` and `experts` come from the stored config.json (its text_config for the
    multimodal ones); null when the config does not say."""

    # Declared: a read-only field built from the model drops allow_blank, and the schema
    # would then leave out the "" that a model of unknown architecture has.
    architecture = serializers.ChoiceField(
        choices=Architecture.choices, allow_blank=True, read_only=True
    )
    # An organisation's own row (its slug), seen by its members only; null: the public
    # catalog. The list reads it with the row (select_related).
    organization = serializers.CharField(
        source="organization.slug",
        read_only=True,
        allow_null=True,
        help_text="The slug of the organisation that added this row for its members "
        "only; null for the public catalog.",
    )
    moe = serializers.SerializerMethodField()
    layers = serializers.SerializerMethodField()
    experts = serializers.SerializerMethodField()
    experts_per_token = serializers.SerializerMethodField()

    class Meta:
        model = LLMModel
        fields: tuple[str, ...] = (
            "slug",
            "name",
            "family",
            "publisher",
            "hf_repo",
            "release_date",
            "license",
            "weights_availability",
            "architecture",
            "attention",
            "model_type",
            "moe",
            "params_total",
            "params_active",
            "params_total_published",
            "params_active_published",
            "layers",
            "experts",
            "experts_per_token",
            "max_context_tokens",
            "rope_scaling_max_context_tokens",
            "modalities",
            "tasks",
            "organization",
            *REFERENCE_FIELDS,
        )
        read_only_fields = fields

    def get_moe(self, obj: LLMModel) -> bool:
        return obj.architecture in ("moe", "mla")

    def get_layers(self, obj: LLMModel) -> int | None:
        return _first_int(obj, "cfg_layers", "cfg_text_layers")

    def get_experts(self, obj: LLMModel) -> int | None:
        return _first_int(obj, "cfg_experts", "cfg_routed_experts", "cfg_num_experts")

    def get_experts_per_token(self, obj: LLMModel) -> int | None:
        return _first_int(obj, "cfg_experts_per_tok")


def _first_int(obj: Any, *names: str) -> int | None:
    """The first annotation (a config.json key, sizing_site.explore.catalog_api.CONFIG_KEYS) that
    holds a whole number; config values are the publisher's, so anything else is None."""
    for name in names:
        value = getattr(obj, name, None)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


class ModelDetailSerializer(ModelSerializer):
    """One model: the summary plus its config.json as stored."""

    class Meta(ModelSerializer.Meta):
        fields = (*ModelSerializer.Meta.fields, "config")
        read_only_fields = fields


class WeightsSerializer(serializers.ModelSerializer[ModelWeights]):
    """One model in one format: `file_bytes` measured (with its source), `computed_bytes`
    the estimator's figure, `size_bytes` the measured one when known."""

    model = serializers.CharField(source="model.slug", read_only=True)
    size_bytes = serializers.IntegerField(read_only=True, allow_null=True)

    class Meta:
        model = ModelWeights
        fields = (
            "model",
            "format",
            "quant",
            "file_bytes",
            "file_bytes_source",
            "computed_bytes",
            "size_bytes",
            "tensor_summary",
            "gguf_arch",
            "quality_note",
            "repo",
            *REFERENCE_FIELDS,
        )
        read_only_fields = fields


class AcceleratorSerializer(serializers.ModelSerializer[Accelerator]):
    # Declared for its "" (no segment known), as ModelSerializer.architecture is.
    segment = serializers.ChoiceField(choices=Segment.choices, allow_blank=True, read_only=True)
    # As ModelSerializer.organization: an organisation's own row (its slug).
    organization = serializers.CharField(
        source="organization.slug",
        read_only=True,
        allow_null=True,
        help_text="The slug of the organisation that added this row for its members "
        "only; null for the public catalog.",
    )
    default_engine = serializers.SerializerMethodField()

    class Meta:
        model = Accelerator
        fields: tuple[str, ...] = (
            "slug",
            "vendor",
            "name",
            "aliases",
            "segment",
            "form_factor",
            "architecture",
            "memory_gb",
            "memory_gib",
            "memory_reported_gib",
            "memory_kind",
            "memory_type",
            "bandwidth_gbps",
            "fp16_tflops",
            "fp8_tflops",
            "fp4_tflops",
            "int8_tops",
            "tdp_w",
            "interconnect",
            "interconnect_gbps",
            "chips_per_board",
            "release_date",
            "price_usd",
            "price_date",
            "curated",
            "default_engine",
            "organization",
            *REFERENCE_FIELDS,
        )
        read_only_fields = fields

    def get_default_engine(self, obj: Accelerator) -> str | None:
        """The admin's default engine (a slug); null: the matrix's first one."""
        return obj.default_engine.slug if obj.default_engine else None


class AcceleratorDetailSerializer(AcceleratorSerializer):
    """One card with the engine support matrix: every engine that runs on it through its
    preferred backend (catalog.hardware.SupportMatrix), the card's default first."""

    engines = serializers.SerializerMethodField()

    class Meta(AcceleratorSerializer.Meta):
        fields = (*AcceleratorSerializer.Meta.fields, "engines")
        read_only_fields = fields

    def get_engines(self, obj: Accelerator) -> list[dict[str, Any]]:
        matrix: SupportMatrix = self.context["support_matrix"]
        default = matrix.default_for(obj)
        return [
            {
                "engine": choice.engine,
                "backend": choice.backend,
                "status": choice.status,
                "package": choice.package,
                "source": choice.source,
                "default": choice == default,
            }
            for choice in matrix.default_first(obj)
        ]


class EngineSerializer(serializers.ModelSerializer[InferenceEngine]):
    class Meta:
        model = InferenceEngine
        fields = (
            "slug",
            "name",
            "versions",
            "formats",
            "backends",
            "launch_templates",
            "docs_url",
            *REFERENCE_FIELDS,
        )
        read_only_fields = fields


class QuantFormatSerializer(serializers.ModelSerializer[QuantFormat]):
    class Meta:
        model = QuantFormat
        fields = (
            "slug",
            "name",
            "family",
            "bits_per_weight",
            "quality_rank",
            "description",
            *REFERENCE_FIELDS,
        )
        read_only_fields = fields


# --- what staff may change -----------------------------------------------------------------


class NotesPatchSerializer(serializers.Serializer[Any]):
    """Staff PATCH of a model, engine or quant format: the free-text notes only."""

    notes = serializers.CharField(max_length=NOTES_MAX, allow_blank=True, trim_whitespace=True)

    def update(self, instance: Any, validated_data: dict[str, Any]) -> Any:
        for name, value in validated_data.items():
            setattr(instance, name, value)
        instance.save(update_fields=[*validated_data, "updated"])  # signals bump the version
        return instance

    def create(self, validated_data: dict[str, Any]) -> Any:  # pragma: no cover - PATCH only
        raise NotImplementedError


class AcceleratorPatchSerializer(NotesPatchSerializer):
    """Staff PATCH of a card: notes, the list price in USD and the date of that price."""

    price_usd = serializers.FloatField(min_value=0, max_value=10_000_000, allow_null=True)
    price_date = serializers.DateField(allow_null=True)

    def validate_price_usd(self, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise serializers.ValidationError(_("Enter a finite number."))
        return value
