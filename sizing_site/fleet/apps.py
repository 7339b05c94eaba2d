from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "sizing_site.fleet"
    label = "fleet"
