from django.apps import AppConfig


class SharingConfig(AppConfig):
    name = "sizing_site.sharing"
    label = "sharing"
