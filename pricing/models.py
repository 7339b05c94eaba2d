"""Cloud prices: providers, the sources that fetch their prices, the offers, and the history.

Offers are public reference data unless their source is an organisation's feed; those rows
carry the organisation and are reached only through the fail-closed `OrgOptionalManager`
(`CloudOffer.objects.visible_to()`, `.for_organization()`; catalog.scoping). The
organisation is the web layer's model, named here by its lazy reference "tenancy.Organization".
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from typing import Any, ClassVar

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from catalog.scoping import OrgOptionalManager

# A web address in an offer's source note (http or https only: it becomes a link).
_URL = re.compile(r"https?://[^\s'\"<>]+")


class BillingModel(models.TextChoices):
    HYPERSCALER = "hyperscaler", _("Hyperscaler (per instance)")
    NEOCLOUD = "neocloud", _("GPU cloud (per GPU)")
    MARKETPLACE = "marketplace", _("Marketplace (per offer)")
    CONTRACT = "contract", _("Negotiated contract")


class SourceKind(models.TextChoices):
    AZURE = "azure", _("Azure Retail Prices API")
    AWS = "aws", _("AWS Price List bulk file (EC2)")
    VASTAI = "vastai", _("Vast.ai offer search")
    RUNPOD = "runpod", _("RunPod GraphQL catalogue")
    LAMBDA = "lambda", _("Lambda instance types")
    FEED = "feed", _("Generic feed (CSV or JSON)")


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")
    SKIPPED = "skipped", _("Skipped (another run is working)")


class Granularity(models.TextChoices):
    SECOND = "second", _("per second")
    MINUTE = "minute", _("per minute")
    HOUR = "hour", _("per hour")
    MONTH = "month", _("per month")
    UNKNOWN = "", _("not stated")


class CloudProvider(models.Model):
    name = models.CharField(_("name"), max_length=80, unique=True)
    slug = models.SlugField(_("slug"), max_length=80, unique=True)
    billing_model = models.CharField(
        _("billing model"), max_length=12, choices=BillingModel.choices, blank=True
    )
    website = models.URLField(_("website"), blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("cloud provider")
        verbose_name_plural = _("cloud providers")

    def __str__(self) -> str:
        return self.name


class PriceSource(models.Model):
    provider = models.ForeignKey(
        CloudProvider, on_delete=models.CASCADE, related_name="sources", verbose_name=_("provider")
    )
    kind = models.CharField(_("kind"), max_length=10, choices=SourceKind.choices)
    name = models.CharField(_("name"), max_length=120, blank=True)
    base_url = models.URLField(
        _("base URL"),
        max_length=500,
        blank=True,
        help_text=_("Endpoint to fetch; point it at a mirror for an air-gapped install."),
    )
    config = models.JSONField(_("configuration"), default=dict, blank=True)
    feed_content = models.TextField(
        _("uploaded feed"), blank=True, help_text=_("CSV or JSON; used when no URL is set.")
    )
    api_key_setting = models.CharField(
        _("API key setting"),
        max_length=60,
        blank=True,
        help_text=_("Name of the settings variable holding the key, e.g. RUNPOD_API_KEY."),
    )
    enabled = models.BooleanField(_("enabled"), default=True)
    refresh_hours = models.PositiveIntegerField(
        _("refresh every (hours)"), default=24, validators=[MinValueValidator(1)]
    )
    organization = models.ForeignKey(
        "tenancy.Organization",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="price_sources",
        verbose_name=_("organization"),
        help_text=_("Set for an organisation's negotiated prices: only its members see them."),
    )
    last_run_status = models.CharField(
        _("last run status"), max_length=10, choices=RunStatus.choices, blank=True
    )
    last_run_at = models.DateTimeField(_("last run"), null=True, blank=True)
    last_success_at = models.DateTimeField(_("last success"), null=True, blank=True)
    # Compare-and-swap claim: a run sets this only when it is empty or expired.
    claimed_until = models.DateTimeField(null=True, blank=True, editable=False)

    all_orgs: ClassVar[models.Manager[Any]] = models.Manager()
    objects: ClassVar[OrgOptionalManager] = OrgOptionalManager()

    class Meta:
        default_manager_name = "all_orgs"
        ordering = ["provider__name", "kind"]
        verbose_name = _("price source")
        verbose_name_plural = _("price sources")
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "provider", "kind"],
                condition=Q(organization__isnull=False),
                name="pricing_one_feed_per_org_and_provider",
            ),
        ]

    def __str__(self) -> str:
        return self.name or f"{self.provider} ({self.get_kind_display()})"

    @property
    def api_key(self) -> str:
        return (
            str(getattr(settings, self.api_key_setting, "") or "") if self.api_key_setting else ""
        )

    @property
    def needs_key(self) -> bool:
        return bool(self.api_key_setting) and not self.api_key


class CloudOffer(models.Model):
    provider = models.ForeignKey(
        CloudProvider, on_delete=models.CASCADE, related_name="offers", verbose_name=_("provider")
    )
    source = models.ForeignKey(
        PriceSource,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="offers",
        verbose_name=_("source"),
    )
    organization = models.ForeignKey(
        "tenancy.Organization",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="cloud_offers",
        verbose_name=_("organization"),
    )
    sku = models.CharField(_("instance or SKU"), max_length=160)
    region = models.CharField(_("region"), max_length=60, blank=True)
    accelerator = models.ForeignKey(
        "catalog.Accelerator",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="cloud_offers",
        verbose_name=_("accelerator"),
    )
    gpu_name = models.CharField(
        _("GPU as the provider names it"), max_length=120, blank=True, db_index=True
    )
    gpu_count = models.PositiveSmallIntegerField(
        _("GPU count"), default=1, validators=[MinValueValidator(1)]
    )
    vram_total_gb = models.FloatField(_("total VRAM (GB)"), null=True, blank=True)
    on_demand_per_hour = models.DecimalField(
        _("on-demand price per hour"), max_digits=12, decimal_places=4, null=True, blank=True
    )
    spot_per_hour = models.DecimalField(
        _("spot price per hour"), max_digits=12, decimal_places=4, null=True, blank=True
    )
    currency = models.CharField(_("currency"), max_length=3, default="USD")
    billing_granularity = models.CharField(
        _("billing granularity"), max_length=6, choices=Granularity.choices, blank=True
    )
    checked_at = models.DateTimeField(_("checked"), db_index=True)
    source_note = models.CharField(_("where the price comes from"), max_length=300, blank=True)

    all_orgs: ClassVar[models.Manager[Any]] = models.Manager()
    objects: ClassVar[OrgOptionalManager] = OrgOptionalManager()

    class Meta:
        default_manager_name = "all_orgs"
        ordering = ["on_demand_per_hour"]
        verbose_name = _("cloud offer")
        verbose_name_plural = _("cloud offers")
        constraints = [
            # Two partial constraints, because NULLs never collide in a plain unique index.
            models.UniqueConstraint(
                fields=["provider", "sku", "region"],
                condition=Q(organization__isnull=True),
                name="pricing_offer_unique_public",
            ),
            models.UniqueConstraint(
                fields=["organization", "provider", "sku", "region"],
                condition=Q(organization__isnull=False),
                name="pricing_offer_unique_per_org",
            ),
            models.CheckConstraint(
                condition=Q(on_demand_per_hour__gte=0) | Q(on_demand_per_hour__isnull=True),
                name="pricing_offer_on_demand_gte_0",
            ),
            models.CheckConstraint(
                condition=Q(spot_per_hour__gte=0) | Q(spot_per_hour__isnull=True),
                name="pricing_offer_spot_gte_0",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.sku} {self.region}".strip()

    @property
    def on_demand_per_gpu_hour(self) -> Decimal | None:
        if self.on_demand_per_hour is None:
            return None
        return self.on_demand_per_hour / self.gpu_count

    @property
    def spot_per_gpu_hour(self) -> Decimal | None:
        return None if self.spot_per_hour is None else self.spot_per_hour / self.gpu_count

    @property
    def is_live(self) -> bool:
        """Refreshed by a price source (a fetcher or an organisation's feed); a seeded or
        hand-entered price has none and stays as it was transcribed."""
        return self.source_id is not None

    @property
    def is_stale(self) -> bool:
        """A live price not refreshed for PRICES_STALE_AFTER_HOURS. A seeded price is never
        stale: it is shown "as of" its date, with its source."""
        return self.is_live and self.checked_at < stale_cutoff()

    @property
    def source_url(self) -> str:
        """Where the price can be checked: the first web address in the source note (the
        page a seeded price was transcribed from), else the provider's website."""
        found = _URL.search(self.source_note)
        return found.group(0).rstrip(".,;:)") if found else self.provider.website


def stale_cutoff() -> Any:
    """Prices checked before this instant are shown as stale."""
    return timezone.now() - timedelta(hours=settings.PRICES_STALE_AFTER_HOURS)


class PriceSnapshot(models.Model):
    """One per offer per observation: the price history the sparkline draws."""

    offer = models.ForeignKey(
        CloudOffer, on_delete=models.CASCADE, related_name="snapshots", verbose_name=_("offer")
    )
    observed_at = models.DateTimeField(_("observed"))
    on_demand_per_hour = models.DecimalField(
        _("on-demand price per hour"), max_digits=12, decimal_places=4, null=True, blank=True
    )
    spot_per_hour = models.DecimalField(
        _("spot price per hour"), max_digits=12, decimal_places=4, null=True, blank=True
    )
    currency = models.CharField(_("currency"), max_length=3, default="USD")
    run = models.ForeignKey(
        "RefreshRun", on_delete=models.SET_NULL, null=True, blank=True, related_name="snapshots"
    )

    class Meta:
        ordering = ["offer", "observed_at"]
        verbose_name = _("price snapshot")
        verbose_name_plural = _("price snapshots")
        constraints = [
            models.UniqueConstraint(
                fields=["offer", "observed_at"], name="pricing_one_snapshot_per_observation"
            )
        ]

    def __str__(self) -> str:
        return f"{self.offer} @ {self.observed_at:%Y-%m-%d}"


class RefreshRun(models.Model):
    source = models.ForeignKey(
        PriceSource, on_delete=models.CASCADE, related_name="runs", verbose_name=_("source")
    )
    status = models.CharField(
        _("status"), max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED
    )
    created = models.DateTimeField(_("queued"), auto_now_add=True)
    started = models.DateTimeField(_("started"), null=True, blank=True)
    finished = models.DateTimeField(_("finished"), null=True, blank=True)
    offers_seen = models.PositiveIntegerField(_("offers seen"), default=0)
    offers_created = models.PositiveIntegerField(_("offers created"), default=0)
    offers_updated = models.PositiveIntegerField(_("offers updated"), default=0)
    offers_unchanged = models.PositiveIntegerField(_("offers unchanged"), default=0)
    snapshots_created = models.PositiveIntegerField(_("snapshots created"), default=0)
    unmatched = models.PositiveIntegerField(_("offers without an accelerator"), default=0)
    skipped = models.JSONField(_("skipped rows"), default=list, blank=True)
    error = models.TextField(_("error"), blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name = _("refresh run")
        verbose_name_plural = _("refresh runs")

    def __str__(self) -> str:
        return f"{self.source} {self.created:%Y-%m-%d %H:%M} {self.status}"

    @property
    def is_finished(self) -> bool:
        return self.status in (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.SKIPPED)

    def summary(self) -> dict[str, Any]:
        """The small dict the Celery task returns and the command prints."""
        return {
            "run_id": self.pk,
            "source_id": self.source_id,
            "status": self.status,
            "seen": self.offers_seen,
            "created": self.offers_created,
            "updated": self.offers_updated,
            "unchanged": self.offers_unchanged,
            "snapshots": self.snapshots_created,
            "unmatched": self.unmatched,
            "skipped": len(self.skipped),
            "error": self.error,
        }
