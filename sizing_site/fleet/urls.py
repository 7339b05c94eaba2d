from django.urls import path

from sizing_site.fleet import views

app_name = "fleet"

ORG = "o/<slug:org_slug>/fleet/"
ONE = ORG + "machines/<uuid:code>/"

urlpatterns = [
    path(ORG, views.fleet, name="fleet"),
    path(ORG + "machines/new/", views.machine_new, name="new"),
    path(ONE + "edit/", views.machine_edit, name="edit"),
    path(ONE + "delete/", views.machine_delete, name="delete"),
    path(ONE + "history/", views.machine_history, name="history"),
]
