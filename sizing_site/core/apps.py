from django.apps import AppConfig
from django.conf import settings
from django.core.signals import request_finished
from django.utils.translation import gettext_lazy as _

from sizing_site.core.error_tracking import init_error_tracking
from sizing_site.core.request_id import clear_request_id


class CoreConfig(AppConfig):
    name = "sizing_site.core"
    label = "core"
    verbose_name = _("Core")

    def ready(self) -> None:
        # Here rather than in settings, so logging is configured when it warns.
        init_error_tracking(settings.ERROR_TRACKING_DSN)
        request_finished.connect(clear_request_id, dispatch_uid="core.clear_request_id")
