"""Prices under /api/v1/: the offers the caller may see, the public sources'
refresh runs, and an organisation's own feeds.

- `prices/offers/`: what the prices page lists, through the same selector
  (`pricing.selectors.offer_list`) with the page's filters (`OfferFilterForm`'s, read by
  the view's InputSerializer): public offers plus the negotiated ones of the caller's
  organisations. An API token limited to one organisation counts that organisation's
  feeds only. A malformed filter is a 400 naming it (the page ignores it).
- `prices/runs/`: refresh runs of the public sources, newest first.
- `o/<org_slug>/prices/feeds/`: the organisation feed page's sources, offers and runs
  (TenantApiView: members only, others 404); admins POST a feed (its fields' types
  checked by the view's InputSerializer) through the page's form, `services.org_feed_save`
  and the page's refresh (`feed_refresh`).

Lists are pages of 50 (`page`, `page_size` up to 200) with the total count (a malformed
page is a 400, one past the last a 404: sizing_site.apikit.pagination). The offers
carry an `ETag` of their content (so `If-None-Match` answers 304 without the body) and a
`Last-Modified` of the newest price check on the page: prices change with refresh runs,
not with the catalog, so the catalog's version cannot stand for them.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.files.uploadedfile import SimpleUploadedFile, UploadedFile
from django.utils.datastructures import MultiValueDict
from django.utils.http import http_date, quote_etag
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
)
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder
from rest_framework.views import APIView

from pricing import selectors, services
from pricing.models import CloudOffer, CloudProvider, RunStatus
from sizing_site.apikit import schema
from sizing_site.apikit.conditional import RevalidatedReads, if_none_match_etags
from sizing_site.apikit.errors import form_errors
from sizing_site.apikit.inputs import BodyInput, Choice, OptionalText, QueryInput, SlugRow
from sizing_site.apikit.pagination import NumberedPages
from sizing_site.prices.forms import FeedUploadForm
from sizing_site.prices.views import feed_refresh
from sizing_site.tenancy.api import BAD_TOKEN, TenantApiView, token_allows_org
from sizing_site.tenancy.models import Organization, Role
from sizing_site.tenancy.selectors import membership_list_for_user

PAGE_SIZE = 50
MAX_PAGE_SIZE = 200
PUBLIC = "public"


class PricePages(NumberedPages):
    page_size = PAGE_SIZE
    max_page_size = MAX_PAGE_SIZE


# --- output shapes ---------------------------------------------------------------------


class PriceProviderRef(serializers.Serializer[Any]):
    slug = serializers.CharField()
    name = serializers.CharField()


class PriceAcceleratorRef(serializers.Serializer[Any]):
    slug = serializers.CharField()
    name = serializers.CharField()


def _money(**kwargs: Any) -> serializers.DecimalField:
    return serializers.DecimalField(
        max_digits=None, decimal_places=4, coerce_to_string=False, allow_null=True, **kwargs
    )


class PriceOffer(serializers.Serializer[Any]):
    """One offer as the prices page shows it. `source` is "public" or the slug of the
    organisation whose negotiated feed it comes from (context["org_slugs"]: pk -> slug of
    the organisations the caller sees, resolved once per request)."""

    provider = PriceProviderRef()
    billing_model = serializers.CharField(
        source="provider.billing_model",
        help_text="hyperscaler (per instance), neocloud (per GPU), marketplace, contract; "
        "empty when not known.",
    )
    sku = serializers.CharField(help_text="The provider's instance type or SKU.")
    region = serializers.SerializerMethodField()
    accelerator = PriceAcceleratorRef(allow_null=True, help_text="Null: not matched to a card.")
    gpu_name = serializers.CharField(help_text="The GPU as the provider names it.")
    gpu_count = serializers.IntegerField()
    on_demand_per_hour = _money(help_text="Per instance-hour.")
    spot_per_hour = _money(help_text="Per instance-hour.")
    on_demand_per_gpu_hour = _money()
    spot_per_gpu_hour = _money()
    currency = serializers.CharField()
    billing_granularity = serializers.CharField(
        help_text="second, minute, hour, month; empty when not stated."
    )
    source = serializers.SerializerMethodField()  # type: ignore[assignment]
    checked_at = serializers.DateTimeField(help_text="When the price was last fetched.")
    stale = serializers.BooleanField(
        source="is_stale",
        help_text="A live source's price checked longer ago than the site's staleness limit; "
        "a seeded price is never stale (it is dated by checked_at).",
    )

    def get_region(self, offer: CloudOffer) -> str | None:
        return offer.region or None

    def get_source(self, offer: CloudOffer) -> str:
        """ "public", or the slug of the organisation whose negotiated feed it is."""
        if offer.organization_id is None:
            return PUBLIC
        return str(self.context["org_slugs"][offer.organization_id])


class PriceOfferPage(serializers.Serializer[Any]):
    count = serializers.IntegerField(help_text="Offers matching, on all pages.")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    stale_after_hours = serializers.IntegerField(
        help_text="Offers checked longer ago than this are stale."
    )
    results = PriceOffer(many=True)


class PriceRun(serializers.Serializer[Any]):
    provider = PriceProviderRef(source="source.provider")
    kind = serializers.CharField(source="source.kind", help_text="The source's kind.")
    status = serializers.CharField(help_text="queued, running, succeeded, failed, skipped.")
    created = serializers.DateTimeField(help_text="When it was queued.")
    started = serializers.DateTimeField(allow_null=True)
    finished = serializers.DateTimeField(allow_null=True)
    offers_seen = serializers.IntegerField()
    offers_created = serializers.IntegerField()
    offers_updated = serializers.IntegerField()
    offers_unchanged = serializers.IntegerField()
    unmatched = serializers.IntegerField(help_text="Offers without an accelerator.")
    skipped = serializers.SerializerMethodField(help_text="Rows skipped (their count).")
    error = serializers.CharField()

    def get_skipped(self, run: Any) -> int:
        return len(run.skipped)


class PriceRunPage(serializers.Serializer[Any]):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = PriceRun(many=True)


class PriceFeedSource(serializers.Serializer[Any]):
    provider = PriceProviderRef()
    url = serializers.SerializerMethodField()
    uploaded = serializers.SerializerMethodField()
    enabled = serializers.BooleanField()
    refresh_hours = serializers.IntegerField()
    last_run_status = serializers.CharField(help_text="Empty when it never ran.")
    last_run_at = serializers.DateTimeField(allow_null=True)
    last_success_at = serializers.DateTimeField(allow_null=True)

    def get_url(self, source: Any) -> str | None:
        """The feed's address, or null for an uploaded file."""
        return source.base_url or None

    def get_uploaded(self, source: Any) -> bool:
        """An uploaded file rather than an address fetched on schedule."""
        return not source.base_url


