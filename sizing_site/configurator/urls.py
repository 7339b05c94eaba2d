from django.urls import path

from sizing_site.configurator import views

app_name = "configurator"

urlpatterns = [
    path(
        "models/<slug:model_slug>/on/<slug:accelerator_slug>/",
        views.configure,
        name="configure",
    ),
]
