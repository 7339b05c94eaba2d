"""API tokens: a script with a token reaches the API; tokens are stored hashed,
shown once, limited to one organization and to reading where asked, and throttled."""

from __future__ import annotations

import hashlib
import io
import json
from datetime import timedelta
from typing import Any
from unittest import mock

from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone, translation

from estimator.api import estimate
from sizing_site.tenancy.models import Membership, Role
from sizing_site.tokens.authentication import token_allows
from sizing_site.tokens.models import ApiToken
from sizing_site.tokens.services import token_create
from tests.api.test_estimate import raw_request
from tests.cast import CastTestCase

ESTIMATE = "/api/v1/estimate/"
MEMBERS_A = "/api/v1/o/org-a/members/"
MEMBERS_B = "/api/v1/o/org-b/members/"
PAGE = "/en/account/tokens/"
BAD_TOKEN = {"errors": {"detail": ["Invalid, expired or revoked token."]}}


def rest_framework_with(**rates: str) -> dict[str, Any]:
    config: dict[str, Any] = dict(django_settings.REST_FRAMEWORK)
    config["DEFAULT_THROTTLE_RATES"] = {**config["DEFAULT_THROTTLE_RATES"], **rates}
    return config


class TokenTestCase(CastTestCase):
    def setUp(self) -> None:
        translation.activate("en")
        self.addCleanup(translation.deactivate)
        cache.clear()  # throttle counts of earlier tests (user ids are reused)
        self.script = Client()  # no session: only the Authorization header

    def call(self, plain: str, method: str, path: str, body: Any = None) -> Any:
        send = getattr(self.script, method)
        headers = {"Authorization": f"Bearer {plain}"}
        if body is None:
            return send(path, headers=headers)
        return send(path, json.dumps(body), content_type="application/json", headers=headers)


class ScriptWithTokenTest(TokenTestCase):
    def test_a_token_estimates_and_lists_its_orgs_members(self) -> None:
        plain = token_create(user=self.bob, name="ci").plain
        response = self.call(plain, "post", ESTIMATE, {"request": raw_request()})
        assert response.status_code == 200
        # The estimator's own figures for the same request, through the token.
        expected = estimate(raw_request())
        assert response.json()["total_bytes"] == expected["total_bytes"]
        assert response.json()["fit"] == expected["fit"]
        response = self.call(plain, "get", MEMBERS_A)
        assert response.status_code == 200
        names = sorted(m["username"] for m in response.json()["members"])
        assert names == ["alice", "bob"]
        # Bob is no member of org B: the token is no way around that.
        assert self.call(plain, "get", MEMBERS_B).status_code == 404

    def test_the_token_keyword_works_as_well_as_bearer(self) -> None:
        plain = token_create(user=self.bob, name="ci").plain
        response = self.script.get(MEMBERS_A, headers={"Authorization": f"Token {plain}"})
        assert response.status_code == 200

    def test_no_authorization_is_refused_as_before(self) -> None:
        response = self.script.post(
            ESTIMATE, json.dumps({"request": raw_request()}), content_type="application/json"
        )
        assert response.status_code == 403
        assert "WWW-Authenticate" not in response.headers
        assert self.script.get(MEMBERS_A).status_code in (401, 403)

    def test_revoked_expired_unknown_and_forged_tokens_are_401(self) -> None:
        revoked = token_create(user=self.bob, name="old")
        revoked.token.revoked_at = timezone.now()
        revoked.token.save()
        expired = token_create(user=self.bob, name="short", expires_in_days=1)
        ApiToken.objects.filter(pk=expired.token.pk).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
        good = token_create(user=self.bob, name="good").plain
        forged = good[:12] + ("A" if good[12] != "A" else "B") + good[13:]  # right prefix
        for plain in (revoked.plain, expired.plain, "rs_00000000_nothing", forged, "x y"):
            response = self.call(plain, "post", ESTIMATE, {"request": raw_request()})
            assert response.status_code == 401, plain
            assert response.json() == BAD_TOKEN
            assert response.headers["WWW-Authenticate"] == 'Bearer realm="api"'
            response = self.call(plain, "get", MEMBERS_A)
            assert response.status_code == 401 and response.json() == BAD_TOKEN
        assert self.call(good, "get", MEMBERS_A).status_code == 200

    def test_a_deactivated_users_token_is_401(self) -> None:
        plain = token_create(user=self.bob, name="ci").plain
        User.objects.filter(pk=self.bob.pk).update(is_active=False)
        assert self.call(plain, "get", MEMBERS_A).status_code == 401

    def test_last_used_is_written_at_most_once_a_minute(self) -> None:
        issued = token_create(user=self.bob, name="ci")
        assert issued.token.last_used_at is None
        before = timezone.now()
        assert self.call(issued.plain, "get", MEMBERS_A).status_code == 200
        issued.token.refresh_from_db()
        first = issued.token.last_used_at
        assert first is not None and first >= before
        # 30 s ago: within the minute, not written again.
        half_minute = timezone.now() - timedelta(seconds=30)
        ApiToken.objects.filter(pk=issued.token.pk).update(last_used_at=half_minute)
        self.call(issued.plain, "get", MEMBERS_A)
        issued.token.refresh_from_db()
        assert issued.token.last_used_at == half_minute
        # 2 min ago: written.
        two_minutes = timezone.now() - timedelta(minutes=2)
        ApiToken.objects.filter(pk=issued.token.pk).update(last_used_at=two_minutes)
        self.call(issued.plain, "get", MEMBERS_A)
        issued.token.refresh_from_db()
        assert issued.token.last_used_at is not None
        assert issued.token.last_used_at > two_minutes + timedelta(minutes=1)


