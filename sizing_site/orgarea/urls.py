"""Routed in the tenancy namespace by sizing_site/urls.py (the name tenancy:dashboard is
the overview's since the first org page)."""

from django.urls import path

from sizing_site.orgarea import views

urlpatterns = [
    path("o/<slug:org_slug>/", views.overview, name="dashboard"),
]
