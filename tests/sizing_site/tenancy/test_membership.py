from __future__ import annotations

import pytest
from django.urls import reverse

from sizing_site.tenancy import services
from sizing_site.tenancy.access import Invitee, tenant_for
from sizing_site.tenancy.models import Membership, Role
from tests.cast import CastTestCase


class MembershipServiceTests(CastTestCase):
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
        invitation = services.invitation_create(tenant=tenant_b, identifier="bob", role="editor")
        services.invitation_accept(invitee=Invitee(invitation=invitation, user=self.bob))
        assert {m.organization.slug for m in Membership.objects.for_user(self.bob)} == {
            "org-a",
            "org-b",
        }


class MembershipViewTests(CastTestCase):
    def members_url(self, slug: str = "org-a") -> str:
        return reverse("tenancy:members", kwargs={"org_slug": slug})

    def test_a_viewer_sees_members_but_cannot_invite(self) -> None:
        self.client.force_login(self.bob)
        page = self.client.get(self.members_url())
        assert page.status_code == 200
        assert b"alice" in page.content
        response = self.client.post(self.members_url(), {"identifier": "charlie", "role": "viewer"})
        assert response.status_code == 403

    def test_only_admins_see_the_members_e_mail_addresses(self) -> None:
        self.client.force_login(self.bob)
        viewer_page = self.client.get(self.members_url()).content.decode()
        assert "alice" in viewer_page
        assert "alice@a.example" not in viewer_page
        assert "bob@a.example" not in viewer_page
        assert "Invite someone" not in viewer_page
        self.client.force_login(self.alice)
        admin_page = self.client.get(self.members_url()).content.decode()
        assert "alice@a.example" in admin_page
        assert "bob@a.example" in admin_page

    def test_an_editor_does_not_see_e_mail_addresses_either(self) -> None:
        self.bob_membership.role = Role.EDITOR
        self.bob_membership.save()
        self.client.force_login(self.bob)
        page = self.client.get(self.members_url()).content.decode()
        assert "alice@a.example" not in page

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
