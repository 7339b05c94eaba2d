from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404

from catalog.scoping import TenantRequired
from sizing_site.tenancy.access import get_owned_or_404, tenant_for
from sizing_site.tenancy.models import Membership, Organization, Role
from tests.cast import CastTestCase


class TenantAccessTests(CastTestCase):
    def test_it_finds_the_tenant_for_a_member(self) -> None:
        tenant = tenant_for(self.bob, "org-a")
        assert tenant.organization == self.org_a
        assert tenant.role == Role.VIEWER

    def test_it_hides_an_org_from_a_non_member_like_a_missing_one(self) -> None:
        with pytest.raises(Http404):
            tenant_for(self.charlie, "org-a")
        with pytest.raises(Http404):
            tenant_for(self.charlie, "no-such-org")

    def test_it_forbids_a_member_whose_role_is_too_low(self) -> None:
        with pytest.raises(PermissionDenied):
            tenant_for(self.bob, "org-a", min_role=Role.ADMIN)
        assert tenant_for(self.alice, "org-a", min_role=Role.ADMIN).can(Role.EDITOR)

    def test_it_looks_up_rows_only_inside_the_tenant(self) -> None:
        tenant = tenant_for(self.alice, "org-a")
        assert get_owned_or_404(tenant, Membership, self.bob_membership.code) == self.bob_membership
        with pytest.raises(Http404):
            get_owned_or_404(tenant, Membership, self.charlie_membership.code)
        with pytest.raises(Http404):
            get_owned_or_404(tenant, Membership, "not-a-uuid")

    def test_the_scoped_manager_fails_closed_without_a_tenant(self) -> None:
        with pytest.raises(TenantRequired):
            Membership.objects.all()
        with pytest.raises(TenantRequired):
            Membership.objects.filter(role=Role.ADMIN)
        with pytest.raises(TenantRequired):
            Membership.objects.for_organization(None)

    def test_the_refusal_names_the_scopes_to_use_and_an_unsaved_org_is_no_scope(self) -> None:
        with pytest.raises(
            TenantRequired,
            match=r"^Membership\.objects needs a scope: use "
            r"\.for_organization\(\), \.for_user\(\)$",
        ):
            Membership.objects.all()
        with pytest.raises(TenantRequired, match="no organization given"):
            Membership.objects.for_organization(Organization(name="Unsaved", slug="unsaved"))

    def test_the_scoped_manager_returns_only_the_given_tenants_rows(self) -> None:
        rows = set(Membership.objects.for_organization(self.org_a))
        assert rows == {self.alice_membership, self.bob_membership}
