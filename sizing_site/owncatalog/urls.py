from django.urls import path

from sizing_site.owncatalog import views

app_name = "owncatalog"

MODELS = "o/<slug:org_slug>/own/models/"
MODEL = MODELS + "<slug:slug>/"
ACCELERATORS = "o/<slug:org_slug>/own/accelerators/"
ACCELERATOR = ACCELERATORS + "<slug:slug>/"

urlpatterns = [
    path(MODELS, views.models, name="models"),
    path(MODELS + "new/", views.model_new, name="model-new"),
    path(MODELS + "hugging-face/", views.model_hub, name="model-hub"),
    path(MODEL + "edit/", views.model_edit, name="model-edit"),
    path(MODEL + "delete/", views.model_delete, name="model-delete"),
    path(MODEL + "history/", views.model_history, name="model-history"),
    path(ACCELERATORS, views.accelerators, name="accelerators"),
    path(ACCELERATORS + "new/", views.accelerator_new, name="accelerator-new"),
    path(ACCELERATOR + "edit/", views.accelerator_edit, name="accelerator-edit"),
    path(ACCELERATOR + "delete/", views.accelerator_delete, name="accelerator-delete"),
    path(ACCELERATOR + "history/", views.accelerator_history, name="accelerator-history"),
]
