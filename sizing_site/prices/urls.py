from django.urls import path

from sizing_site.prices import views

# The namespace stays "pricing": URL names are a contract (templates, links, tests).
app_name = "pricing"

urlpatterns = [
    path("prices/", views.prices, name="prices"),
    path("o/<slug:org_slug>/prices/feed/", views.org_feed, name="org-feed"),
]
