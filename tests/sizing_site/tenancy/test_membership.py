from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from sizing_site.tenancy import services
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Membership, Role
from tests.cast import CastTestCase


class MembershipServiceTests(CastTestCase):
    def test_an_admin_adds_an_existing_user_by_username_or_email(self) -> None:
        tenant = tenant_for(self.alice, "org-a")
        added = services.membership_add(tenant=tenant, identifier="CHARLIE", role=Role.EDITOR)
        assert (added.user, added.organization, added.role) == (self.charlie, self.org_a, "editor")
        dave = User.objects.create_user("dave", "dave@x.example", "pw-dave-123")
        by_mail = services.membership_add(
            tenant=tenant, identifier=" Dave@X.example ", role="viewer"
        )
        assert by_mail.user == dave

    def test_adding_an_unknown_or_existing_member_is_refused(self) -> None:
        tenant = tenant_for(self.alice, "org-a")
        with pytest.raises(services.MembershipError, match="No single active user"):
            services.membership_add(tenant=tenant, identifier="nobody", role="viewer")
        with pytest.raises(services.MembershipError, match="already a member"):
            services.membership_add(tenant=tenant, identifier="bob", role="viewer")

    def test_the_last_admin_can_be_neither_demoted_nor_removed(self) -> None:
        tenant = tenant_for(self.alice, "org-a")
        code = self.alice_membership.code
        with pytest.raises(services.MembershipError, match="at least one admin"):
            services.membership_change_role(tenant=tenant, code=code, role=Role.EDITOR)
        with pytest.raises(services.MembershipError, match="at least one admin"):
            services.membership_remove(tenant=tenant, code=code)
        self.alice_membership.refresh_from_db()
        assert self.alice_membership.role == Role.ADMIN

    def test_an_admin_may_step_down_once_another_admin_exists(self) -> None:
        tenant = tenant_for(self.alice, "org-a")
        services.membership_change_role(tenant=tenant, code=self.bob_membership.code, role="admin")
        services.membership_remove(tenant=tenant, code=self.alice_membership.code)
        assert list(Membership.objects.for_organization(self.org_a)) == [self.bob_membership]

    def test_a_user_can_belong_to_several_orgs(self) -> None:
        tenant_b = tenant_for(self.charlie, "org-b")
        services.membership_add(tenant=tenant_b, identifier="bob", role="editor")
        assert {m.organization.slug for m in Membership.objects.for_user(self.bob)} == {
            "org-a",
            "org-b",
        }


class MembershipViewTests(CastTestCase):
    def members_url(self, slug: str = "org-a") -> str:
        return reverse("tenancy:members", kwargs={"org_slug": slug})

    def test_a_viewer_sees_members_but_cannot_add(self) -> None:
        self.client.force_login(self.bob)
        page = self.client.get(self.members_url())
        assert page.status_code == 200
        assert b"alice" in page.content
        response = self.client.post(self.members_url(), {"identifier": "charlie", "role": "viewer"})
        assert response.status_code == 403

    def test_an_admin_adds_a_member_through_the_form(self) -> None:
        self.client.force_login(self.alice)
        response = self.client.post(self.members_url(), {"identifier": "charlie", "role": "editor"})
        assert response.status_code == 302
        assert Membership.objects.for_organization(self.org_a).filter(user=self.charlie).exists()

    def test_a_bad_add_shows_a_form_error_and_keeps_the_input(self) -> None:
        self.client.force_login(self.alice)
        response = self.client.post(self.members_url(), {"identifier": "ghost", "role": "viewer"})
        assert response.status_code == 400
        assert "No single active user" in response.content.decode()
        assert 'value="ghost"' in response.content.decode()

    def test_an_admin_changes_a_role_and_removes_a_member(self) -> None:
        self.client.force_login(self.alice)
        role_url = reverse("tenancy:member-role", args=["org-a", self.bob_membership.code])
        self.client.post(role_url, {"role": "editor"})
        self.bob_membership.refresh_from_db()
        assert self.bob_membership.role == "editor"
        remove_url = reverse("tenancy:member-remove", args=["org-a", self.bob_membership.code])
        self.client.post(remove_url)
        assert not Membership.objects.for_organization(self.org_a).filter(user=self.bob).exists()

    def test_removing_the_last_admin_through_the_page_shows_a_message(self) -> None:
        self.client.force_login(self.alice)
        url = reverse("tenancy:member-remove", args=["org-a", self.alice_membership.code])
        response = self.client.post(url, follow=True)
        assert "at least one admin" in response.content.decode()
        assert Membership.objects.for_organization(self.org_a).filter(user=self.alice).exists()

    def test_the_org_list_redirects_when_there_is_one(self) -> None:
        self.client.force_login(self.bob)
        response = self.client.get(reverse("tenancy:orgs"))
        assert response.status_code == 302
        assert response["Location"].endswith("/o/org-a/")