class TokenLimitsTest(TokenTestCase):
    def test_a_read_only_token_estimates_but_cannot_write(self) -> None:
        read_only = token_create(user=self.alice, name="ro", read_only=True).plain
        writer = token_create(user=self.alice, name="rw").plain
        response = self.call(read_only, "post", ESTIMATE, {"request": raw_request()})
        assert response.status_code == 200
        assert self.call(read_only, "get", MEMBERS_A).status_code == 200
        # The members route takes no POST: a writer gets the 405, the read-only token its 403.
        assert self.call(writer, "post", MEMBERS_A, {}).status_code == 405
        response = self.call(read_only, "post", MEMBERS_A, {})
        assert response.status_code == 403
        assert response.json() == {"errors": {"detail": ["This token is read-only."]}}
        for method in ("put", "patch", "delete"):
            assert self.call(read_only, method, MEMBERS_A, {}).status_code == 403

    def test_the_read_only_rule(self) -> None:
        token = ApiToken(read_only=True)
        assert token_allows(token, "GET", "api:api-members")
        assert token_allows(token, "HEAD", None)
        assert token_allows(token, "OPTIONS", None)
        assert token_allows(token, "POST", "api:estimate")
        assert not token_allows(token, "POST", "api:api-members")
        assert not token_allows(token, "PUT", "api:estimate")
        assert not token_allows(token, "DELETE", None)
        assert token_allows(ApiToken(read_only=False), "DELETE", None)

    def test_an_org_limited_token_sees_only_its_org(self) -> None:
        # Dave belongs to both orgs; his token limited to org A answers 404 on org B.
        dave = User.objects.create_user("dave", "dave@example.com", "pw-dave-123")
        Membership.all_tenants.create(user=dave, organization=self.org_a, role=Role.VIEWER)
        Membership.all_tenants.create(user=dave, organization=self.org_b, role=Role.VIEWER)
        limited = token_create(user=dave, name="a only", organization=self.org_a).plain
        unlimited = token_create(user=dave, name="all").plain
        assert self.call(limited, "get", MEMBERS_A).status_code == 200
        assert self.call(limited, "get", MEMBERS_B).status_code == 404
        code = str(self.charlie_membership.code)
        assert self.call(limited, "get", f"{MEMBERS_B}{code}/").status_code == 404
        assert self.call(unlimited, "get", MEMBERS_B).status_code == 200
        assert self.call(unlimited, "get", f"{MEMBERS_B}{code}/").status_code == 200
        # Estimate is outside any organization: the limited token may use it.
        response = self.call(limited, "post", ESTIMATE, {"request": raw_request()})
        assert response.status_code == 200


