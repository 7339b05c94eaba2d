"""Both login pages go through django-axes: repeated wrong passwords for one username from
one address are answered 429 for the cool-off, even with the right password."""

from __future__ import annotations

from datetime import timedelta

from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import User
from django.test import TestCase, override_settings
from django.utils import timezone
from django.utils.translation import override

SITE_LOGIN = "/en/accounts/login/"
ADMIN_LOGIN = "/admin/login/"

# The configuration under test (sizing_site/settings.py): 10 failures per username and
# address, 15 minutes' cool-off, answered with 429.
LIMIT = 10
COOL_OFF = timedelta(minutes=15)


# A fast hasher: these tests check hundreds of passwords, and the count is what matters here.
@override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"])
class LoginThrottleTests(TestCase):
    alice: User

    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = User.objects.create_user(
            "alice", "alice@a.example", "pw-alice-123", is_staff=True
        )

    def attempt(self, page: str, password: str, **extra: str) -> int:
        data = {"username": "alice", "password": password}
        return self.client.post(page, data, **extra).status_code  # type: ignore[arg-type]

    def wrong_passwords(self, page: str, count: int, **extra: str) -> list[int]:
        return [self.attempt(page, f"wrong-{n}", **extra) for n in range(count)]

    def test_the_settings_are_the_ones_this_file_assumes(self) -> None:
        assert settings.AXES_FAILURE_LIMIT == LIMIT
        assert settings.AXES_COOLOFF_TIME == COOL_OFF
        assert settings.AXES_HTTP_RESPONSE_CODE == 429
        assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]
        assert settings.AXES_RESET_ON_SUCCESS is True

    def test_the_site_login_throttles_the_tenth_wrong_password_and_every_later_one(self) -> None:
        # Failures 1-9 get the form back (200); the 10th reaches the limit and is itself
        # answered 429, as are the 11th and the 12th.
        statuses = self.wrong_passwords(SITE_LOGIN, 12)
        assert statuses == [200] * (LIMIT - 1) + [429] * 3
        assert statuses[11] == 429  # the 12th wrong password in a row

    def test_the_admin_login_is_throttled_the_same_way(self) -> None:
        statuses = self.wrong_passwords(ADMIN_LOGIN, 12)
        assert statuses == [200] * (LIMIT - 1) + [429] * 3

    def test_the_two_pages_share_one_counter(self) -> None:
        # 5 on one page + 4 on the other = 9 failures; the next one on either page is the 10th.
        self.wrong_passwords(SITE_LOGIN, 5)
        assert self.wrong_passwords(ADMIN_LOGIN, 4) == [200] * 4
        assert self.attempt(SITE_LOGIN, "wrong-again") == 429

    def test_the_right_password_is_refused_while_locked(self) -> None:
        self.wrong_passwords(SITE_LOGIN, LIMIT)
        assert self.attempt(SITE_LOGIN, "pw-alice-123") == 429
        assert self.attempt(ADMIN_LOGIN, "pw-alice-123") == 429
        assert "_auth_user_id" not in self.client.session

    def test_a_success_resets_the_counter(self) -> None:
        assert self.wrong_passwords(SITE_LOGIN, LIMIT - 1) == [200] * (LIMIT - 1)
        assert self.attempt(SITE_LOGIN, "pw-alice-123") == 302
        self.client.logout()
        # Counting starts again from zero: 9 more failures are answered normally.
        assert self.wrong_passwords(SITE_LOGIN, LIMIT - 1) == [200] * (LIMIT - 1)
        assert self.attempt(SITE_LOGIN, "wrong-last") == 429

    def test_the_lock_is_per_username_and_address(self) -> None:
        self.wrong_passwords(SITE_LOGIN, LIMIT)
        User.objects.create_user("bob", "bob@a.example", "pw-bob-123")
        bob = {"username": "bob", "password": "pw-bob-123"}
        assert self.client.post(SITE_LOGIN, bob).status_code == 302
        self.client.logout()
        other_address = {"REMOTE_ADDR": "192.0.2.7"}
        assert self.attempt(SITE_LOGIN, "pw-alice-123", **other_address) == 302

    def test_the_lock_lifts_after_the_cool_off(self) -> None:
        self.wrong_passwords(SITE_LOGIN, LIMIT)
        assert self.attempt(SITE_LOGIN, "pw-alice-123") == 429
        # Age the recorded failures past the 15-minute cool-off instead of sleeping.
        past = timezone.now() - COOL_OFF - timedelta(seconds=1)
        AccessAttempt.objects.update(attempt_time=past)
        assert self.attempt(SITE_LOGIN, "pw-alice-123") == 302

    def test_the_lockout_page_is_configured(self) -> None:
        # Set by the lead in settings; getattr because django-stubs does not know it.
        assert getattr(settings, "AXES_LOCKOUT_TEMPLATE", None) == "registration/locked.html"

    def test_the_lockout_page_explains_the_wait(self) -> None:
        with override("en"):
            self.wrong_passwords(SITE_LOGIN, LIMIT - 1)
            response = self.client.post(SITE_LOGIN, {"username": "alice", "password": "x"})
        assert response.status_code == 429
        # The login view renders first; the middleware swaps in the lockout page.
        assert "registration/locked.html" in [t.name for t in response.templates]
        page = response.content.decode()
        assert "Too many failed logins" in page
        assert "paused after 10 failed attempts in a row" in page
        assert "Try again in 15 minutes." in page
