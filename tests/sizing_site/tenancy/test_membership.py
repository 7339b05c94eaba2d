from __future__ import annotations

from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError
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


class FakeDeadlock(Exception):
    """What psycopg raises when PostgreSQL picks this transaction as a deadlock's victim."""

    sqlstate = "40P01"


def deadlock(*args: object, **kwargs: object) -> None:
    try:
        raise FakeDeadlock("deadlock detected")
    except FakeDeadlock as cause:
        raise OperationalError("deadlock detected") from cause


class RoleChangeConflictTests(CastTestCase):
    """Two admins demoting each other at the same moment deadlocked PostgreSQL and got a
    500: each transaction locked the other admins' rows, then updated the row the other
    had locked. Now a change locks the organization's admins and the rows it names in key
    order, checks the acting admin still is one, and runs again on a deadlock or
    serialization failure; when every try fails, 409."""

    def test_retry_runs_the_change_again_after_a_deadlock_and_returns_its_result(self) -> None:
        calls = []

        def action() -> str:
            calls.append(1)
            if len(calls) < 3:
                deadlock()
            return "done"

        assert services.retry_on_conflict(action, pause_s=0) == "done"
        assert len(calls) == 3

    def test_retry_gives_up_with_a_conflict_after_three_tries(self) -> None:
        calls = []

        def action() -> None:
            calls.append(1)
            deadlock()

        with pytest.raises(services.MembershipConflict, match="same time"):
            services.retry_on_conflict(action, pause_s=0)
        assert len(calls) == 3

    def test_other_database_errors_are_not_retried(self) -> None:
        calls = []

        def action() -> None:
            calls.append(1)
            raise OperationalError("server closed the connection unexpectedly")

        with pytest.raises(OperationalError):
            services.retry_on_conflict(action, pause_s=0)
        assert len(calls) == 1
        serialization = OperationalError("could not serialize access")
        serialization.__cause__ = type("Cause", (Exception,), {"sqlstate": "40001"})()
        assert services.is_conflict(serialization)
        assert services.is_conflict(OperationalError("database is locked"))

    def test_an_admin_demoted_a_moment_ago_can_no_longer_change_roles(self) -> None:
        # Three admins; Alice demotes Dave while Dave's page still shows him as an admin
        # (his Tenant was resolved before). His change is refused: he no longer is one.
        dave = User.objects.create_user("dave", "d@a.example", "pw-dave-123")
        erin = User.objects.create_user("erin", "e@a.example", "pw-erin-123")
        add = Membership.all_tenants.create
        dave_m = add(user=dave, organization=self.org_a, role=Role.ADMIN)
        erin_m = add(user=erin, organization=self.org_a, role=Role.ADMIN)
        daves_tenant = tenant_for(dave, "org-a", min_role=Role.ADMIN)
        alices_tenant = tenant_for(self.alice, "org-a", min_role=Role.ADMIN)
        services.membership_change_role(tenant=alices_tenant, code=dave_m.code, role="editor")
        with pytest.raises(services.MembershipError, match="no longer an admin"):
            services.membership_change_role(tenant=daves_tenant, code=erin_m.code, role="viewer")
        erin_m.refresh_from_db()
        assert erin_m.role == Role.ADMIN

    def test_the_page_answers_409_when_every_try_deadlocks(self) -> None:
        self.client.force_login(self.alice)
        url = reverse("tenancy:member-role", args=["org-a", self.bob_membership.code])
        with (
            mock.patch.object(services, "CONFLICT_PAUSE_S", 0),
            mock.patch.object(Membership, "save", deadlock),
            self.assertLogs("sizing_site.tenancy.services", "WARNING") as logged,
        ):
            response = self.client.post(url, {"role": "editor"})
        assert response.status_code == 409
        assert "at the same time; try again" in response.content.decode()
        assert len(logged.records) == 3
        self.bob_membership.refresh_from_db()
        assert self.bob_membership.role == Role.VIEWER
        remove = reverse("tenancy:member-remove", args=["org-a", self.bob_membership.code])
        with (
            mock.patch.object(services, "CONFLICT_PAUSE_S", 0),
            mock.patch.object(Membership, "delete", deadlock),
            self.assertLogs("sizing_site.tenancy.services", "WARNING"),
        ):
            assert self.client.post(remove).status_code == 409
