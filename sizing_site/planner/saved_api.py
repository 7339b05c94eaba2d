"""Saved capacity plans in the REST API, under
/api/v1/o/<org_slug>/plans/saved/: what the saved plans' pages do (planner.saved).

- A plan is saved from the planner API's own body (POST /api/v1/o/<org>/plans/) plus a
  `name` (and `notes`): the server plans it (services.saved_plan_create), the client sends
  no figures; bad input is the planner API's 400 naming the field, an unknown model 404.
- Reads need a viewer; saving, renaming, recomputing and sharing an editor; deleting a
  plan an admin (else 403). A non-member gets 404 whatever the method.
- Share links follow the org's sharing policy (the saved configurations' one); editors
  revoke their own links, admins any.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.urls import reverse
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.response import Response

from sizing_site.apikit import schema
from sizing_site.apikit.errors import Refused
from sizing_site.apikit.inputs import BodyInput, OptionalText
from sizing_site.apikit.pagination import NumberedPages
from sizing_site.apikit.parsers import JsonBodyParser
from sizing_site.planner import services
from sizing_site.planner.api import PlanAnswer, PlanInput, plan_values
from sizing_site.planner.models import NAME_MAX, NOTES_MAX, PlanShareLink, SavedPlan
from sizing_site.sharing.api import new_link_expiry, revoked
from sizing_site.sharing.forms import MAX_SHARE_DAYS
from sizing_site.sharing.views import share_address
from sizing_site.tenancy.access import get_owned_or_404
from sizing_site.tenancy.api import TenantApiView
from sizing_site.tenancy.models import Role

TAGS = ["saved plans"]
ORG = "o/<slug:org_slug>/plans/saved/"
ONE = ORG + "<uuid:code>/"


# --- schema --------------------------------------------------------------------------


class SavedPlanInput(PlanInput):
    """The planner API's body (POST /api/v1/o/<org_slug>/plans/) and a name: the server
    plans it now and freezes the answer."""

    name = serializers.CharField(max_length=NAME_MAX)
    notes = OptionalText(max_length=NOTES_MAX)


class SavedPlanUpdate(BodyInput):
    """Either or both; a field left out keeps its value."""

    name = serializers.CharField(required=False, max_length=NAME_MAX)
    notes = OptionalText(max_length=NOTES_MAX)


class SavedPlanShareInput(serializers.Serializer[Any]):
    """At most one of the two; neither: the link never expires."""

    expires_at = serializers.DateTimeField(required=False, help_text="A time in the future.")
    expires_in_days = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_SHARE_DAYS
    )


class SavedPlanTop(serializers.Serializer[Any]):
    """The cheapest plan in brief."""

    label = serializers.CharField()  # type: ignore[assignment]
    engine = serializers.CharField()
    quant = serializers.CharField()
    tensor_parallel = serializers.IntegerField()
    cards = serializers.IntegerField()
    monthly_usd = serializers.FloatField(allow_null=True)


class SavedPlanCost(serializers.Serializer[Any]):
    """The cheapest plan's monthly cost and its basis (planner.snapshots.PlanCost)."""

    monthly_usd = serializers.FloatField(help_text="The lower of renting and owning.")
    basis = serializers.ChoiceField(choices=["rented", "owned"])
    label = serializers.CharField()  # type: ignore[assignment]
    cards = serializers.IntegerField()
    provider = serializers.CharField(help_text="Rented: the cloud provider.")
    instance = serializers.CharField(help_text="Rented: the instance or SKU.")
    region = serializers.CharField()
    usd_per_card_hour = serializers.FloatField(allow_null=True)
    negotiated = serializers.BooleanField(help_text="The organization's own price.")
    internal_rate = serializers.BooleanField(help_text="One of its machines, internal rate.")
    purchase_usd = serializers.FloatField(
        allow_null=True, help_text="Owned: the purchase; null for machines already owned."
    )
    usd_per_card = serializers.FloatField(allow_null=True)
    power_w_per_card = serializers.FloatField(allow_null=True)
    months = serializers.IntegerField(allow_null=True, help_text="Owned: paid off over.")
    utilisation = serializers.FloatField(allow_null=True, help_text="Owned: busy share, 0-1.")
    checked_at = serializers.DateTimeField(allow_null=True, help_text="Prices checked.")


