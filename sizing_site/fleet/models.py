"""An organization's hardware inventory: named machines, each with N cards of a catalog
accelerator, and what owning or renting it internally costs. Rows belong to one
organization (TenantOwned: fail-closed manager); their history says who changed what."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from catalog.models import Accelerator
from catalog.scoping import TenantManager
from sizing_site.tenancy.models import TenantOwned

NAME_MAX = 120
NOTES_MAX = 5000
MAX_CARDS = 64  # the configurator's largest GPU count


class Interconnect(models.TextChoices):
    PCIE = "pcie", _("PCIe")
    NVLINK = "nvlink", _("NVLink")
    INFINITY_FABRIC = "infinity_fabric", _("Infinity Fabric")
    UNKNOWN = "unknown", _("unknown")


class InventoryMachine(TenantOwned):
    """A machine or node the organization has: `card_count` cards of one catalog card.
    Its cost is either owned (purchase price and date, power, electricity) or an internal
    hourly rate; blank figures take the card's or the cost model's defaults."""

    name = models.CharField(_("name"), max_length=NAME_MAX)
    accelerator = models.ForeignKey(
        Accelerator, on_delete=models.PROTECT, related_name="+", verbose_name=_("card")
    )
    card_count = models.PositiveSmallIntegerField(
        _("cards"), default=1, validators=[MinValueValidator(1), MaxValueValidator(MAX_CARDS)]
    )
    host_ram_gb = models.PositiveIntegerField(_("host RAM (GB)"), null=True, blank=True)
    interconnect = models.CharField(
        _("interconnect"),
        max_length=16,
        choices=Interconnect.choices,
        default=Interconnect.UNKNOWN,
    )
    purchase_usd = models.DecimalField(
        _("purchase price (USD)"),
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
    )
    purchase_date = models.DateField(_("purchase date"), null=True, blank=True)
    # Blank: the card's TDP times the cards (catalog Accelerator.tdp_w).
    power_w = models.PositiveIntegerField(_("power (W)"), null=True, blank=True)
    electricity_usd_per_kwh = models.DecimalField(
        _("electricity (USD per kWh)"),
        max_digits=6,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
    )
    # Instead of the owned cost: what the organization charges itself per machine-hour.
    internal_usd_per_hour = models.DecimalField(
        _("internal rate (USD per hour)"),
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
    )
    notes = models.TextField(_("notes"), max_length=NOTES_MAX, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,  # the author's account may be deleted; the machine stays editable
        related_name="+",
        verbose_name=_("added by"),
    )
    created = models.DateTimeField(_("added"), auto_now_add=True)
    updated = models.DateTimeField(_("updated"), auto_now=True)
    history = HistoricalRecords(excluded_fields=["updated"])

    all_tenants: ClassVar[models.Manager[Any]] = models.Manager()
    objects: ClassVar[TenantManager] = TenantManager()

    class Meta:
        default_manager_name = "all_tenants"
        ordering = ["name", "id"]
        verbose_name = _("inventory machine")
        verbose_name_plural = _("inventory machines")

    def __str__(self) -> str:
        return self.name

    @property
    def effective_power_w(self) -> float | None:
        """The machine's power: as entered, else the card's TDP times the cards."""
        if self.power_w:
            return float(self.power_w)
        tdp = self.accelerator.tdp_w
        return float(tdp) * self.card_count if tdp else None
