from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CatalogConfig(AppConfig):
    name = "catalog"
    label = "catalog"
    verbose_name = _("Catalog")

    def ready(self) -> None:
        from catalog import signals

        signals.connect()
