from django.apps import AppConfig


class ExploreConfig(AppConfig):
    name = "sizing_site.explore"
    label = "explore"
