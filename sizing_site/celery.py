"""Celery application; configuration comes from Django settings under the CELERY_ namespace."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sizing_site.settings")

app = Celery("sizing_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