class PriceOrgFeeds(serializers.Serializer[Any]):
    organization = serializers.CharField(help_text="The organization's slug.")
    sources = PriceFeedSource(many=True)
    offers = PriceOffer(many=True)
    runs = PriceRun(many=True, help_text="The last 10 runs of its feeds.")


# --- conditional reads ------------------------------------------------------------------


class ConditionalRead(RevalidatedReads):
    """GET answers carry an ETag of their content; a matching If-None-Match is a 304.
    Private and revalidated every time, as the catalog's reads are."""

    def conditional(self, request: Request, response: Response, newest: datetime | None) -> Any:
        body = json.dumps(response.data, cls=JSONEncoder, sort_keys=True)
        basis = f"{body}|{request.accepted_media_type}"
        etag = quote_etag(hashlib.sha256(basis.encode()).hexdigest()[:32])
        if etag in if_none_match_etags(request.headers.get("If-None-Match", "")):
            response = Response(status=status.HTTP_304_NOT_MODIFIED)
        response["ETag"] = etag
        if newest is not None:
            response["Last-Modified"] = http_date(newest.timestamp())
        return response


# --- the views -------------------------------------------------------------------------

NO_PAGE = schema.errors("A page past the last.")
PAGE_PARAMETERS = [
    OpenApiParameter("page", OpenApiTypes.INT, description="Page number, from 1."),
    OpenApiParameter(
        "page_size", OpenApiTypes.INT, description=f"Rows a page (default 50, at most {200})."
    ),
]
BAD_FILTER = schema.errors(
    "A malformed filter or page, the parameter named.",
    OpenApiExample(
        "Unknown accelerator",
        value={
            "errors": {
                "accelerator": [
                    "Select a valid choice. That choice is not one of the available choices."
                ]
            }
        },
        response_only=True,
    ),
)