class TokenPageTest(TokenTestCase):
    def create(self, **fields: Any) -> tuple[Any, str]:
        response = self.client.post(PAGE, {"name": "notebook", **fields})
        assert response.status_code == 200
        plain = response.context["plain"]
        assert isinstance(plain, str)
        return response, plain

    def test_the_page_shows_the_token_once_and_the_database_only_its_hash(self) -> None:
        self.client.force_login(self.bob)
        response, plain = self.create(expires_in_days="30", read_only="on")
        # "rs_" + 8 hex + "_" + token_urlsafe(32) (43 characters): 55 in all.
        assert len(plain) == 55 and plain.startswith("rs_") and plain[11] == "_"
        assert plain in response.content.decode()
        token = ApiToken.objects.get(user=self.bob)
        assert token.prefix == plain[3:11]
        assert token.key_hash == hashlib.sha256(plain.encode()).hexdigest()
        assert token.read_only and token.organization is None
        # 30 days from now, give or take the test's own run time.
        assert token.expires_at is not None
        days = (token.expires_at - timezone.now()).total_seconds() / 86400
        assert 29.99 < days <= 30
        again = self.client.get(PAGE).content.decode()
        assert plain not in again
        assert plain[len("rs_") + 9 :] not in again
        assert f"rs_{token.prefix}_…" in again and "notebook" in again
        # The secret is nowhere in the database: not in any row, not in a dump.
        secret = plain[12:]
        for row in ApiToken.objects.values():
            assert all(secret not in str(value) for value in row.values())
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT * FROM {ApiToken._meta.db_table}")
            table = repr(cursor.fetchall())
        assert token.key_hash in table and secret not in table
        dump = io.StringIO()
        call_command("dumpdata", "tokens", "auth", "sessions", stdout=dump)
        assert token.key_hash in dump.getvalue()
        assert secret not in dump.getvalue()
        # And the token works.
        assert self.call(plain, "get", MEMBERS_A).status_code == 200

    def test_the_organization_choice_is_among_the_users_memberships(self) -> None:
        self.client.force_login(self.bob)
        _response, plain = self.create(organization=str(self.org_a.pk))
        assert ApiToken.objects.get(user=self.bob).organization == self.org_a
        assert self.call(plain, "get", MEMBERS_A).status_code == 200
        response = self.client.post(PAGE, {"name": "sneaky", "organization": self.org_b.pk})
        assert response.status_code == 400
        assert "organization" in response.context["form"].errors
        assert ApiToken.objects.filter(user=self.bob).count() == 1

    def test_revoking_own_and_not_anothers_token(self) -> None:
        alices = token_create(user=self.alice, name="alice's").plain
        self.client.force_login(self.bob)
        _response, plain = self.create()
        bobs = ApiToken.objects.get(user=self.bob)
        theirs = ApiToken.objects.get(user=self.alice)
        revoke = "/en/account/tokens/revoke/"
        response = self.client.post(revoke, {"code": str(theirs.code)})
        assert response.status_code == 404
        assert self.client.post(revoke, {"code": "not-a-code"}).status_code == 404
        theirs.refresh_from_db()
        assert theirs.revoked_at is None
        assert self.call(alices, "get", MEMBERS_A).status_code == 200
        assert self.client.get(revoke).status_code == 405
        response = self.client.post(revoke, {"code": str(bobs.code)})
        assert response.status_code == 302 and response["Location"] == PAGE
        bobs.refresh_from_db()
        assert bobs.revoked_at is not None
        assert self.call(plain, "get", MEMBERS_A).status_code == 401
        assert "revoked" in self.client.get(PAGE).content.decode()

    def test_the_page_needs_a_login(self) -> None:
        response = self.client.get(PAGE)
        assert response.status_code == 302
        assert response["Location"].startswith("/en/accounts/login/")

    def test_the_password_page_links_to_the_tokens(self) -> None:
        self.client.force_login(self.bob)
        assert f'href="{PAGE}"' in self.client.get("/en/accounts/password/").content.decode()


