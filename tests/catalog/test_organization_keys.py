"""Whose entries an explore page reads (candidates.organization_keys): a member of
organisations that own no model or card sees exactly the public catalog and shares its
cached entries (which the warm-up fills); an organisation with an own row keeps its own,
from the catalog edit that adds the row."""

from __future__ import annotations

from catalog.models import Accelerator, LLMModel
from catalog.sizing.candidates import organization_keys
from tests.cast import CastTestCase


class OrganizationKeys(CastTestCase):
    def test_only_organisations_with_own_rows_name_an_entry(self) -> None:
        assert organization_keys([]) == ()
        assert organization_keys([self.org_a, self.org_b]) == ()  # no own row yet
        LLMModel.all_orgs.create(name="Own", slug="own", organization=self.org_a)
        assert organization_keys([self.org_a, self.org_b]) == (self.org_a.pk,)
        assert organization_keys([self.org_b]) == ()
        # An own card is a catalog edit too: org B's members get entries of their own.
        Accelerator.all_orgs.create(
            vendor="NVIDIA", name="Own card", slug="own-card", organization=self.org_b
        )
        keys = organization_keys([self.org_b, self.org_a])
        assert keys == tuple(sorted((self.org_a.pk, self.org_b.pk)))
