from django.urls import path

from catalog import views

app_name = "catalog"

urlpatterns = [
    path("models/", views.model_list, name="model-list"),
    path("models/import/gguf/", views.gguf_upload, name="gguf-upload"),
    path("models/import/config/", views.config_import, name="config-import"),
    path("models/<slug:slug>/", views.model_detail, name="model-detail"),
    path("accelerators/", views.accelerator_list, name="accelerator-list"),
    path("accelerators/<slug:slug>/", views.accelerator_detail, name="accelerator-detail"),
]
