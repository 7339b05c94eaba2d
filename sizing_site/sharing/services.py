"""Writes for share links, whichever saved thing they show, and for the sharing policy.

The activity log is the saved things' apps' (reports.ActivityEntry): their own share
services (reports.services.share_link_create, planner.services.plan_share_link_create, ...)
call these and log what happened under their subject's name."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any, TypeVar

from django.core.exceptions import PermissionDenied
from django.utils import timezone

from sizing_site.sharing.models import ShareLinkBase, SharePolicy, share_token_hash
from sizing_site.tenancy.access import Tenant
from sizing_site.tenancy.models import Role

L = TypeVar("L", bound=ShareLinkBase)


def share_link_create(
    model: type[L], *, tenant: Tenant, user: Any, subject: Any, expires_at: datetime | None
) -> L:
    """A new link of `model` (a concrete ShareLinkBase) to `subject` with a fresh token,
    which the returned instance carries as `token`. The database keeps the token's SHA-256
    only. Callers check the policy first (forms.share_form, api.new_link_expiry)."""
    # 32 random bytes: 256 bits, far past guessing.
    token = secrets.token_urlsafe(32)
    manager: Any = model.all_tenants
    link: L = manager.create(
        organization=tenant.organization,
        created_by=user,
        expires_at=expires_at,
        token_hash=share_token_hash(token),
        **{model.subject_field: subject},
    )
    link.token = token  # shown once, in the answer that creates it
    return link


def share_link_revoke(*, tenant: Tenant, user: Any, link: ShareLinkBase) -> bool:
    """Revoke a share link: editors revoke their own links, admins any link of the org
    (PermissionDenied otherwise). True when this call revoked it, False when it was
    revoked already."""
    if link.created_by_id != user.pk and not tenant.can(Role.ADMIN):
        raise PermissionDenied
    if link.revoked_at is not None:
        return False
    link.revoked_at = timezone.now()
    link.save(update_fields=["revoked_at"])
    return True


def share_policy_update(*, tenant: Tenant, public_links: bool) -> SharePolicy:
    """Allow or forbid the org's public links: all of them at once, old ones included
    (selectors.share_link_resolve reads the policy on every open)."""
    policy, _created = SharePolicy.all_tenants.update_or_create(
        organization=tenant.organization, defaults={"public_links": public_links}
    )
    return policy
