"""The fleet tests' cast: the tenancy cast, GLM-4.5-Air and the A100 80GB PCIe (the
configurator's test pair), a short GGUF quality ladder, Dave (an editor of org A), a
2 x A100 machine of org A (Alice's) and one of org B (Charlie's)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import translation

from catalog.models import QuantFormat
from sizing_site.fleet import services
from sizing_site.fleet.models import InventoryMachine
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Membership, Role
from tests.configurator.test_views import GlmOnA100

# (name, bits per weight, quality rank): the explore ladder, least compressed first.
LADDER = (("BF16", 16, 99), ("Q8_0", 8.5, 90), ("Q6_K", 6.56, 80), ("Q4_K_M", 4.89, 70))


class FleetCase(GlmOnA100):
    dave: User
    machine: InventoryMachine
    machine_b: InventoryMachine

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        for name, bits, rank in LADDER:
            QuantFormat.objects.create(
                name=name, slug=name.lower(), family="gguf", bits_per_weight=bits, quality_rank=rank
            )
        cls.dave = User.objects.create_user("dave", "dave@a.example", "pw-dave-123")
        Membership.all_tenants.create(user=cls.dave, organization=cls.org_a, role=Role.EDITOR)
        cls.machine = cls.add_machine(cls.alice, "org-a", "Rack A: two A100 (secret)", cards=2)
        cls.machine_b = cls.add_machine(cls.charlie, "org-b", "Org B's A100 box", cards=1)

    @classmethod
    def add_machine(cls, user: User, org: str, name: str, *, cards: int) -> InventoryMachine:
        return services.machine_create(
            tenant=tenant_for(user, org, min_role=Role.EDITOR),
            user=user,
            values={"name": name, "accelerator": cls.card, "card_count": cards},
        )

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def url(self, name: str, *args: Any, org: str = "org-a") -> str:
        return reverse(f"fleet:{name}", args=[org, *args])

    def api(self, name: str, *args: Any, org: str = "org-a") -> str:
        return reverse(f"api:{name}", args=[org, *args])