def visible_organizations(request: Request) -> list[Organization]:
    """The caller's organisations whose negotiated prices this request may see: all of
    them, or the one an organisation-limited API token names."""
    return [
        m.organization
        for m in membership_list_for_user(user=request.user)
        if token_allows_org(request, m.organization.slug)
    ]


@extend_schema_field({"type": "string"})
class FilterRow(SlugRow):
    """A filter's row by its slug; left out or blank, no filter (the page's "All")."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)


class OfferListApi(ConditionalRead):
    """Every offer the caller may see, as the prices page lists them."""

    class InputSerializer(QueryInput):
        """The prices page's filters (OfferFilterForm); each may be left out or blank."""

        accelerator = FilterRow(
            queryset=selectors.offer_accelerators(),
            help_text="Accelerator slug (one with public offers).",
        )
        provider = FilterRow(queryset=selectors.offer_providers(), help_text="Provider slug.")
        # Any number from 0 (a bound, not a stored price: its decimals do not matter).
        max_price_per_gpu_hour = serializers.DecimalField(
            max_digits=None,
            decimal_places=None,
            min_value=0,
            coerce_to_string=False,
            required=False,
            error_messages={"invalid": _("Enter a number.")},
            help_text="On-demand price per GPU-hour at most.",
        )

    @extend_schema(
        operation_id="prices_offers_list",
        summary="Cloud offers: public ones and your organizations' negotiated ones",
        description="The prices page's list, in its order (by accelerator, unmatched last, "
        "cheapest per GPU-hour first). Negotiated offers are those of the caller's "
        "organizations (only the one an organization-limited token names).",
        parameters=[InputSerializer, *PAGE_PARAMETERS],
        responses={
            200: PriceOfferPage,
            400: BAD_FILTER,
            401: BAD_TOKEN,
            403: schema.NOT_LOGGED_IN,
            404: NO_PAGE,
        },
        tags=["prices"],
    )
    def get(self, request: Request) -> Response:
        filters = self.InputSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        organizations = visible_organizations(request)
        offers = selectors.offer_list(organizations=organizations, **filters.validated_data)
        # The page's rows and order; the pk breaks ties so pages never overlap, and the
        # price history (the page's sparklines) is not read.
        offers = offers.prefetch_related(None).order_by(*offers.query.order_by, "pk")
        context = {"org_slugs": {o.pk: o.slug for o in organizations}}
        pages = PricePages()
        page: list[CloudOffer] = pages.paginate_queryset(offers, request, self) or []
        response = pages.get_paginated_response(PriceOffer(page, many=True, context=context).data)
        response.data["stale_after_hours"] = settings.PRICES_STALE_AFTER_HOURS
        newest = max((o.checked_at for o in page), default=None)
        return self.conditional(request, response, newest)


class RefreshRunListApi(APIView):
    """Refresh runs of the public price sources, newest first."""

    class InputSerializer(QueryInput):
        once = ("status",)

        status = Choice(
            choices=RunStatus.choices,
            required=False,
            error_messages={"invalid_choice": _("Choose one of: %(choices)s.")},
            help_text="Only runs with this status.",
        )

    @extend_schema(
        operation_id="prices_runs_list",
        summary="Refresh runs of the public price sources",
        parameters=[InputSerializer, *PAGE_PARAMETERS],
        responses={
            200: PriceRunPage,
            400: schema.errors("An unknown status or a malformed page."),
            401: BAD_TOKEN,
            403: schema.NOT_LOGGED_IN,
            404: NO_PAGE,
        },
        tags=["prices"],
    )
    def get(self, request: Request) -> Response:
        filters = self.InputSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        runs = selectors.public_refresh_runs()
        if wanted := filters.validated_data.get("status"):
            runs = runs.filter(status=wanted)
        pages = PricePages()
        page = pages.paginate_queryset(runs, request, self) or []
        return pages.get_paginated_response(PriceRun(page, many=True).data)


class PriceFeedSaved(PriceOrgFeeds):
    level = serializers.CharField(help_text="success, warning or error: how the load went.")
    message = serializers.CharField(help_text="What the page would say.")