class SavedPlanSnapshot(serializers.Serializer[Any]):
    version = serializers.IntegerField(
        help_text="The snapshot's format version (3; older snapshots are answered upgraded)."
    )
    cost = SavedPlanCost(
        allow_null=True,
        help_text="The cheapest plan's cost basis; null: no plan, or not recorded (saved "
        "before bases were kept).",
    )
    answer = PlanAnswer(help_text="The planner's answer as it was when planned.")
    model_name = serializers.CharField()
    computed_at = serializers.DateTimeField(help_text="When it was planned.")
    prices_checked_at = serializers.DateTimeField(
        allow_null=True, help_text="The latest check of the cloud prices the org sees then."
    )


class SavedPlanPrevious(serializers.Serializer[Any]):
    cheapest = SavedPlanTop(allow_null=True, help_text="Null: no plan met it then.")
    computed_at = serializers.DateTimeField(allow_null=True)


class SavedPlanSummary(serializers.Serializer[Any]):
    code = serializers.UUIDField()
    name = serializers.CharField()
    notes = serializers.CharField()
    model = serializers.CharField(help_text="The model's slug.")
    model_name = serializers.CharField()
    cheapest = SavedPlanTop(allow_null=True, help_text="Null: no plan meets it.")
    cost = SavedPlanCost(allow_null=True, help_text="The cheapest plan's cost basis.")
    saved_by = serializers.CharField(allow_null=True)
    saved_at = serializers.DateTimeField()
    recomputed_at = serializers.DateTimeField(allow_null=True)


class SavedPlanDetail(SavedPlanSummary):
    inputs = serializers.DictField(
        child=serializers.CharField(),
        help_text="The planner's fields as the page's query carries them.",
    )
    snapshot = SavedPlanSnapshot()
    previous = SavedPlanPrevious(
        allow_null=True, help_text="The top plan before the last recompute; null before any."
    )
    report = serializers.URLField(help_text="The report page.")


class SavedPlanPage(serializers.Serializer[Any]):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = SavedPlanSummary(many=True)


class SavedPlanLink(serializers.Serializer[Any]):
    code = serializers.UUIDField()
    plan = serializers.UUIDField()
    token = serializers.CharField(
        help_text="The link's secret, in this answer only: the database keeps its SHA-256, "
        "nobody can read it again."
    )
    url = serializers.URLField(help_text="The public, read-only report, in this answer only.")
    created_by = serializers.CharField(allow_null=True)
    created = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


FORBIDDEN_READ = schema.errors("Not logged in (no session or token).")
FORBIDDEN_WRITE = schema.errors(
    "Not logged in, a viewer (writes need an editor) or a read-only token."
)


def _responses(
    ok: int, body: Any, *, write: bool = False, bad: str | None = None, forbidden: Any = None
) -> dict[int, Any]:
    responses: dict[int, Any] = {
        ok: body if ok != status.HTTP_204_NO_CONTENT else OpenApiResponse(description=body),
        401: schema.BAD_TOKEN,
        403: forbidden or (FORBIDDEN_WRITE if write else FORBIDDEN_READ),
        404: schema.NOT_A_MEMBER,
    }
    if bad:
        responses[400] = schema.errors(bad)
    return responses


# --- output --------------------------------------------------------------------------


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _summary(plan: SavedPlan) -> dict[str, Any]:
    snapshot = plan.frozen
    return {
        "code": str(plan.code),
        "name": plan.name,
        "notes": plan.notes,
        "model": snapshot.answer["model"],
        "model_name": snapshot.model_name,
        "cheapest": snapshot.top_plan(),
        "cost": None if snapshot.cost is None else snapshot.to_json()["cost"],
        "saved_by": plan.created_by.get_username() if plan.created_by else None,
        "saved_at": _iso(plan.created),
        "recomputed_at": _iso(plan.recomputed_at),
    }


