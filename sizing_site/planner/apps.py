from django.apps import AppConfig


class PlannerConfig(AppConfig):
    name = "sizing_site.planner"
    label = "planner"
