"""Every API route under /api/v1/, in one list (namespace "api"). The endpoints live with
their pages' apps; the shared plumbing (errors, paging, budget, schema) in sizing_site.apikit."""

from django.urls import URLPattern, path, re_path

from sizing_site.apikit import errors as api_errors
from sizing_site.apikit import schema
from sizing_site.configurator import api as configurator_api
from sizing_site.explore import catalog_api, compare_api, sweeps_api
from sizing_site.fleet import api as fleet_api
from sizing_site.owncatalog import api as owncatalog_api
from sizing_site.planner import api as planner_api
from sizing_site.planner import saved_api
from sizing_site.prices import api as prices_api
from sizing_site.reports.api import activity as activity_api
from sizing_site.reports.api import configurations as configurations_api
from sizing_site.reports.api import links as share_links_api
from sizing_site.tenancy import api as tenancy_api

ORG = "o/<slug:org_slug>/"
CONFIGURATION = ORG + "configurations/<uuid:code>/"
SAVED_PLANS = ORG + "plans/saved/"
SAVED_PLAN = SAVED_PLANS + "<uuid:code>/"

urlpatterns: list[URLPattern] = [
    # The OpenAPI schema and its Swagger UI.
    path("schema/", schema.SchemaView.as_view(), name="schema"),
    path("docs/", schema.DocsView.as_view(), name="docs"),
    # One setup sized (the configurator's answer).
    path("estimate/", configurator_api.EstimateApi.as_view(), name="estimate"),
    # The catalog: read for users, PATCH of a few fields for staff.
    path("catalog/models/", catalog_api.ModelListApi.as_view(), name="catalog-models"),
    path("catalog/models/<slug:slug>/", catalog_api.ModelDetailApi.as_view(), name="catalog-model"),
    path(
        "catalog/models/<slug:slug>/weights/",
        catalog_api.WeightsListApi.as_view(),
        name="catalog-model-weights",
    ),
    path(
        "catalog/accelerators/",
        catalog_api.AcceleratorListApi.as_view(),
        name="catalog-accelerators",
    ),
    path(
        "catalog/accelerators/<slug:slug>/",
        catalog_api.AcceleratorDetailApi.as_view(),
        name="catalog-accelerator",
    ),
    path("catalog/engines/", catalog_api.EngineListApi.as_view(), name="catalog-engines"),
    path(
        "catalog/engines/<slug:slug>/", catalog_api.EngineDetailApi.as_view(), name="catalog-engine"
    ),
    path(
        "catalog/quant-formats/",
        catalog_api.QuantFormatListApi.as_view(),
        name="catalog-quant-formats",
    ),
    path(
        "catalog/quant-formats/<slug:slug>/",
        catalog_api.QuantFormatDetailApi.as_view(),
        name="catalog-quant-format",
    ),
    # Sweeps (the explore tables) and compare.
    path(
        "sweeps/models/<slug:model_slug>/accelerators/",
        sweeps_api.ModelAcceleratorsApi.as_view(),
        name="sweeps-model-accelerators",
    ),
    path(
        "sweeps/accelerators/<slug:accelerator_slug>/models/",
        sweeps_api.AcceleratorModelsApi.as_view(),
        name="sweeps-accelerator-models",
    ),
    path("compare/", compare_api.CompareApi.as_view(), name="compare"),
    # Prices.
    path("prices/offers/", prices_api.OfferListApi.as_view(), name="prices-offers"),
    path("prices/runs/", prices_api.RefreshRunListApi.as_view(), name="prices-runs"),
    path(ORG + "prices/feeds/", prices_api.OrgFeedApi.as_view(), name="org-price-feeds"),
    # Saved configurations, their share links and the org's activity.
    path(
        ORG + "configurations/",
        configurations_api.ConfigurationListApi.as_view(),
        name="configurations",
    ),
    path(
        ORG + "configurations/compare/",
        configurations_api.ConfigurationCompareApi.as_view(),
        name="configurations-compare",
    ),
    path(CONFIGURATION, configurations_api.ConfigurationDetailApi.as_view(), name="configuration"),
    path(
        CONFIGURATION + "recompute/",
        configurations_api.ConfigurationRecomputeApi.as_view(),
        name="configuration-recompute",
    ),
    path(
        CONFIGURATION + "export/",
        configurations_api.ConfigurationExportApi.as_view(),
        name="configuration-export",
    ),
    path(
        CONFIGURATION + "duplicate/",
        configurations_api.ConfigurationDuplicateApi.as_view(),
        name="configuration-duplicate",
    ),
    path(
        CONFIGURATION + "share-links/",
        share_links_api.ShareLinkCreateApi.as_view(),
        name="configuration-share",
    ),
    path(ORG + "share-links/", share_links_api.ShareLinkListApi.as_view(), name="share-links"),
    path(
        ORG + "share-links/<uuid:code>/",
        share_links_api.ShareLinkDetailApi.as_view(),
        name="share-link",
    ),
    path(ORG + "share-policy/", share_links_api.SharePolicyApi.as_view(), name="share-policy"),
    path(ORG + "activity/", activity_api.ActivityApi.as_view(), name="activity"),
    # The org's inventory and its fleet.
    path(ORG + "inventory/", fleet_api.InventoryListApi.as_view(), name="inventory"),
    path(
        ORG + "inventory/<uuid:code>/",
        fleet_api.InventoryDetailApi.as_view(),
        name="inventory-machine",
    ),
    path(ORG + "fleet/", fleet_api.FleetApi.as_view(), name="fleet"),
    # The capacity planner and saved plans.
    path(ORG + "plans/", planner_api.PlanApi.as_view(), name="plans"),
    path(SAVED_PLANS, saved_api.SavedPlanListApi.as_view(), name="plans-saved"),
    path(SAVED_PLAN, saved_api.SavedPlanDetailApi.as_view(), name="plan-saved"),
    path(
        SAVED_PLAN + "recompute/",
        saved_api.SavedPlanRecomputeApi.as_view(),
        name="plan-saved-recompute",
    ),
    path(
        SAVED_PLAN + "share-links/",
        saved_api.SavedPlanShareApi.as_view(),
        name="plan-saved-share-links",
    ),
    path(
        SAVED_PLANS + "share-links/<uuid:code>/",
        saved_api.SavedPlanShareLinkApi.as_view(),
        name="plan-saved-share-link",
    ),
    # The org's own models and accelerators.
    path(ORG + "models/", owncatalog_api.OwnModelListApi.as_view(), name="own-models"),
    path(ORG + "models/<slug:slug>/", owncatalog_api.OwnModelDetailApi.as_view(), name="own-model"),
    path(
        ORG + "accelerators/",
        owncatalog_api.OwnAcceleratorListApi.as_view(),
        name="own-accelerators",
    ),
    path(
        ORG + "accelerators/<slug:slug>/",
        owncatalog_api.OwnAcceleratorDetailApi.as_view(),
        name="own-accelerator",
    ),
    # Members and invitations. Admin side: the org's own.
    path(ORG + "members/", tenancy_api.MemberListApi.as_view(), name="api-members"),
    path(
        ORG + "members/<uuid:code>/",
        tenancy_api.MemberDetailApi.as_view(),
        name="api-member-detail",
    ),
    path(
        ORG + "members/invitations/",
        tenancy_api.InvitationListApi.as_view(),
        name="api-invitations",
    ),
    path(
        ORG + "members/invitations/<uuid:code>/",
        tenancy_api.InvitationDetailApi.as_view(),
        name="api-invitation-detail",
    ),
    # Invitee side: the caller's own, looked up among the invitations addressed to them.
    path("invitations/", tenancy_api.MyInvitationListApi.as_view(), name="api-my-invitations"),
    path(
        ORG + "invitations/<uuid:code>/accept/",
        tenancy_api.InvitationAcceptApi.as_view(),
        name="api-invitation-accept",
    ),
    path(
        ORG + "invitations/<uuid:code>/decline/",
        tenancy_api.InvitationDeclineApi.as_view(),
        name="api-invitation-decline",
    ),
    # Last: an address no route above matches is a 404 in the API's error shape, in
    # development too (DEBUG answers handler404's addresses with its HTML debug page).
    re_path(r"^.*$", api_errors.unmatched, name="api-unmatched"),
]
