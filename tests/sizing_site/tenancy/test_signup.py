"""Sign-up by link: an invitation to an e-mail address carries a link for someone without
an account; the account it makes cannot sign in until an org admin approves it."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.urls import reverse
from django.utils import timezone, translation

from catalog.scoping import TenantRequired
from sizing_site.tenancy import services
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Invitation, InvitationStatus, Membership, Role
from tests.cast import CastTestCase

PASSWORD = "Correct-Horse-42-battery"


class SignupTestCase(CastTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def invite(self, identifier: str = "erin@x.example", role: str = Role.EDITOR) -> Invitation:
        tenant = tenant_for(self.alice, "org-a", min_role=Role.ADMIN)
        return services.invitation_create(tenant=tenant, identifier=identifier, role=role)

    def join(self, token: str) -> str:
        return reverse("tenancy:signup", args=[token])

    def sign_up(self, token: str, username: str = "erin") -> tuple[int, str]:
        data = {"username": username, "password1": PASSWORD, "password2": PASSWORD}
        response = Client().post(self.join(token), data)
        return response.status_code, response.content.decode()

    def can_log_in(self, username: str) -> bool:
        """Through the login page (django-axes' backend needs the request)."""
        data = {"username": username, "password": PASSWORD}
        return Client().post(reverse("login"), data).status_code == 302

    def decide(self, who: User, invitation: Invitation, what: str, org: str = "org-a") -> int:
        self.client.force_login(who)
        url = reverse(f"tenancy:signup-{what}", args=[org, invitation.code])
        return self.client.post(url).status_code


class SignupTests(SignupTestCase):
    def test_the_database_keeps_only_the_links_hash(self) -> None:
        invitation = self.invite()
        token = invitation.signup_token
        assert len(token) == 43  # 32 random bytes, base64url without padding
        stored = Invitation.objects.for_organization(self.org_a).get(pk=invitation.pk)
        assert stored.signup_token == ""
        assert stored.signup_token_hash == hashlib.sha256(token.encode()).hexdigest()

    def test_an_invitation_to_a_username_has_no_sign_up_link(self) -> None:
        invitation = self.invite("somebody")
        assert invitation.signup_token == ""
        assert invitation.signup_token_hash == ""

    def test_the_lookup_by_token_fails_closed_without_one(self) -> None:
        with pytest.raises(TenantRequired):
            Invitation.objects.for_signup_token("")

    def test_happy_path_sign_up_then_approval(self) -> None:
        invitation = self.invite(role=Role.EDITOR)
        page = Client().get(self.join(invitation.signup_token))
        assert page.status_code == 200
        assert "You are invited to Org A as Editor." in page.content.decode()
        status, text = self.sign_up(invitation.signup_token)
        assert status == 200
        assert "An admin of Org A must approve your account" in text
        erin = User.objects.get(username="erin")
        assert (erin.is_active, erin.email) == (False, "erin@x.example")
        # Inactive: the login page refuses the right password until an admin approves.
        assert not self.can_log_in("erin")
        invitation.refresh_from_db()
        assert (invitation.status, invitation.signup_user) == (InvitationStatus.AWAITING, erin)
        # The members page lists it for the admin, with both buttons.
        self.client.force_login(self.alice)
        members = self.client.get(reverse("tenancy:members", args=["org-a"])).content.decode()
        approve = reverse("tenancy:signup-approve", args=["org-a", invitation.code])
        assert approve in members
        assert reverse("tenancy:signup-reject", args=["org-a", invitation.code]) in members
        assert self.decide(self.alice, invitation, "approve") == 302
        erin.refresh_from_db()
        assert erin.is_active
        membership = Membership.objects.for_user(erin).get()
        assert (membership.organization, membership.role) == (self.org_a, Role.EDITOR)
        assert self.can_log_in("erin")
        # Approved once: a second click changes nothing and says so.
        assert self.decide(self.alice, invitation, "approve") == 302
        assert Membership.objects.for_organization(self.org_a).count() == 3  # alice, bob, erin

    def test_an_expired_link_says_so(self) -> None:
        invitation = self.invite()
        Invitation.all_tenants.filter(pk=invitation.pk).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
        response = Client().get(self.join(invitation.signup_token))
        assert response.status_code == 410
        assert "This invitation has expired" in response.content.decode()
        assert self.sign_up(invitation.signup_token)[0] == 410
        assert not User.objects.filter(username="erin").exists()

    def test_a_used_link_says_so_and_makes_no_second_account(self) -> None:
        invitation = self.invite()
        assert self.sign_up(invitation.signup_token)[0] == 200
        status, text = self.sign_up(invitation.signup_token, username="erin2")
        assert status == 410
        assert "This sign-up link has already been used." in text
        assert not User.objects.filter(username="erin2").exists()

    def test_a_revoked_link_says_so(self) -> None:
        invitation = self.invite()
        tenant = tenant_for(self.alice, "org-a", min_role=Role.ADMIN)
        services.invitation_revoke(tenant=tenant, code=invitation.code)
        status, text = self.sign_up(invitation.signup_token)
        assert status == 410
        assert "This invitation was withdrawn by the organization." in text

    def test_an_unknown_link_is_a_404(self) -> None:
        invitation = self.invite()
        for token in ("x" * 43, invitation.signup_token[:-1], str(invitation.code)):
            response = Client().get(self.join(token))
            assert response.status_code == 404
            assert "This sign-up link is not valid." in response.content.decode()

    def test_an_address_with_an_account_is_sent_to_sign_in(self) -> None:
        User.objects.create_user("erin-old", "Erin@X.example", "pw-erin-123")
        invitation = self.invite()
        status, text = self.sign_up(invitation.signup_token)
        assert status == 400
        assert "An account with this e-mail address exists already" in text
        assert not User.objects.filter(username="erin").exists()

    def test_a_taken_username_or_weak_password_is_a_form_error(self) -> None:
        invitation = self.invite()
        status, text = self.sign_up(invitation.signup_token, username="bob")
        assert status == 400
        assert "A user with that username already exists." in text
        weak = {"username": "erin", "password1": "123", "password2": "123"}
        assert Client().post(self.join(invitation.signup_token), weak).status_code == 400
        assert not User.objects.filter(username="erin").exists()

    def test_rejecting_deletes_the_inactive_account(self) -> None:
        invitation = self.invite()
        self.sign_up(invitation.signup_token)
        assert self.decide(self.alice, invitation, "reject") == 302
        assert not User.objects.filter(username="erin").exists()
        invitation.refresh_from_db()
        assert (invitation.status, invitation.closed_by) == (InvitationStatus.REJECTED, self.alice)
        assert self.decide(self.alice, invitation, "approve") == 302  # nothing left to approve
        assert not Membership.objects.for_organization(self.org_a).filter(user__username="erin")


class SignupApprovalAccessTests(SignupTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.invitation = self.invite()
        self.sign_up(self.invitation.signup_token)

    def erin(self) -> User:
        return User.objects.get(username="erin")

    def test_a_viewer_of_the_org_may_not_approve(self) -> None:
        for what in ("approve", "reject"):
            assert self.decide(self.bob, self.invitation, what) == 403
        assert not self.erin().is_active

    def test_another_orgs_admin_gets_404_and_does_not_see_it(self) -> None:
        for org in ("org-a", "org-b"):
            for what in ("approve", "reject"):
                assert self.decide(self.charlie, self.invitation, what, org=org) == 404
        assert not self.erin().is_active
        members_b = self.client.get(reverse("tenancy:members", args=["org-b"])).content.decode()
        assert "erin" not in members_b

    def test_an_approval_url_is_post_only(self) -> None:
        self.client.force_login(self.alice)
        url = reverse("tenancy:signup-approve", args=["org-a", self.invitation.code])
        assert self.client.get(url).status_code == 405


@override_settings(AXES_FAILURE_LIMIT=3)
class SignupThrottleTests(SignupTestCase):
    def test_bad_links_from_one_address_lock_it_like_failed_logins(self) -> None:
        invitation = self.invite()
        answers = [Client().get(self.join(f"bad-{n}")).status_code for n in range(4)]
        # The third bad link reaches the limit: that answer and every later one is 429.
        assert answers == [404, 404, 429, 429]
        locked = Client().get(self.join(invitation.signup_token))
        assert locked.status_code == 429
        assert "Too many sign-up links from your address" in locked.content.decode()
        assert AccessAttempt.objects.get().failures_since_start == 3
        # Another address is not locked.
        other = Client(REMOTE_ADDR="10.0.0.9").get(self.join(invitation.signup_token))
        assert other.status_code == 200
