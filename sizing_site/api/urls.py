from django.urls import path

from sizing_site.api import views

urlpatterns = [
    path("estimate/", views.EstimateApi.as_view(), name="estimate"),
]
