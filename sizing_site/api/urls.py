from django.urls import include, path

from sizing_site.api import catalog, schema, views

urlpatterns = [
    path("estimate/", views.EstimateApi.as_view(), name="estimate"),
    # The OpenAPI schema and its Swagger UI.
    path("schema/", schema.SchemaView.as_view(), name="schema"),
    path("docs/", schema.DocsView.as_view(), name="docs"),
    # The catalog: read for users, PATCH of a few fields for staff.
    path("catalog/models/", catalog.ModelListApi.as_view(), name="catalog-models"),
    path("catalog/models/<slug:slug>/", catalog.ModelDetailApi.as_view(), name="catalog-model"),
    path(
        "catalog/models/<slug:slug>/weights/",
        catalog.WeightsListApi.as_view(),
        name="catalog-model-weights",
    ),
    path(
        "catalog/accelerators/", catalog.AcceleratorListApi.as_view(), name="catalog-accelerators"
    ),
    path(
        "catalog/accelerators/<slug:slug>/",
        catalog.AcceleratorDetailApi.as_view(),
        name="catalog-accelerator",
    ),
    path("catalog/engines/", catalog.EngineListApi.as_view(), name="catalog-engines"),
    path("catalog/engines/<slug:slug>/", catalog.EngineDetailApi.as_view(), name="catalog-engine"),
    path(
        "catalog/quant-formats/", catalog.QuantFormatListApi.as_view(), name="catalog-quant-formats"
    ),
    path(
        "catalog/quant-formats/<slug:slug>/",
        catalog.QuantFormatDetailApi.as_view(),
        name="catalog-quant-format",
    ),
    # Sweeps and compare (sizing_site.api.sweeps), prices (sizing_site.prices.api), saved
    # configurations and share links (sizing_site.reports.api): each module has its routes.
    path("", include("sizing_site.api.sweeps")),
    path("", include("sizing_site.prices.api")),
    path("", include("sizing_site.reports.api")),
    # The org's inventory (sizing_site.fleet.api), the capacity planner
    # (sizing_site.planner.api).
    path("", include("sizing_site.fleet.api")),
    path("", include("sizing_site.planner.api")),
    # The org's own models and accelerators (sizing_site.owncatalog.api).
    path("", include("sizing_site.owncatalog.api")),
]