def _detail(request: Request, plan: SavedPlan, org_slug: str) -> dict[str, Any]:
    report = reverse("planner:saved-report", args=[org_slug, plan.code])
    return {
        **_summary(plan),
        "inputs": plan.inputs,
        "snapshot": plan.frozen.to_json(),
        "previous": plan.previous,
        "report": request.build_absolute_uri(report),
    }


def _link(request: Request, link: PlanShareLink) -> dict[str, Any]:
    """A link just created (only a new link carries its token: the database keeps its
    SHA-256, so the API lists no plan link)."""
    return {
        "code": str(link.code),
        "plan": str(link.plan.code),
        "token": link.token,
        "url": share_address(request, link),
        "created_by": link.created_by.get_username() if link.created_by else None,
        "created": _iso(link.created),
        "expires_at": _iso(link.expires_at),
        "revoked_at": _iso(link.revoked_at),
    }


def _refused(exc: services.PlanRefused) -> Refused:
    if exc.unknown_model:
        return Refused({"model": [_("No model with this slug.")]}, status.HTTP_404_NOT_FOUND)
    return Refused(exc.errors)


# --- views ---------------------------------------------------------------------------


class SavedPlanApiView(TenantApiView):
    """Reads for viewers; a write (any unsafe method) needs an editor, a DELETE
    `delete_role`: 403 otherwise. The tenant is resolved first (non-members: 404)."""

    parser_classes = [JsonBodyParser]
    delete_role: str = Role.EDITOR

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        role = self.delete_role if request.method == "DELETE" else Role.EDITOR
        if request.method not in SAFE_METHODS and not self.tenant.can(role):
            raise exceptions.PermissionDenied

    def plan(self, code: UUID) -> SavedPlan:
        return get_owned_or_404(self.tenant, SavedPlan, code)


class SavedPlanPages(NumberedPages):
    page_size = 50
    max_page_size = 200


class SavedPlanListApi(SavedPlanApiView):
    @extend_schema(
        operation_id="saved_plans_list",
        summary="The organization's saved capacity plans, newest first, a page at a time",
        parameters=[
            OpenApiParameter("page", int),
            OpenApiParameter("page_size", int, description="At most 200."),
        ],
        responses=_responses(200, SavedPlanPage, bad="A bad page."),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str) -> Response:
        rows = services.saved_plan_list(tenant=self.tenant)
        pages = SavedPlanPages()
        page = pages.paginate_queryset(rows, request, view=self) or []
        return pages.get_paginated_response([_summary(plan) for plan in page])

    @extend_schema(
        operation_id="saved_plans_create",
        summary="Plan a load now and save the answer",
        description="The body of POST /api/v1/o/{org_slug}/plans/ and a name. The server "
        "plans it with today's catalog and prices and freezes the answer: the saved plan's "
        "figures stay as they are until it is recomputed.",
        request=SavedPlanInput,
        examples=[
            OpenApiExample(
                "The issue's worked example",
                value={
                    "name": "Support bot",
                    "model": "qwen3-32b",
                    "users": 200,
                    "n_plus_one": True,
                },
                request_only=True,
            )
        ],
        responses=_responses(
            201,
            SavedPlanDetail,
            write=True,
            bad="Bad input, the field named as the planner API names it (an unknown field "
            "too; a service level no candidate meets even without load).",
        )
        | {
            404: schema.errors(
                "Not a member of this organization, or no model with this slug (under model)."
            )
        },
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str) -> Response:
        data = plan_values(request.data, SavedPlanInput)
        name, notes = data.pop("name"), data.pop("notes")
        try:
            plan = services.saved_plan_create(
                tenant=self.tenant, user=request.user, name=name, notes=notes, data=data
            )
        except services.PlanRefused as exc:
            raise _refused(exc) from None
        return Response(_detail(request, plan, org_slug), status=status.HTTP_201_CREATED)