class OrgFeedApi(TenantApiView):
    """An organisation's own feeds, their offers and last runs: the org feed page. Admins
    may POST a feed, through the page's form, service and refresh."""

    class InputSerializer(BodyInput):
        """The org feed page's upload form (FeedUploadForm): a provider and either a URL or
        the feed itself (a file, or its text as `content`)."""

        provider = SlugRow(
            queryset=CloudProvider.objects.all(),
            error_messages=dict.fromkeys(
                ("does_not_exist", "invalid"), _("No provider with this slug.")
            ),
            help_text="The provider's slug.",
        )
        # The address and the feed are the form's to check (the outbound policy, the rows).
        url = OptionalText(
            help_text="CSV or JSON on a public http(s) address, fetched on schedule."
        )
        file = serializers.FileField(required=False, help_text="CSV or JSON, up to 2 MB.")
        content = OptionalText(
            trim_whitespace=False, help_text="The feed's text, instead of a file (same checks)."
        )

        class Meta:
            ref_name = "PriceFeedUpload"

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # Members read; only admins post (one membership lookup either way, as the page).
        self.min_role = Role.ADMIN if request.method == "POST" else Role.VIEWER
        super().initial(request, *args, **kwargs)

    def feeds(self) -> dict[str, Any]:
        organization = self.tenant.organization
        context = {"org_slugs": {organization.pk: organization.slug}}
        sources = selectors.org_feed_sources(organization=organization)
        offers = selectors.org_feed_offers(organization=organization)
        runs = selectors.org_feed_runs(organization=organization)
        return {
            "organization": organization.slug,
            "sources": PriceFeedSource(sources, many=True).data,
            "offers": PriceOffer(offers, many=True, context=context).data,
            "runs": PriceRun(runs, many=True).data,
        }

    @extend_schema(
        operation_id="org_price_feeds_list",
        summary="The organization's negotiated price feeds, offers and runs",
        responses={
            200: PriceOrgFeeds,
            401: BAD_TOKEN,
            403: schema.NOT_LOGGED_IN,
            404: schema.NOT_A_MEMBER,
        },
        tags=["prices"],
    )
    def get(self, request: Request, org_slug: str) -> Response:
        return Response(self.feeds())

    @extend_schema(
        operation_id="org_price_feeds_create",
        summary="Save the organization's feed for a provider and load it (admins)",
        description="Replaces the organization's feed for that provider. A file or content "
        "with any bad row is refused whole, each row named; a URL is fetched by the worker.",
        request={
            "multipart/form-data": InputSerializer,
            "application/json": InputSerializer,
        },
        responses={
            200: PriceFeedSaved,
            400: schema.errors(
                "Bad input, the field named: no such provider, neither or both of url and a "
                "feed (under detail), a refused address, a file too large or with bad rows."
            ),
            401: BAD_TOKEN,
            403: schema.errors("Not logged in, a read-only token, or not an admin."),
            404: schema.NOT_A_MEMBER,
        },
        tags=["prices"],
    )
    def post(self, request: Request, org_slug: str) -> Response:
        upload = self.InputSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        form = upload_form(upload.validated_data)
        if not form.is_valid():
            raise exceptions.ValidationError(form_errors(form))
        data = form.cleaned_data
        source = services.org_feed_save(
            organization=self.tenant.organization,
            provider=data["provider"],
            url=data["url"] or "",
            content=data.get("content", ""),
        )
        level, message = feed_refresh(source)
        tag = messages.DEFAULT_TAGS.get(level, "info")
        return Response({**self.feeds(), "level": tag, "message": message})


def upload_form(data: dict[str, Any]) -> FeedUploadForm:
    """The page's form over the API's validated input, its values as they are (the
    provider a row): the feed as a file or as `content`, handed to the form as a file so
    that the same checks apply (the outbound policy for the URL, every row of the feed)."""
    files: MultiValueDict[str, UploadedFile] = MultiValueDict()
    if upload := data.get("file"):
        files["file"] = upload
    elif content := data["content"]:
        files["file"] = SimpleUploadedFile("feed", content.encode(), content_type="text/plain")
    return FeedUploadForm({"provider": data["provider"], "url": data["url"]}, files)
