"""Every API answer echoes the caller's X-Request-ID (sizing_site.core.request_id), errors
and refusals included, so a script can tie its call to the server's log lines."""

from __future__ import annotations

import json
import re

from django.core.cache import cache
from django.test import Client, override_settings

from sizing_site.tokens.services import token_create
from tests.api.test_tokens import rest_framework_with
from tests.cast import CastTestCase

ESTIMATE = "/api/v1/estimate/"


class RequestIdTest(CastTestCase):
    def setUp(self) -> None:
        cache.clear()
        self.script = Client()

    def post(self, body: object, request_id: str, **headers: str) -> object:
        return self.script.post(
            ESTIMATE,
            json.dumps(body),
            content_type="application/json",
            headers={"X-Request-ID": request_id, **headers},
        )

    def test_every_kind_of_answer_echoes_the_callers_id(self) -> None:
        plain = token_create(user=self.bob, name="ci").plain
        auth = {"Authorization": f"Bearer {plain}"}
        answers = {
            "missing-1": (self.post({"model": "x", "accelerator": "y"}, "missing-1", **auth), 404),
            "bad-2": (self.post([1], "bad-2", **auth), 200),  # a batch, its item refused
            "bad-3": (self.post({"model": "x", "ctx": []}, "bad-3", **auth), 400),
            "anon-4": (self.post({}, "anon-4"), 403),
            "token-5": (self.post({}, "token-5", Authorization="Bearer rs_nope_x"), 401),
        }
        for request_id, (response, status) in answers.items():
            assert response.status_code == status, request_id  # type: ignore[attr-defined]
            assert response["X-Request-ID"] == request_id  # type: ignore[index]
        schema = self.script.get("/api/v1/catalog/engines/", headers={"X-Request-ID": "r-6"})
        assert schema["X-Request-ID"] == "r-6"

    def test_a_throttled_call_echoes_it_and_a_forged_id_is_replaced(self) -> None:
        plain = token_create(user=self.bob, name="ci").plain
        auth = {"Authorization": f"Bearer {plain}"}
        with override_settings(REST_FRAMEWORK=rest_framework_with(token="1/min", user="9/min")):
            self.post({"model": "none"}, "first", **auth)
            response = self.post({"model": "none"}, "second-7", **auth)
            assert response.status_code == 429  # type: ignore[attr-defined]
            assert response["X-Request-ID"] == "second-7"  # type: ignore[index]
        forged = self.post({}, "bad id\r\nX-Admin: 1", **auth)
        assert re.fullmatch(r"[0-9a-f]{32}", forged["X-Request-ID"])  # type: ignore[index]
