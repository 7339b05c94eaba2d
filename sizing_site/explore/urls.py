from django.urls import path

from sizing_site.explore import compare_views, views

app_name = "explore"

urlpatterns = [
    path("models/<slug:model_slug>/gpus/", views.model_gpus, name="model-gpus"),
    path("gpus/<slug:accelerator_slug>/", views.gpu_models, name="gpu-models"),
    path("search/", views.search, name="search"),
    path("compare/", compare_views.compare, name="compare"),
    path("compare/pick/", compare_views.compare_pick_options, name="compare-pick"),
]
