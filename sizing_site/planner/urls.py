from django.urls import path

from sizing_site.planner import views

app_name = "planner"

urlpatterns = [
    path("o/<slug:org_slug>/planner/", views.plan, name="plan"),
]
