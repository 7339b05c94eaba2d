from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "sizing_site.reports"
    label = "reports"
