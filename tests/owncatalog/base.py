"""The own-catalog tests' cast: the tenancy cast (Alice admin and Bob viewer of org A,
Charlie admin of org B), Dave an editor of org A, and Qwen3-8B's real config.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import translation

from sizing_site.tenancy.access import Tenant, tenant_for
from sizing_site.tenancy.models import Membership, Role
from tests.cast import CastTestCase

CONFIGS = Path(__file__).resolve().parents[2] / "catalog" / "data" / "configs"
QWEN3_8B_TEXT = (CONFIGS / "Qwen__Qwen3-8B.json").read_text()
QWEN3_8B = json.loads(QWEN3_8B_TEXT)
# Qwen3-8B counted by hand from its config (hidden 4096, 36 layers, FFN 12288, 32 query
# heads and 8 KV heads of 128, vocab 151936, untied embeddings):
#   per layer: q 4096*4096 + k 4096*1024 + v 4096*1024 + o 4096*4096 = 41,943,040
#              MLP 3*4096*12288 = 150,994,944; q/k norms 2*128 + 2 RMSNorms 2*4096 = 8,448
#              -> 192,946,432; x 36 = 6,946,071,552
#   embeddings and LM head 2*151936*4096 = 1,244,659,712; final norm 4,096
#   total 8,190,735,360 (Qwen's card: 8.2B)
QWEN3_8B_PARAMS = 8_190_735_360


class OwnCase(CastTestCase):
    dave: User

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.dave = User.objects.create_user("dave", "dave@a.example", "pw-dave-123")
        Membership.all_tenants.create(user=cls.dave, organization=cls.org_a, role=Role.EDITOR)

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def tenant(self, user: User | None = None, org: str = "org-a") -> Tenant:
        return tenant_for(user or self.alice, org)

    def url(self, name: str, *args: Any, org: str = "org-a") -> str:
        return reverse(f"owncatalog:{name}", args=[org, *args])

    def api(self, name: str, *args: Any, org: str = "org-a") -> str:
        return reverse(f"api:{name}", args=[org, *args])
