from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PricingConfig(AppConfig):
    name = "pricing"
    verbose_name = _("Cloud prices")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from pricing import signals

        signals.connect()
