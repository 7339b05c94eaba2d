"""Creating, finding and revoking API tokens."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from sizing_site.tenancy.models import Organization
from sizing_site.tokens.models import ApiToken

TOKEN_START = "rs_"
PREFIX_LENGTH = 8
# last_used_at is written at most once a minute per token, not once per request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    plain: str  # shown to its owner once, never stored


def token_create(
    *,
    user: User,
    name: str,
    expires_in_days: int | None = None,
    organization: Organization | None = None,
    read_only: bool = False,
) -> IssuedToken:
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
    for _attempt in range(5):
        prefix = secrets.token_hex(PREFIX_LENGTH // 2)
        plain = f"{TOKEN_START}{prefix}_{secrets.token_urlsafe(32)}"
        try:
            with transaction.atomic():
                token = ApiToken.objects.create(
                    user=user,
                    name=name,
                    prefix=prefix,
                    key_hash=hash_token(plain),
                    expires_at=expires_at,
                    organization=organization,
                    read_only=read_only,
                )
        except IntegrityError:  # a prefix already taken (1 in 4 billion): draw again
            continue
        return IssuedToken(token=token, plain=plain)
    raise RuntimeError("no free token prefix after 5 draws")


def token_for(plain: str) -> ApiToken | None:
    """The live token this string is, or None (malformed, unknown, revoked or expired)."""
    start, end = len(TOKEN_START), len(TOKEN_START) + PREFIX_LENGTH
    if not plain.startswith(TOKEN_START) or plain[end : end + 1] != "_":
        return None
    prefix = plain[start:end]
    token = ApiToken.objects.select_related("user", "organization").filter(prefix=prefix).first()
    if token is None or not hmac.compare_digest(hash_token(plain), token.key_hash):
        return None
    if not token.is_active() or not token.user.is_active:
        return None
    return token


def token_touch(token: ApiToken) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


def token_revoke(token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
