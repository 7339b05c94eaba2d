"""Reads of API tokens: a user's own rows (tokens belong to a user, not to an org)."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from catalog.scoping import Owner
from sizing_site.tokens.models import ApiToken


def token_list_reaching(*, user: Any, organization: Owner) -> QuerySet[ApiToken]:
    """The user's live tokens (not revoked, not expired) that reach `organization`'s
    routes: those limited to it and those for all the user's organizations."""
    now = timezone.now()
    return ApiToken.objects.filter(
        Q(organization__isnull=True) | Q(organization=organization.pk),
        Q(expires_at__isnull=True) | Q(expires_at__gt=now),
        user=user.pk,
        revoked_at__isnull=True,
    )
