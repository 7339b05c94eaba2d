"""The machine form (the new and edit pages, and the inventory API) and the fleet page's
filters (the explore card page's form: context, quality floor, search)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from sizing_site.explore.forms import CardModelsForm
from sizing_site.fleet import selectors
from sizing_site.fleet.models import InventoryMachine

MACHINE_FIELDS = (
    "name",
    "accelerator",
    "card_count",
    "host_ram_gb",
    "interconnect",
    "purchase_usd",
    "purchase_date",
    "power_w",
    "electricity_usd_per_kwh",
    "internal_usd_per_hour",
    "notes",
)


class MachineForm(forms.ModelForm):
    """A machine's fields; the card is named by its catalog slug (the API's spelling
    too), among the cards the estimator can size."""

    accelerator = forms.ModelChoiceField(
        label=_("Card"),
        queryset=selectors.machine_card_list(organization=None),
        to_field_name="slug",
    )

    class Meta:
        model = InventoryMachine
        fields = MACHINE_FIELDS
        widgets = {
            "purchase_date": forms.DateInput(attrs={"type": "date"}),
            "notes": forms.Textarea(attrs={"rows": 3}),
        }

    def __init__(self, *args: Any, organization: Any = None, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.fields["name"].strip = True  # type: ignore[attr-defined]
        if organization is not None:
            # The public cards plus the organization's own (sizing_site.owncatalog).
            field: Any = self.fields["accelerator"]
            field.queryset = selectors.machine_card_list(organization=organization)


class FleetForm(CardModelsForm):
    """The fleet page's filters, read as on the explore card page (every parameter may be
    left out: its default applies; a bad one is a 400 naming it). A catalog without GGUF
    quant formats has no quality choice: the estimator's own ladder applies
    (selectors.model_on_machine)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.ladder:
            self.fields["quality"].required = False