class ThrottleTest(TokenTestCase):
    @override_settings(REST_FRAMEWORK=rest_framework_with(token="3/min"))
    def test_a_tokens_fourth_request_in_a_minute_is_429(self) -> None:
        plain = token_create(user=self.bob, name="ci").plain
        other = token_create(user=self.bob, name="other").plain
        codes = [self.call(plain, "get", MEMBERS_A).status_code for _ in range(3)]
        assert codes == [200, 200, 200]
        response = self.call(plain, "get", MEMBERS_A)
        assert response.status_code == 429
        assert list(response.json()["errors"]) == ["detail"]
        response = self.call(plain, "post", ESTIMATE, {"request": raw_request()})
        assert response.status_code == 429
        assert list(response.json()["errors"]) == ["detail"]
        assert int(response.headers["Retry-After"]) <= 60
        # Per token: the user's other token and session still pass.
        assert self.call(other, "get", MEMBERS_A).status_code == 200
        self.script.force_login(self.bob)
        assert self.script.get(MEMBERS_A).status_code == 200

    @override_settings(REST_FRAMEWORK=rest_framework_with(user="3/min"))
    def test_a_users_fourth_request_in_a_minute_is_429_across_tokens(self) -> None:
        first = token_create(user=self.bob, name="one").plain
        second = token_create(user=self.bob, name="two").plain
        self.script.force_login(self.bob)
        assert self.script.get(MEMBERS_A).status_code == 200  # 1: session
        assert self.call(first, "get", MEMBERS_A).status_code == 200  # 2
        assert self.call(second, "get", MEMBERS_A).status_code == 200  # 3
        assert self.call(first, "get", MEMBERS_A).status_code == 429  # 4
        # Another user is counted apart.
        alices = token_create(user=self.alice, name="a").plain
        assert self.call(alices, "get", MEMBERS_A).status_code == 200


class FailedTokenThrottleTest(TokenTestCase):
    """1,400 bad tokens from one address once each cost a token lookup and a 401, with no
    limit; scaled down here: 140 tokens against a limit of 30."""

    def guess(self, plain: str, address: str = "10.0.0.7", **headers: str) -> Any:
        return self.script.get(
            MEMBERS_A,
            headers={"Authorization": f"Bearer {plain}", **headers},
            REMOTE_ADDR=address,
        )

    @override_settings(API_TOKEN_FAILURE_LIMIT=30)
    def test_an_address_that_sent_too_many_bad_tokens_gets_429_for_any_token(self) -> None:
        # All in one minute's window (the counter's windows are fixed, one a clock minute):
        # on a busy machine 140 requests can otherwise straddle a minute and start over.
        with mock.patch("sizing_site.tokens.throttling.time.time", return_value=6030.0):
            self._too_many_bad_tokens()

    def _too_many_bad_tokens(self) -> None:
        good = token_create(user=self.bob, name="ci").plain
        guesses = [f"rs_{n:08x}_{'x' * 43}" for n in range(140)]
        with CaptureQueriesContext(connection) as queries:
            codes = [self.guess(plain).status_code for plain in guesses]
        assert codes == [401] * 30 + [429] * 110
        # The refused ones never reached the database: 30 lookups, not 140.
        lookups = [q for q in queries.captured_queries if ApiToken._meta.db_table in q["sql"]]
        assert len(lookups) == 30
        refused = self.guess(good)  # a good token from that address waits too
        assert refused.status_code == 429
        assert list(refused.json()["errors"]) == ["detail"]
        assert 1 <= int(refused["Retry-After"]) <= 60
        # A forged X-Forwarded-For changes nothing (API_NUM_PROXIES=0: the header is not
        # trusted); another address is counted apart.
        assert self.guess(good, **{"X-Forwarded-For": "203.0.113.9"}).status_code == 429
        assert self.guess(good, address="10.0.0.8").status_code == 200

    @override_settings(API_TOKEN_FAILURE_LIMIT=3)
    def test_the_count_is_per_minute(self) -> None:
        good = token_create(user=self.bob, name="ci").plain
        with mock.patch("sizing_site.tokens.throttling.time.time", return_value=6000.0):
            assert [self.guess("rs_bad").status_code for _ in range(4)] == [401, 401, 401, 429]
        with mock.patch("sizing_site.tokens.throttling.time.time", return_value=6060.0):
            assert self.guess(good).status_code == 200

    @override_settings(
        API_TOKEN_FAILURE_LIMIT=2,
        REST_FRAMEWORK={**django_settings.REST_FRAMEWORK, "NUM_PROXIES": 1},
    )
    def test_behind_a_proxy_the_address_it_forwards_is_counted(self) -> None:
        good = token_create(user=self.bob, name="ci").plain
        proxy = "127.0.0.1"
        for _ in range(2):
            self.guess("rs_bad", address=proxy, **{"X-Forwarded-For": "198.51.100.1"})
        assert (
            self.guess(good, address=proxy, **{"X-Forwarded-For": "198.51.100.1"}).status_code
            == 429
        )
        assert (
            self.guess(good, address=proxy, **{"X-Forwarded-For": "198.51.100.2"}).status_code
            == 200
        )