class SavedPlanDetailApi(SavedPlanApiView):
    delete_role = Role.ADMIN

    @extend_schema(
        operation_id="saved_plans_retrieve",
        summary="One saved plan: its inputs and frozen answer",
        responses=_responses(200, SavedPlanDetail),
        tags=TAGS,
    )
    def get(self, request: Request, org_slug: str, code: UUID) -> Response:
        return Response(_detail(request, self.plan(code), org_slug))

    @extend_schema(
        operation_id="saved_plans_partial_update",
        summary="Rename a saved plan or change its notes",
        request=SavedPlanUpdate,
        responses=_responses(200, SavedPlanDetail, write=True, bad="A bad name or notes."),
        tags=TAGS,
    )
    def patch(self, request: Request, org_slug: str, code: UUID) -> Response:
        plan = self.plan(code)
        update = SavedPlanUpdate(data=request.data, partial=True)
        update.is_valid(raise_exception=True)
        changes = update.validated_data
        services.saved_plan_update(
            tenant=self.tenant,
            user=request.user,
            plan=plan,
            name=changes.get("name", plan.name),
            notes=changes.get("notes", plan.notes),
        )
        return Response(_detail(request, plan, org_slug))

    @extend_schema(
        operation_id="saved_plans_destroy",
        summary="Delete a saved plan and its share links (admins)",
        request=None,
        responses=_responses(
            204,
            "Deleted.",
            forbidden=schema.errors("Not logged in, or not an admin of this organization."),
        ),
        tags=TAGS,
    )
    def delete(self, request: Request, org_slug: str, code: UUID) -> Response:
        services.saved_plan_delete(tenant=self.tenant, user=request.user, plan=self.plan(code))
        return Response(status=status.HTTP_204_NO_CONTENT)


class SavedPlanRecomputeApi(SavedPlanApiView):
    @extend_schema(
        operation_id="saved_plans_recompute",
        summary="Plan a saved plan's inputs again with today's catalog and prices",
        description="The new answer replaces the snapshot; the top plan before it is under "
        "previous.",
        request=None,
        responses=_responses(
            200,
            SavedPlanDetail,
            write=True,
            bad="Today's catalog cannot plan the saved inputs (the field named); the "
            "snapshot is unchanged.",
        ),
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str, code: UUID) -> Response:
        plan = self.plan(code)
        try:
            services.saved_plan_recompute(tenant=self.tenant, user=request.user, plan=plan)
        except services.PlanRefused as exc:
            raise Refused(exc.errors) from None
        return Response(_detail(request, plan, org_slug))


class SavedPlanShareApi(SavedPlanApiView):
    @extend_schema(
        operation_id="saved_plans_share",
        summary="Create a public share link to a saved plan",
        request=SavedPlanShareInput,
        responses=_responses(
            201,
            SavedPlanLink,
            write=True,
            bad="A bad expiry (the field named), or public links are turned off for this "
            'organization ("detail").',
        ),
        tags=TAGS,
    )
    def post(self, request: Request, org_slug: str, code: UUID) -> Response:
        plan = self.plan(code)
        link = services.plan_share_link_create(
            tenant=self.tenant,
            user=request.user,
            plan=plan,
            expires_at=new_link_expiry(request, self.tenant),
        )
        return Response(_link(request, link), status=status.HTTP_201_CREATED)


class SavedPlanShareLinkApi(SavedPlanApiView):
    @extend_schema(
        operation_id="saved_plans_share_revoke",
        summary="Revoke a saved plan's share link (editors their own, admins any)",
        request=None,
        responses=_responses(
            204,
            "Revoked (also when it already was).",
            forbidden=schema.errors(
                "Not logged in, a viewer, a read-only token, or an editor revoking "
                "someone else's link."
            ),
        ),
        tags=TAGS,
    )
    def delete(self, request: Request, org_slug: str, code: UUID) -> Response:
        link = get_owned_or_404(self.tenant, PlanShareLink, code)
        return revoked(
            lambda: services.plan_share_link_revoke(
                tenant=self.tenant, user=request.user, link=link
            )
        )
