"""The invitations API: admins invite, list and revoke through the members
page's form and services; the invitee lists, accepts and declines their own. Viewers and
editors are refused (403), outsiders and other users see nothing (404), and accepting
creates the membership with the role offered."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.contrib.auth.models import User
from django.test import Client
from django.utils import translation

from sizing_site.tenancy import services
from sizing_site.tenancy.access import tenant_for
from sizing_site.tenancy.models import Invitation, InvitationStatus, Membership, Role
from sizing_site.tenancy.selectors import invitation_list, invitation_list_for_user
from sizing_site.tokens.services import token_create
from tests.sizing_site.tenancy.test_invitations import InvitationTestCase

LIST_A = "/api/v1/o/org-a/members/invitations/"
MINE = "/api/v1/invitations/"


def detail(invitation: Invitation, org: str = "org-a") -> str:
    return f"/api/v1/o/{org}/members/invitations/{invitation.code}/"


def answer(invitation: Invitation, action: str, org: str = "org-a") -> str:
    return f"/api/v1/o/{org}/invitations/{invitation.code}/{action}/"


class InvitationApiTestCase(InvitationTestCase):
    editor: User

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.editor = User.objects.create_user("ed", "ed@a.example", "pw-ed-123")
        Membership.all_tenants.create(user=cls.editor, organization=cls.org_a, role=Role.EDITOR)

    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)

    def as_user(self, user: User) -> Client:
        self.client.force_login(user)
        return self.client

    def create(self, client: Client, body: Any) -> Any:
        return client.post(LIST_A, json.dumps(body), content_type="application/json")


class AdminSideTests(InvitationApiTestCase):
    def test_an_admin_invites_and_lists_as_the_members_page_does(self) -> None:
        alice = self.as_user(self.alice)
        response = self.create(alice, {"identifier": " dave ", "role": "editor"})
        assert response.status_code == 201, response.content
        created = response.json()
        invitation = Invitation.all_tenants.get(code=created["code"])
        assert (invitation.identifier, invitation.role, invitation.organization) == (
            "dave",
            Role.EDITOR,
            self.org_a,
        )
        assert created["status"] == "pending" and created["live"] is True
        assert created["inviter"] == "alice"
        # An identifier that matches no account gets the same answer.
        response = self.create(alice, {"identifier": "nobody@x.example", "role": "viewer"})
        assert response.status_code == 201
        body = alice.get(LIST_A).json()
        expected = invitation_list(tenant=tenant_for(self.alice, "org-a"))
        assert body["organization"] == "org-a"
        assert [(i["code"], i["identifier"], i["role"]) for i in body["invitations"]] == [
            (str(i.code), i.identifier, i.role) for i in expected
        ]
        assert len(body["invitations"]) == 2

    def test_bad_input_is_400_naming_the_field(self) -> None:
        alice = self.as_user(self.alice)
        cases = [
            ({"identifier": "dave", "role": "owner"}, "role"),
            ({"role": "viewer"}, "identifier"),
        ]
        for body, field in cases:
            response = self.create(alice, body)
            assert response.status_code == 400, body
            assert list(response.json()["errors"]) == [field], body
        # Already a member: well-formed, but it conflicts with the membership.
        member = self.create(alice, {"identifier": "bob", "role": "viewer"})
        assert member.status_code == 409
        assert list(member.json()["errors"]) == ["identifier"]
        assert self.create(alice, {"identifier": "dave", "role": "viewer"}).status_code == 201
        again = self.create(alice, {"identifier": "DAVE", "role": "admin"})
        assert again.status_code == 409  # a conflict with the pending one, not bad input
        assert again.json() == {
            "errors": {"identifier": ["An invitation for DAVE is already pending."]}
        }
        response = alice.post(LIST_A, "[1]", content_type="application/json")
        assert response.status_code == 400 and "request" in response.json()["errors"]

    def test_viewers_and_editors_get_403_and_outsiders_404(self) -> None:
        invitation = self.invite("dave")
        body = {"identifier": "dave@x.example", "role": "viewer"}
        for user in (self.bob, self.editor):
            client = self.as_user(user)
            assert client.get(LIST_A).status_code == 403
            assert self.create(client, body).status_code == 403
            assert client.delete(detail(invitation)).status_code == 403
        charlie = self.as_user(self.charlie)
        assert charlie.get(LIST_A).status_code == 404
        assert self.create(charlie, body).status_code == 404
        assert charlie.delete(detail(invitation)).status_code == 404
        assert Client().get(LIST_A).status_code == 403
        assert Invitation.all_tenants.get(pk=invitation.pk).status == InvitationStatus.PENDING
        assert Invitation.all_tenants.count() == 1

    def test_an_admin_revokes_a_pending_invitation_once(self) -> None:
        invitation = self.invite("dave")
        alice = self.as_user(self.alice)
        assert alice.get(detail(invitation)).status_code == 405
        assert alice.delete(detail(invitation)).status_code == 204
        invitation.refresh_from_db()
        assert (invitation.status, invitation.closed_by) == (InvitationStatus.REVOKED, self.alice)
        assert alice.get(LIST_A).json()["invitations"] == []
        again = alice.delete(detail(invitation))
        assert again.status_code == 409
        assert again.json() == {"errors": {"detail": ["Only a pending invitation can be revoked."]}}
        # A code that is not org A's: 404, whether unknown or another org's.
        assert alice.delete(f"{LIST_A}{uuid.uuid4()}/").status_code == 404
        tenant_b = tenant_for(self.charlie, "org-b")
        theirs = services.invitation_create(tenant=tenant_b, identifier="dave", role="viewer")
        assert alice.delete(detail(theirs)).status_code == 404
        assert alice.delete(detail(theirs, org="org-b")).status_code == 404
        assert Invitation.all_tenants.get(pk=theirs.pk).status == InvitationStatus.PENDING


class InviteeSideTests(InvitationApiTestCase):
    def test_the_invitee_lists_and_accepts_and_becomes_a_member(self) -> None:
        invitation = self.invite("Dave@x.example", role=Role.EDITOR)
        dave = self.as_user(self.dave)
        mine = dave.get(MINE).json()["invitations"]
        assert [i["code"] for i in mine] == [
            str(i.code) for i in invitation_list_for_user(user=self.dave)
        ]
        assert mine[0]["organization"] == "org-a" and mine[0]["role"] == "editor"
        assert mine[0]["organization_name"] == "Org A" and mine[0]["inviter"] == "alice"
        assert dave.get(answer(invitation, "accept")).status_code == 405
        response = dave.post(answer(invitation, "accept"))
        assert response.status_code == 200, response.content
        membership = Membership.objects.for_organization(self.org_a).get(user=self.dave)
        assert response.json() == {
            "organization": "org-a",
            "code": str(membership.code),
            "role": "editor",
        }
        assert self.members_of_a() == {"alice", "bob", "ed", "dave"}
        invitation.refresh_from_db()
        assert invitation.status == InvitationStatus.ACCEPTED
        assert dave.get(MINE).json()["invitations"] == []
        # Answered: no longer one of Dave's live invitations.
        assert dave.post(answer(invitation, "accept")).status_code == 404
        assert dave.post(answer(invitation, "decline")).status_code == 404

    def test_the_invitee_declines(self) -> None:
        invitation = self.invite("dave")
        dave = self.as_user(self.dave)
        assert dave.post(answer(invitation, "decline")).status_code == 204
        invitation.refresh_from_db()
        assert (invitation.status, invitation.closed_by) == (InvitationStatus.DECLINED, self.dave)
        assert self.members_of_a() == {"alice", "bob", "ed"}

    def test_anyone_else_gets_404_whatever_the_method(self) -> None:
        invitation = self.invite("dave")
        for user in (self.alice, self.bob, self.charlie):
            client = self.as_user(user)
            assert client.get(MINE).json()["invitations"] == []
            for action in ("accept", "decline"):
                assert client.post(answer(invitation, action)).status_code == 404
                assert client.get(answer(invitation, action)).status_code == 404
        # The right code under the wrong org is not found either.
        dave = self.as_user(self.dave)
        assert dave.post(answer(invitation, "accept", org="org-b")).status_code == 404
        assert Client().post(answer(invitation, "accept")).status_code == 403
        assert Invitation.all_tenants.get(pk=invitation.pk).status == InvitationStatus.PENDING

    def test_tokens_keep_their_limits(self) -> None:
        invitation = self.invite("dave")
        other_org = token_create(user=self.dave, name="b only", organization=self.org_b).plain
        limited = Client(headers={"Authorization": f"Bearer {other_org}"})
        assert limited.get(MINE).json()["invitations"] == []
        assert limited.post(answer(invitation, "accept")).status_code == 404
        read_only = token_create(user=self.dave, name="ro", read_only=True).plain
        reader = Client(headers={"Authorization": f"Bearer {read_only}"})
        assert len(reader.get(MINE).json()["invitations"]) == 1
        assert reader.post(answer(invitation, "accept")).status_code == 403
        full = token_create(user=self.dave, name="all").plain
        script = Client(headers={"Authorization": f"Bearer {full}"})
        assert script.post(answer(invitation, "accept")).status_code == 200
        assert "dave" in self.members_of_a()
