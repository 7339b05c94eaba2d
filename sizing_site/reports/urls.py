from django.urls import path

from sizing_site.reports import views

app_name = "reports"

ORG = "o/<slug:org_slug>/"
ONE = ORG + "reports/<uuid:code>/"

urlpatterns = [
    path(ORG + "reports/", views.configuration_list, name="list"),
    path(ORG + "reports/save/", views.configuration_save, name="save"),
    path(ORG + "reports/undo/", views.configuration_restore, name="restore"),
    path(ORG + "reports/compare/", views.compare, name="compare"),
    path(ORG + "reports/links/", views.links, name="links"),
    path(ORG + "reports/links/policy/", views.share_policy, name="policy"),
    path(ORG + "reports/links/<uuid:code>/revoke/", views.share_revoke, name="revoke"),
    path(ORG + "activity/", views.activity, name="activity"),
    path(ONE, views.report, name="report"),
    path(ONE + "recompute/", views.recompute, name="recompute"),
    path(ONE + "export.csv", views.export_csv, name="export-csv"),
    path(ONE + "export.json", views.export_json, name="export-json"),
    path(ONE + "rename/", views.configuration_rename, name="rename"),
    path(ONE + "duplicate/", views.configuration_duplicate, name="duplicate"),
    path(ONE + "delete/", views.configuration_delete, name="delete"),
    path(ONE + "share/", views.share_create, name="share"),
    path("r/<str:token>/", views.shared, name="shared"),
]
