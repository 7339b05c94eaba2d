from django.urls import path

from pricing import views

app_name = "pricing"

urlpatterns = [
    path("prices/", views.prices, name="prices"),
    path("o/<slug:org_slug>/prices/feed/", views.org_feed, name="org-feed"),
]
