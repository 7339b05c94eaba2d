"""Reads for share links, whichever saved thing they show, and for the sharing policy."""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import Q
from django.http import Http404
from django.utils import timezone

from sizing_site.sharing.models import ShareLinkBase, SharePolicy, share_token_hash
from sizing_site.tenancy.access import Tenant

L = TypeVar("L", bound=ShareLinkBase)


def live_links_q() -> Q:
    """Share links that still open: not revoked, not expired."""
    now = timezone.now()
    return Q(revoked_at__isnull=True) & (Q(expires_at__isnull=True) | Q(expires_at__gt=now))


def public_links_allowed(*, tenant: Tenant) -> bool:
    """The org's policy: no policy row means public links are allowed."""
    policy = tenant.scoped(SharePolicy).first()
    return policy is None or policy.public_links


def share_link_resolve(model: type[L], *, token: str) -> L:
    """The live link of `model` (a concrete ShareLinkBase) behind a token, its subject and
    organization joined; 404 for unknown, revoked or expired tokens and for every token of
    an org that turned public links off.

    The token is the only credential here, so this is the one lookup not scoped by a
    Tenant: it looks inside all orgs' links by the token's hash, then scopes the policy to
    the link's org."""
    manager: Any = model.all_tenants
    link: L | None = (
        manager.select_related(model.subject_field, "organization")
        .filter(token_hash=share_token_hash(token), revoked_at__isnull=True)
        .first()
    )
    if link is None or (link.expires_at is not None and link.expires_at <= timezone.now()):
        raise Http404
    policy = SharePolicy.objects.for_organization(link.organization).first()
    if policy is not None and not policy.public_links:
        raise Http404
    return link
