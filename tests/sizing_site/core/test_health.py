from __future__ import annotations

from unittest import mock

import pytest
from django.db.utils import OperationalError
from django.test import Client


@pytest.mark.django_db
def test_health_is_200_with_every_dependency_up(client: Client) -> None:
    response = client.get("/health/")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["cache"] == "ok"
    assert body["checks"]["broker"] in {"ok", "in-process"}


@pytest.mark.django_db
def test_health_is_503_naming_the_database_when_it_is_down(client: Client) -> None:
    # The real check runs; only the cursor is made to fail, as a dropped connection would.
    with mock.patch(
        "sizing_site.core.health.connection.cursor", side_effect=OperationalError("gone")
    ):
        response = client.get("/health/")
    assert response.status_code == 503
    assert response.json()["down"] == ["database"]
    assert "OperationalError: gone" in response.json()["checks"]["database"]


@pytest.mark.django_db
def test_health_is_503_naming_the_broker_when_redis_is_unreachable(client: Client) -> None:
    from sizing_site.celery import app

    # A real connection attempt to a port nothing listens on.
    saved = app.conf.broker_url
    app.conf.update(broker_url="redis://127.0.0.1:1/0")
    try:
        with mock.patch("sizing_site.core.health.settings.CELERY_TASK_ALWAYS_EAGER", False):
            response = client.get("/health/")
    finally:
        app.conf.update(broker_url=saved)
    assert response.status_code == 503
    assert "broker" in response.json()["down"]
