"""The rent-or-buy form beside the configurator's: owning the configuration's hardware
against renting the cheapest fitting offer (its own GET parameters: hours, hw_usd,
power_w, kwh_usd, pue, years, busy)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from catalog import hardware
from catalog.models import Accelerator
from estimator import cost
from pricing import costs

# Rent vs buy: the host allowance and its basis are estimator.cost's (system_purchase_usd,
# system_power_w); a multi-GPU server costs more, so the fields can be overwritten.
HOST_ALLOWANCE_USD = cost.HOST_ALLOWANCE_USD
HOST_POWER_W = cost.HOST_POWER_W
# An assumption (pricing.costs' default, also for the owner's cost per 1M tokens); for
# scale, the US residential average was about 0.16 USD/kWh in 2024 (EIA, Electric Power
# Monthly, table 5.3).
DEFAULT_USD_PER_KWH = costs.DEFAULT_USD_PER_KWH
DEFAULT_HOURS_PER_DAY = 8  # a working day of use, an assumption
DEFAULT_PUE = 1.0  # a desk: no cooling plant on top of the machine's own draw
# The owner's cost per 1M tokens (pricing.costs.owned_ownership's defaults): the purchase
# over three years, the machine busy half of every day.
DEFAULT_YEARS = costs.DEFAULT_AMORTIZATION_YEARS
DEFAULT_BUSY_PERCENT = round(costs.DEFAULT_UTILIZATION * 100)


class RentBuyForm(forms.Form):
    """Owning the configuration's hardware against renting the cheapest fitting offer.
    Its own GET parameters beside the configurator's; defaults come from the catalog."""

    hours = forms.FloatField(label=_("Active hours per day"), min_value=1, max_value=24)
    hw_usd = forms.FloatField(label=_("Hardware price (USD)"), min_value=0, max_value=1e9)
    power_w = forms.FloatField(label=_("Power draw (W)"), min_value=0, max_value=1e6)
    kwh_usd = forms.FloatField(label=_("Electricity (USD per kWh)"), min_value=0, max_value=10)
    pue = forms.FloatField(label=_("PUE"), min_value=1, max_value=5)
    years = forms.FloatField(label=_("Years to pay off the hardware"), min_value=0.5, max_value=15)
    busy = forms.FloatField(
        label=_("Busy share of the day (%), for the cost per 1M tokens"),
        min_value=1,
        max_value=100,
    )
    # for the page's note on where the defaults come from
    host_allowance_usd = HOST_ALLOWANCE_USD
    host_power_w = HOST_POWER_W
    default_usd_per_kwh = DEFAULT_USD_PER_KWH
    # the catalog's figures for the owner's cost when the form is not bound (for_configuration)
    catalog_price_usd: float | None = None
    catalog_tdp_w: int | None = None
    gpus = 1
    complete_system = False

    @classmethod
    def for_configuration(
        cls,
        data: Mapping[str, Any],
        *,
        price_usd: float | None,
        tdp_w: int | None,
        gpus: int,
        complete_system: bool = False,
    ) -> RentBuyForm:
        """Bound to the query merged over the defaults; unbound (nothing to compare yet)
        while the catalog lacks a default and the visitor has not sent the form.
        complete_system: the device is a whole computer (unified memory), so no host
        allowance is added to its price and power."""
        host = not complete_system
        defaults: dict[str, Any] = {
            "hours": DEFAULT_HOURS_PER_DAY,
            "hw_usd": cost.system_purchase_usd(price_usd, gpus, host=host),
            "power_w": cost.system_power_w(tdp_w, gpus, host=host),
            "kwh_usd": DEFAULT_USD_PER_KWH,
            "pue": DEFAULT_PUE,
            "years": DEFAULT_YEARS,
            "busy": DEFAULT_BUSY_PERCENT,
        }
        sent = any(name in data for name in cls.base_fields)
        if not sent and None in defaults.values():
            form = cls(initial=defaults)
        else:
            known = {k: str(v) for k, v in defaults.items() if v is not None}
            form = cls({**known, **{k: data[k] for k in cls.base_fields if k in data}})
        form.catalog_price_usd, form.catalog_tdp_w, form.gpus = price_usd, tdp_w, gpus
        form.complete_system = complete_system
        return form

    @classmethod
    def for_card(
        cls, data: Mapping[str, Any], *, accelerator: Accelerator, gpus: int
    ) -> RentBuyForm:
        """for_configuration with the card's owned unit (catalog.hardware.owned_unit): a PCIe
        card in a host, a unified-memory machine as sold, an SXM / OAM module as its share
        of the server it comes in (no price when that server's is unknown)."""
        unit = hardware.owned_unit(accelerator)
        form = cls.for_configuration(
            data,
            price_usd=unit.price_usd,
            tdp_w=round(unit.power_w) if unit.power_w else None,
            gpus=gpus,
            complete_system=not unit.host,
        )
        form.owned_basis = unit.basis
        return form

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owned_basis = "card"
        for name, field in self.fields.items():
            field.widget.attrs["aria-describedby"] = f"err-{name}"
            field.widget.attrs["step"] = "any"

    def ownership(self) -> cost.Ownership | None:
        """Owning the hardware as the visitor set it; None until the form is sent valid."""
        if not self.is_bound or not self.is_valid():
            return None
        data = self.cleaned_data
        return cost.Ownership(
            purchase_usd=data["hw_usd"],
            power_w=data["power_w"],
            electricity_usd_per_kwh=data["kwh_usd"],
            pue=data["pue"],
            hours_per_day=data["hours"],
            amortization_months=max(1, round(data["years"] * 12)),
        )

    def owner_cost_basis(self) -> cost.Ownership | None:
        """Owning for the cost per 1M tokens (pricing.costs.owned_system): 24 h a day at
        the busy share, the purchase over the years. The visitor's figures once sent
        valid (None while invalid); before that the catalog's (pricing.costs.
        owned_ownership, None without a catalog price)."""
        if not self.is_bound:
            return costs.owned_ownership(
                self.catalog_price_usd,
                self.catalog_tdp_w,
                self.gpus,
                complete_system=self.complete_system,
            )
        if not self.is_valid():
            return None
        data = self.cleaned_data
        return costs.owned_system(
            data["hw_usd"],
            data["power_w"],
            years=data["years"],
            utilization=data["busy"] / 100,
            usd_per_kwh=data["kwh_usd"],
            pue=data["pue"],
        )

    @property
    def typed_price(self) -> bool:
        """Whether the visitor sent a hardware price of their own (not the catalog's)."""
        if not self.is_bound or not self.is_valid():
            return False
        catalog = cost.system_purchase_usd(
            self.catalog_price_usd, self.gpus, host=not self.complete_system
        )
        return catalog is None or abs(self.cleaned_data["hw_usd"] - catalog) > 0.005

    @property
    def hours_per_day(self) -> float:
        """The hours a day the offers' monthly rent is counted for (the default while the
        form is invalid or unbound)."""
        if self.is_bound:
            self.is_valid()
            hours: float | None = self.cleaned_data.get("hours")
            if hours is not None:
                return hours
        return DEFAULT_HOURS_PER_DAY
