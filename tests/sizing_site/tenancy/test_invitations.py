"""Members join by invitation only: the invitee says yes from their own account, and the
admin never learns whether an account exists for what they typed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from catalog.scoping import TenantRequired
from sizing_site.tenancy import services
from sizing_site.tenancy.access import Invitee, tenant_for
from sizing_site.tenancy.models import (
    Invitation,
    InvitationStatus,
    Membership,
    Role,
)
from sizing_site.tenancy.selectors import invitation_list_for_user
from tests.cast import CastTestCase


class InvitationTestCase(CastTestCase):
    dave: User

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        # Dave has an account but belongs to no organization.
        cls.dave = User.objects.create_user("dave", "Dave@X.example", "pw-dave-123")

    def invite(self, identifier: str, role: str = Role.EDITOR) -> Invitation:
        tenant = tenant_for(self.alice, "org-a", min_role=Role.ADMIN)
        return services.invitation_create(tenant=tenant, identifier=identifier, role=role)

    def accept(self, invitation: Invitation, user: User) -> Membership:
        return services.invitation_accept(invitee=Invitee(invitation=invitation, user=user))

    def url(self, name: str, invitation: Invitation) -> str:
        return reverse(f"tenancy:invitation-{name}", args=["org-a", invitation.code])

    def members_of_a(self) -> set[str]:
        rows = Membership.objects.for_organization(self.org_a).select_related("user")
        return {m.user.username for m in rows}


class InvitationServiceTests(InvitationTestCase):
    def test_an_invitation_adds_nobody_until_it_is_accepted(self) -> None:
        invitation = self.invite("dave")
        assert self.members_of_a() == {"alice", "bob"}
        assert invitation_list_for_user(user=self.dave) == [invitation]
        membership = self.accept(invitation, self.dave)
        assert (membership.user, membership.organization, membership.role) == (
            self.dave,
            self.org_a,
            Role.EDITOR,
        )
        invitation.refresh_from_db()
        assert (invitation.status, invitation.closed_by) == (InvitationStatus.ACCEPTED, self.dave)
        assert invitation_list_for_user(user=self.dave) == []

    def test_an_e_mail_invitation_reaches_the_account_with_that_address(self) -> None:
        invitation = self.invite(" dave@x.EXAMPLE ")
        assert invitation.identifier == "dave@x.EXAMPLE"
        assert invitation_list_for_user(user=self.dave) == [invitation]
        assert invitation_list_for_user(user=self.charlie) == []
        assert invitation_list_for_user(user=self.bob) == []

    def test_declining_leaves_the_membership_list_alone(self) -> None:
        invitation = self.invite("dave")
        services.invitation_decline(invitee=Invitee(invitation=invitation, user=self.dave))
        invitation.refresh_from_db()
        assert invitation.status == InvitationStatus.DECLINED
        assert self.members_of_a() == {"alice", "bob"}
        with pytest.raises(services.MembershipError, match="no longer open"):
            self.accept(invitation, self.dave)

    def test_a_revoked_invitation_can_no_longer_be_accepted(self) -> None:
        invitation = self.invite("dave")
        tenant = tenant_for(self.alice, "org-a")
        services.invitation_revoke(tenant=tenant, code=invitation.code)
        invitation.refresh_from_db()
        assert (invitation.status, invitation.closed_by) == (InvitationStatus.REVOKED, self.alice)
        assert invitation_list_for_user(user=self.dave) == []
        with pytest.raises(services.MembershipError, match="no longer open"):
            self.accept(invitation, self.dave)
        with pytest.raises(services.MembershipError, match="Only a pending"):
            services.invitation_revoke(tenant=tenant, code=invitation.code)

    def test_an_expired_invitation_is_hidden_and_may_be_renewed(self) -> None:
        old = self.invite("dave")
        # 14 days of life: created now, it expires 14 days on; push it one second past that.
        lifetime = old.expires_at - old.created
        assert abs(lifetime - timedelta(days=14)) < timedelta(seconds=5)
        old.expires_at = timezone.now() - timedelta(seconds=1)
        old.save()
        assert invitation_list_for_user(user=self.dave) == []
        with pytest.raises(services.MembershipError, match="no longer open"):
            self.accept(old, self.dave)
        fresh = self.invite("DAVE", role=Role.VIEWER)
        old.refresh_from_db()
        assert old.status == InvitationStatus.EXPIRED
        assert invitation_list_for_user(user=self.dave) == [fresh]

    def test_a_second_open_invitation_for_the_same_person_is_refused(self) -> None:
        self.invite("dave")
        with pytest.raises(services.MembershipError, match="already pending"):
            self.invite("Dave")

    def test_inviting_a_current_member_is_refused(self) -> None:
        with pytest.raises(services.MembershipError, match="already a member"):
            self.invite("bob")
        with pytest.raises(services.MembershipError, match="already a member"):
            self.invite("BOB@a.example")

    def test_an_admin_invitation_makes_an_admin(self) -> None:
        invitation = self.invite("dave", role=Role.ADMIN)
        self.accept(invitation, self.dave)
        assert tenant_for(self.dave, "org-a", min_role=Role.ADMIN).can(Role.ADMIN)

    def test_the_invitation_manager_fails_closed(self) -> None:
        with pytest.raises(TenantRequired):
            Invitation.objects.all()
        with pytest.raises(TenantRequired):
            Invitation.objects.addressed_to(User(username="unsaved"))


class InvitationViewTests(InvitationTestCase):
    def members_url(self) -> str:
        return reverse("tenancy:members", args=["org-a"])

    def post_invite(self, identifier: str) -> tuple[int, str, list[str]]:
        self.client.force_login(self.alice)
        response = self.client.post(
            self.members_url(), {"identifier": identifier, "role": "viewer"}
        )
        followed = self.client.get(response["Location"])
        notes = [str(m) for m in followed.context["messages"]]
        return response.status_code, response["Location"], notes

    def test_the_admin_gets_the_same_answer_whether_or_not_an_account_exists(self) -> None:
        existing = self.post_invite("dave")
        missing = self.post_invite("nobody")
        assert existing == missing
        assert existing[0] == 302
        assert existing[2] == [
            "Invitation recorded; the person sees it when they sign in with that address "
            "or username."
        ]
        identifiers = Invitation.objects.for_organization(self.org_a).values_list(
            "identifier", flat=True
        )
        assert sorted(identifiers) == ["dave", "nobody"]

    def test_every_e_mail_invitation_shows_a_sign_up_link_account_or_not(self) -> None:
        # An address with an account (Dave's) and one without get the same page: a
        # sign-up link each, so the link tells the admin nothing about accounts.
        self.client.force_login(self.alice)
        pages = []
        for address in ("dave@x.example", "nobody@nowhere.example"):
            response = self.client.post(
                self.members_url(), {"identifier": address, "role": "viewer"}
            )
            assert response.status_code == 200
            url = response.context["signup_url"]
            assert url.startswith("http://testserver/join/"), url
            pages.append(response.content.decode().replace(url, "<link>"))
        assert pages[0].count("<link>") == pages[1].count("<link>") == 1
        assert "Invitation recorded;" in pages[0] and "Invitation recorded;" in pages[1]

    def test_the_invitee_accepts_from_their_own_account(self) -> None:
        invitation = self.invite("dave@x.example")
        self.client.force_login(self.dave)
        inbox = self.client.get(reverse("tenancy:invitations")).content.decode()
        assert "alice invites you to Org A as Editor." in inbox
        assert self.url("accept", invitation) in inbox
        response = self.client.post(self.url("accept", invitation))
        assert response.status_code == 302
        assert response["Location"] == reverse("tenancy:dashboard", args=["org-a"])
        assert self.members_of_a() == {"alice", "bob", "dave"}
        # Answered once: the link is dead now, like any code that is not yours.
        assert self.client.post(self.url("accept", invitation)).status_code == 404

    def test_the_invitee_declines(self) -> None:
        invitation = self.invite("dave")
        self.client.force_login(self.dave)
        response = self.client.post(self.url("decline", invitation))
        assert response.status_code == 302
        assert self.members_of_a() == {"alice", "bob"}
        assert self.client.get(self.url("decline", invitation)).status_code == 404

    def test_nobody_else_can_answer_an_invitation(self) -> None:
        invitation = self.invite("dave")
        for user in (self.alice, self.bob, self.charlie):
            self.client.force_login(user)
            for name in ("accept", "decline"):
                assert self.client.post(self.url(name, invitation)).status_code == 404
        anonymous = Client().post(self.url("accept", invitation))
        assert anonymous.status_code == 302
        assert "/accounts/login/" in anonymous["Location"]
        assert self.members_of_a() == {"alice", "bob"}
        self.client.force_login(self.dave)
        assert self.client.get(self.url("accept", invitation)).status_code == 405

    def test_an_admin_revokes_and_a_viewer_may_not(self) -> None:
        invitation = self.invite("dave")
        revoke = reverse("tenancy:invitation-revoke", args=["org-a", invitation.code])
        self.client.force_login(self.bob)
        assert self.client.post(revoke).status_code == 403
        self.client.force_login(self.alice)
        page = self.client.get(self.members_url()).content.decode()
        assert revoke in page
        assert "An invitation stays open for 14 days." in page
        assert self.client.post(revoke).status_code == 302
        invitation.refresh_from_db()
        assert invitation.status == InvitationStatus.REVOKED
        assert revoke not in self.client.get(self.members_url()).content.decode()

    def test_a_refused_invitation_shows_a_form_error_and_keeps_the_input(self) -> None:
        self.client.force_login(self.alice)
        response = self.client.post(self.members_url(), {"identifier": "bob", "role": "viewer"})
        assert response.status_code == 400
        assert "bob is already a member." in response.content.decode()
        assert 'value="bob"' in response.content.decode()

    def test_the_org_list_points_to_open_invitations_instead_of_redirecting(self) -> None:
        self.invite("bob@x.example")
        self.bob.email = "bob@x.example"
        self.bob.save()
        self.client.force_login(self.bob)
        response = self.client.get(reverse("tenancy:orgs"))
        assert response.status_code == 200
        assert "You have 1 open invitation." in response.content.decode()

    def test_the_members_page_stays_flat_as_invitations_grow(self) -> None:
        self.client.force_login(self.alice)
        self.invite("one@x.example")
        # Session, user, tenant, members, invitations (with their inviters), sign-ups
        # awaiting approval and the header's memberships: seven, however many
        # invitations there are.
        with self.assertNumQueries(7):
            self.client.get(self.members_url())
        for n in range(5):
            self.invite(f"more{n}@x.example")
        with self.assertNumQueries(7):
            page = self.client.get(self.members_url())
        assert page.content.decode().count("/revoke/") == 6
