"""REST API for tenancy: members, and invitations on both sides.

Org-scoped views derive from TenantApiView, which fails closed. The invitee's views have
no tenant yet (the caller is not a member): they look only among the invitations addressed
to the caller (access.invitation_for_invitee), so anyone else gets the same 404.
Invitations are made, revoked, accepted and declined by the same services as the members
and invitations pages, the input checked by each view's InputSerializer.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import Http404
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sizing_site.apikit import schema
from sizing_site.apikit.errors import Refused
from sizing_site.apikit.inputs import BodyInput, Choice
from sizing_site.apikit.parsers import JsonBodyParser
from sizing_site.tenancy import api_schema, services
from sizing_site.tenancy.access import (
    Invitee,
    Tenant,
    get_owned_or_404,
    invitation_for_invitee,
    tenant_for,
)
from sizing_site.tenancy.models import Membership, Role
from sizing_site.tenancy.selectors import (
    invitation_list,
    invitation_list_for_user,
    membership_list,
)


def token_allows_org(request: Request, org_slug: str) -> bool:
    """False when the caller's API token is limited to another organization
    (sizing_site.tokens: `ApiToken.allows_organization`); sessions are not limited."""
    allows = getattr(request.auth, "allows_organization", None)
    return allows is None or bool(allows(org_slug))


class TenantApiView(APIView):
    """Base for tenant-scoped API views: resolves the org from the URL before anything else.

    Without an `org_slug` URL argument it raises, so a route added without the tenant in
    its path cannot silently serve every tenant's rows.
    """

    min_role: str = Role.VIEWER
    tenant: Tenant

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if "org_slug" not in kwargs:
            raise LookupError(f"{type(self).__name__} is routed without an org_slug")
        # An API token limited to one organization (sizing_site.tokens): others are a 404.
        if not token_allows_org(request, kwargs["org_slug"]):
            raise Http404
        self.tenant = tenant_for(request.user, kwargs["org_slug"], min_role=self.min_role)


class MembershipOutput(serializers.Serializer[Any]):
    code = serializers.UUIDField()
    username = serializers.CharField(source="user.username")
    role = serializers.CharField()


class MemberListApi(TenantApiView):
    @extend_schema(
        operation_id="members_list",
        summary="The organization's members",
        responses=api_schema.member_list_responses(),
        tags=["members"],
    )
    def get(self, request: Request, org_slug: str) -> Response:
        data = MembershipOutput(membership_list(tenant=self.tenant), many=True).data
        return Response({"organization": self.tenant.organization.slug, "members": data})


class MemberDetailApi(TenantApiView):
    @extend_schema(
        operation_id="members_retrieve",
        summary="One membership, by its code",
        responses=api_schema.member_detail_responses(),
        tags=["members"],
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        membership = get_owned_or_404(self.tenant, Membership, code)
        return Response(MembershipOutput(membership).data)


# --- invitations -----------------------------------------------------------------------

BAD_TOKEN = schema.BAD_TOKEN
NOT_LOGGED_IN_OR_ROLE = schema.errors(
    "Not logged in, a read-only token writing, or a member whose role is too low."
)


def _closed(exc: services.MembershipError, field: str = "detail") -> Refused:
    """A change the invitation's state refuses (no longer open; already a member, or one
    pending for the same person): 409, the input being well-formed."""
    return Refused({field: [str(exc)]}, status.HTTP_409_CONFLICT)


class InvitationOutput(serializers.Serializer[Any]):
    code = serializers.UUIDField()
    identifier = serializers.CharField(help_text="The username or e-mail as the admin typed it.")
    role = serializers.CharField(help_text="viewer, editor or admin.")
    status = serializers.CharField(help_text="pending, accepted, declined, revoked, expired.")
    inviter = serializers.CharField(source="inviter.username", allow_null=True, default=None)
    created = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    live = serializers.BooleanField(
        source="is_live", help_text="Pending and not expired: the invitee can still answer."
    )


class InvitationListOutput(serializers.Serializer[Any]):
    organization = serializers.CharField(help_text="The organization's slug.")
    invitations = InvitationOutput(many=True)


class InvitationListApi(TenantApiView):
    """The organization's open invitations (expired ones too, so they can be revoked), and
    a new one: admins only, as on the members page."""

    min_role = Role.ADMIN
    parser_classes = [JsonBodyParser]

    class InputSerializer(BodyInput):
        """The members page's invitation form (sizing_site.tenancy.forms.InvitationForm)."""

        identifier = serializers.CharField(max_length=254, help_text="A username or an e-mail.")
        role = Choice(choices=Role.choices)

        class Meta:
            ref_name = "InvitationInput"

    @extend_schema(
        operation_id="invitations_list",
        summary="The organization's open invitations (admins)",
        responses={
            200: InvitationListOutput,
            401: BAD_TOKEN,
            403: NOT_LOGGED_IN_OR_ROLE,
            404: schema.NOT_A_MEMBER,
        },
        tags=["members"],
    )
    def get(self, request: Request, org_slug: str) -> Response:
        rows = InvitationOutput(invitation_list(tenant=self.tenant), many=True).data
        return Response({"organization": self.tenant.organization.slug, "invitations": rows})

    @extend_schema(
        operation_id="invitations_create",
        summary="Invite someone by username or e-mail (admins)",
        description="The answer is the same whether or not an account matches: the invitee "
        "sees the invitation when they sign in with that username or address.",
        request=InputSerializer,
        responses={
            201: InvitationOutput,
            400: schema.errors("Bad input, the field named."),
            409: schema.errors(
                "Already a member, or an invitation for this identifier is pending (under "
                "identifier).",
                OpenApiExample(
                    "Already pending",
                    value={"errors": {"identifier": ["An invitation for x is already pending."]}},
                    response_only=True,
                ),
            ),
            401: BAD_TOKEN,
            403: NOT_LOGGED_IN_OR_ROLE,
            404: schema.NOT_A_MEMBER,
        },
        tags=["members"],
    )
    def post(self, request: Request, org_slug: str) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            invitation = services.invitation_create(tenant=self.tenant, **serializer.validated_data)
        except services.MembershipError as exc:
            raise _closed(exc, "identifier") from None
        return Response(InvitationOutput(invitation).data, status=status.HTTP_201_CREATED)


