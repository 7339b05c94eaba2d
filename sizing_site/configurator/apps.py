from django.apps import AppConfig


class ConfiguratorConfig(AppConfig):
    name = "sizing_site.configurator"
    label = "configurator"
