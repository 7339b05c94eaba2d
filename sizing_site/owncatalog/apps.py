from django.apps import AppConfig


class OwnCatalogConfig(AppConfig):
    name = "sizing_site.owncatalog"
    label = "owncatalog"
