"""Impossible figures are refused, by clean() for forms and by the database itself."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from catalog.models import Accelerator, LLMModel

pytestmark = pytest.mark.django_db


def _accelerator(**figures: float) -> Accelerator:
    return Accelerator(vendor="X", name="Card", slug="x-card", **figures)


def test_validation_rejects_negative_memory() -> None:
    with pytest.raises(ValidationError) as err:
        _accelerator(memory_gb=-1).full_clean()
    assert "memory_gb" in err.value.message_dict


def test_validation_rejects_bandwidth_above_20_tb_per_s() -> None:
    with pytest.raises(ValidationError) as err:
        _accelerator(bandwidth_gbps=20_001).full_clean()
    assert "bandwidth_gbps" in err.value.message_dict
    _accelerator(bandwidth_gbps=8_000).full_clean()  # B300-class HBM is fine


def test_validation_rejects_more_active_than_total_parameters() -> None:
    model = LLMModel(name="M", slug="m", params_total_published=10, params_active_published=11)
    with pytest.raises(ValidationError) as err:
        model.full_clean()
    assert err.value.message_dict["params_active_published"] == [
        "Active parameters cannot exceed the total."
    ]


@pytest.mark.parametrize(
    "figures", [{"memory_gb": -1}, {"bandwidth_gbps": 25_000}, {"price_usd": -5}]
)
def test_the_database_refuses_impossible_accelerator_figures(figures: dict[str, float]) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        _accelerator(**figures).save()


def test_the_database_refuses_more_active_than_total_parameters() -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        LLMModel.objects.create(name="M", slug="m", params_total=5, params_active=6)
