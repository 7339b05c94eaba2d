from __future__ import annotations

import json
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.db.utils import OperationalError
from django.test import Client

# What a real driver puts in its message: the thing /health/ must never repeat.
LEAKY = 'connection to server at "db.internal" (10.0.0.7), port 5432 failed'


@pytest.fixture
def staff_client(client: Client) -> Client:
    client.force_login(User.objects.create_user("ops", password="pw-ops-123", is_staff=True))
    return client


def database_down() -> mock._patch[mock.MagicMock]:
    # The real check runs; only the cursor fails, as a dropped connection would.
    return mock.patch(
        "sizing_site.core.health.connection.cursor", side_effect=OperationalError(LEAKY)
    )


@pytest.mark.django_db
def test_health_says_only_up_to_the_public(client: Client) -> None:
    response = client.get("/health/")
    assert response.status_code == 200
    assert response.json() == {"status": "up"}
    assert "no-store" in response["Cache-Control"]


@pytest.mark.django_db
def test_health_says_only_down_to_the_public_when_the_database_is_down(client: Client) -> None:
    with database_down():
        response = client.get("/health/")
    assert response.status_code == 503
    assert response.json() == {"status": "down"}


@pytest.mark.django_db
def test_staff_see_each_dependency(staff_client: Client) -> None:
    body = staff_client.get("/health/").json()
    assert body["status"] == "up"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["cache"] == "ok"
    assert body["checks"]["broker"] in {"ok", "in-process"}
    assert body["errors"] == {}


@pytest.mark.django_db
def test_staff_see_the_error_class_but_never_hosts_or_ports(staff_client: Client) -> None:
    # With every query failing, the session could not say who is asking: staff is assumed
    # here so that the details the page would show them are what is checked.
    with database_down(), mock.patch("sizing_site.core.views._is_staff", return_value=True):
        response = staff_client.get("/health/")
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["database"] == "down"
    assert body["errors"] == {"database": "OperationalError"}
    raw = json.dumps(body)
    for secret in ("db.internal", "10.0.0.7", "5432"):
        assert secret not in raw


@pytest.mark.django_db
def test_a_signed_in_user_gets_503_not_500_when_the_session_cannot_load(
    staff_client: Client,
) -> None:
    with database_down():
        response = staff_client.get("/health/")
    assert response.status_code == 503
    assert response.json() == {"status": "down"}


@pytest.mark.django_db
def test_a_viewer_who_is_not_staff_gets_the_public_answer(client: Client) -> None:
    client.force_login(User.objects.create_user("viewer", password="pw-viewer-123"))
    assert client.get("/health/").json() == {"status": "up"}


@pytest.mark.django_db
def test_health_is_503_naming_the_broker_for_staff_when_redis_is_unreachable(
    staff_client: Client,
) -> None:
    from sizing_site.celery import app

    # A real connection attempt to a port nothing listens on.
    saved = app.conf.broker_url
    app.conf.update(broker_url="redis://127.0.0.1:1/0")
    try:
        with mock.patch("sizing_site.core.health.settings.CELERY_TASK_ALWAYS_EAGER", False):
            response = staff_client.get("/health/")
    finally:
        app.conf.update(broker_url=saved)
    assert response.status_code == 503
    body = response.json()
    assert body["checks"]["broker"] == "down"
    assert body["errors"]["broker"] == "OperationalError"  # kombu's, not the raw text
    assert "127.0.0.1:1" not in json.dumps(body)


@pytest.mark.django_db
def test_liveness_answers_without_the_database(client: Client) -> None:
    with database_down():
        response = client.get("/health/live/")
    assert response.status_code == 200
    assert response.content == b"ok"