class InvitationDetailApi(TenantApiView):
    """One of the organization's invitations, by its code: DELETE revokes it (admins)."""

    min_role = Role.ADMIN

    @extend_schema(
        operation_id="invitations_revoke",
        summary="Revoke a pending invitation (admins)",
        responses={
            204: None,
            409: schema.errors("The invitation is no longer pending."),
            401: BAD_TOKEN,
            403: NOT_LOGGED_IN_OR_ROLE,
            404: schema.NOT_A_MEMBER,
        },
        tags=["members"],
    )
    def delete(self, request: Request, org_slug: str, code: UUID) -> Response:
        try:
            services.invitation_revoke(tenant=self.tenant, code=code)
        except services.MembershipError as exc:
            raise _closed(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


class MyInvitationOutput(serializers.Serializer[Any]):
    code = serializers.UUIDField()
    organization = serializers.CharField(source="organization.slug")
    organization_name = serializers.CharField(source="organization.name")
    role = serializers.CharField(help_text="The role offered: viewer, editor or admin.")
    inviter = serializers.CharField(source="inviter.username", allow_null=True, default=None)
    created = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()


class MyInvitationListOutput(serializers.Serializer[Any]):
    invitations = MyInvitationOutput(many=True)


class MyInvitationListApi(APIView):
    """The caller's own open invitations (the invitations page). A token limited to one
    organization sees only that organization's."""

    @extend_schema(
        operation_id="invitations_mine_list",
        summary="Your open invitations",
        responses={200: MyInvitationListOutput, 401: BAD_TOKEN, 403: schema.NOT_LOGGED_IN},
        tags=["members"],
    )
    def get(self, request: Request) -> Response:
        rows = [
            invitation
            for invitation in invitation_list_for_user(user=request.user)
            if token_allows_org(request, invitation.organization.slug)
        ]
        return Response({"invitations": MyInvitationOutput(rows, many=True).data})


class InviteeApiView(APIView):
    """Base for the invitee's answers: the invitation is looked up among the caller's own
    live ones before the method is read, so anyone else gets the same 404 whatever the
    method (as the pages do)."""

    invitee: Invitee

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if not token_allows_org(request, kwargs["org_slug"]):
            raise Http404
        self.invitee = invitation_for_invitee(request.user, kwargs["org_slug"], kwargs["code"])


class JoinedOutput(serializers.Serializer[Any]):
    organization = serializers.CharField(source="organization.slug")
    code = serializers.UUIDField(help_text="The membership's code.")
    role = serializers.CharField()


NOT_YOURS = schema.errors(
    "No open invitation with this code addressed to you in this organization."
)
NO_LONGER_OPEN = schema.errors("The invitation was answered, revoked or expired meanwhile (409).")


class InvitationAcceptApi(InviteeApiView):
    @extend_schema(
        operation_id="invitations_accept",
        summary="Accept an invitation: join the organization",
        description="Joins with the role offered; an existing membership keeps its role.",
        request=None,
        responses={
            200: JoinedOutput,
            409: NO_LONGER_OPEN,
            401: BAD_TOKEN,
            403: schema.NOT_LOGGED_IN,
            404: NOT_YOURS,
        },
        tags=["members"],
    )
    def post(self, request: Request, org_slug: str, code: UUID) -> Response:
        try:
            membership = services.invitation_accept(invitee=self.invitee)
        except services.MembershipError as exc:
            raise _closed(exc) from None
        return Response(JoinedOutput(membership).data)


class InvitationDeclineApi(InviteeApiView):
    @extend_schema(
        operation_id="invitations_decline",
        summary="Decline an invitation",
        request=None,
        responses={
            204: None,
            409: NO_LONGER_OPEN,
            401: BAD_TOKEN,
            403: schema.NOT_LOGGED_IN,
            404: NOT_YOURS,
        },
        tags=["members"],
    )
    def post(self, request: Request, org_slug: str, code: UUID) -> Response:
        try:
            services.invitation_decline(invitee=self.invitee)
        except services.MembershipError as exc:
            raise _closed(exc) from None
        return Response(status=status.HTTP_204_NO_CONTENT)
