from django.urls import path

from sizing_site.planner import saved, views

app_name = "planner"

ORG = "o/<slug:org_slug>/planner/"
ONE = ORG + "saved/<uuid:code>/"

urlpatterns = [
    path(ORG, views.plan, name="plan"),
    # Saved plans: sizing_site.planner.saved.
    path(ORG + "saved/", saved.saved_list, name="saved"),
    path(ORG + "save/", saved.save, name="save"),
    path(ONE, saved.report, name="saved-report"),
    path(ONE + "recompute/", saved.recompute, name="saved-recompute"),
    path(ONE + "rename/", saved.rename, name="saved-rename"),
    path(ONE + "delete/", saved.delete, name="saved-delete"),
    path(ONE + "share/", saved.share, name="saved-share"),
    path(ORG + "saved/links/<uuid:code>/revoke/", saved.revoke, name="saved-revoke"),
    path("s/plan/<str:token>/", saved.shared, name="shared"),
]
