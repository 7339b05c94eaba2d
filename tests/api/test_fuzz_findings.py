"""What the schema fuzz (tests/api/test_fuzz.py) found, kept as plain tests: requests
refused before any API view runs, answered in the API's error shape (JSON), while the
site's own pages keep their HTML or plain-text answer."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.api.fuzz_seed import ORG


@pytest.mark.django_db
def test_an_api_address_no_route_matches_is_a_json_404(client: Client) -> None:
    """A member code that is no UUID matches no route: the API's 404, not the site's page."""
    response = client.get(f"/api/v1/o/{ORG}/members/not-a-uuid/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"errors": {"detail": ["Not found."]}}
    # The site's own pages keep their HTML page.
    assert "text/html" in client.get("/en/no-such-page/")["Content-Type"]


@pytest.mark.django_db
def test_an_unknown_api_route_is_json_in_development_too(client: Client, settings: Any) -> None:
    """DEBUG answers handler404's addresses with Django's HTML debug page; the API's last
    route keeps its error shape there, and still adds a missing final slash."""
    settings.DEBUG = True
    response = client.get("/api/v1/no-such-route/")
    assert response.status_code == 404
    assert response.json() == {"errors": {"detail": ["Not found."]}}
    # Any method: a PATCH to no route is the same 404, not Django's CSRF page.
    patched = Client(enforce_csrf_checks=True).patch("/api/v1/catalog/accelerators/a%20b/", {})
    assert patched.status_code == 404 and patched["Content-Type"] == "application/json"
    redirect = client.get("/api/v1/catalog/models?search=qwen")
    assert redirect.status_code == 301
    assert redirect["Location"] == "/api/v1/catalog/models/?search=qwen"


@pytest.mark.django_db
def test_a_nul_in_an_api_query_is_a_json_400(client: Client) -> None:
    response = client.get("/api/v1/catalog/models/", {"search": "a\x00b"})
    assert response.status_code == 400
    assert response.json() == {"errors": {"request": ["The query contains a NUL character."]}}
    page = client.get("/en/models/", {"q": "a\x00b"})
    assert page.status_code == 400
    assert page["Content-Type"] == "text/plain; charset=utf-8"
