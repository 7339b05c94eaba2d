"""The cast plus one catalog model and card, and a helper that saves a configuration the
way the configurator's Save form does."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import translation

from sizing_site.configurator.state import configuration_size_by_slugs
from sizing_site.reports import services
from sizing_site.reports.models import SavedConfiguration
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Membership, Role
from tests.configurator.test_views import GlmOnA100

QUERY = {"quant": "Q4_K_M", "ctx": "32768", "gpus": "2"}


class ReportsTestCase(GlmOnA100):
    dave: User
    saved: SavedConfiguration

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.dave = User.objects.create_user("dave", "dave@a.example", "pw-dave-123")
        Membership.all_tenants.create(user=cls.dave, organization=cls.org_a, role=Role.EDITOR)
        cls.saved = cls.save_as(cls.alice, "2x A100 at 32K")

    @classmethod
    def save_as(cls, user: User, name: str, org: str = "org-a") -> SavedConfiguration:
        return services.saved_configuration_create(
            tenant=tenant_for(user, org, min_role=Role.EDITOR),
            user=user,
            name=name,
            notes="for the budget meeting",
            tags=["budget"],
            state=configuration_size_by_slugs(
                model_slug="glm-4-5-air", accelerator_slug="nvidia-a100-80gb-pcie", data=QUERY
            ),
        )

    def url(self, name: str, *args: object, lang: str = "en") -> str:
        with translation.override(lang):
            return reverse(f"reports:{name}", args=args)
