"""REST API for tenancy. Every view derives from TenantApiView, which fails closed."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from sizing_site.api import schema
from sizing_site.tenancy.access import Tenant, get_owned_or_404, tenant_for
from sizing_site.tenancy.models import Membership, Role
from sizing_site.tenancy.selectors import membership_list


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
        allows = getattr(request.auth, "allows_organization", None)
        if allows is not None and not allows(kwargs["org_slug"]):
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
        responses=schema.member_list_responses(),
        tags=["members"],
    )
    def get(self, request: Request, org_slug: str) -> Response:
        data = MembershipOutput(membership_list(tenant=self.tenant), many=True).data
        return Response({"organization": self.tenant.organization.slug, "members": data})


class MemberDetailApi(TenantApiView):
    @extend_schema(
        operation_id="members_retrieve",
        summary="One membership, by its code",
        responses=schema.member_detail_responses(),
        tags=["members"],
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        membership = get_owned_or_404(self.tenant, Membership, code)
        return Response(MembershipOutput(membership).data)
