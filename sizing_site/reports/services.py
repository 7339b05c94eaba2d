"""Writes for saved configurations, share links and the sharing policy; each one leaves an
entry in the org's activity log."""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime
from typing import Any, TypeVar

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from sizing_site.configurator.forms import ConfiguratorState
from sizing_site.reports import selectors
from sizing_site.reports.models import (
    Action,
    ActivityEntry,
    SavedConfiguration,
    ShareLink,
    SharePolicy,
    share_token_hash,
)
from sizing_site.tenancy.access import Tenant
from sizing_site.tenancy.models import Role, TenantOwned

# A share link model: ShareLink, or the planner's PlanShareLink.
L = TypeVar("L", bound=TenantOwned)


def new_share_link(
    model: type[L], *, tenant: Tenant, user: Any, expires_at: datetime | None, **subject: Any
) -> L:
    """A new share link of `model` (ShareLink, or the planner's PlanShareLink) to
    `subject` (its configuration= or plan=), with a fresh token, which the returned
    instance carries as `token`. The database keeps the token's SHA-256 only."""
    # 32 random bytes: 256 bits, far past guessing.
    token = secrets.token_urlsafe(32)
    manager: Any = model.all_tenants
    link: Any = manager.create(
        organization=tenant.organization,
        created_by=user,
        expires_at=expires_at,
        token_hash=share_token_hash(token),
        **subject,
    )
    link.token = token  # shown once, in the answer that creates it
    created: L = link
    return created


def revoke_share_link(*, tenant: Tenant, user: Any, link: Any) -> bool:
    """Revoke a share link (a ShareLink or the planner's PlanShareLink): editors revoke
    their own links; admins any link of the org. True when this call revoked it, False
    when it was revoked already."""
    if link.created_by_id != user.pk and not tenant.can(Role.ADMIN):
        raise PermissionDenied
    if link.revoked_at is not None:
        return False
    link.revoked_at = timezone.now()
    link.save(update_fields=["revoked_at"])
    return True


def _log(*, tenant: Tenant, actor: Any, action: str, subject: str) -> None:
    ActivityEntry.all_tenants.create(
        organization=tenant.organization, actor=actor, action=action, subject=subject[:200]
    )


@transaction.atomic
def saved_configuration_create(
    *,
    tenant: Tenant,
    user: Any,
    name: str,
    notes: str,
    tags: list[str],
    state: ConfiguratorState,
) -> SavedConfiguration:
    """Size the configurator state now and freeze the result. Raises StateError."""
    frozen = selectors.configuration_snapshot(state=state)
    configuration = SavedConfiguration.all_tenants.create(
        organization=tenant.organization,
        name=name,
        notes=notes,
        tags=tags,
        model_slug=state.model.slug,
        accelerator_slug=state.accelerator.slug,
        query=frozen.query,
        estimator_request=frozen.estimator_request,
        snapshot=frozen.snapshot,
        created_by=user,
    )
    _log(tenant=tenant, actor=user, action=Action.SAVED, subject=name)
    return configuration


@transaction.atomic
def saved_configuration_duplicate(
    *, tenant: Tenant, user: Any, configuration: SavedConfiguration, name: str | None = None
) -> SavedConfiguration:
    """A copy with the same frozen snapshot (not recomputed), saved by `user`; named "Copy
    of <name>" (cut to the name's 120 characters) unless `name` is given."""
    if name is None:
        name = (_("Copy of %(name)s") % {"name": configuration.name})[:120]
    copy = SavedConfiguration.all_tenants.create(
        organization=tenant.organization,
        name=name,
        notes=configuration.notes,
        tags=list(configuration.tags),
        model_slug=configuration.model_slug,
        accelerator_slug=configuration.accelerator_slug,
        query=configuration.query,
        estimator_request=configuration.estimator_request,
        snapshot=configuration.snapshot,
        created_by=user,
    )
    _log(tenant=tenant, actor=user, action=Action.DUPLICATED, subject=name)
    return copy


@transaction.atomic
def saved_configuration_rename(
    *, tenant: Tenant, user: Any, configuration: SavedConfiguration, name: str
) -> SavedConfiguration:
    old = configuration.name
    configuration.name = name
    configuration.save(update_fields=["name"])
    _log(tenant=tenant, actor=user, action=Action.RENAMED, subject=f"{old} → {name}")
    return configuration


@transaction.atomic
def saved_configuration_delete(
    *, tenant: Tenant, user: Any, configuration: SavedConfiguration
) -> dict[str, Any]:
    """Delete the configuration (its share links go with it) and return what
    `saved_configuration_restore` needs to bring it back, as JSON types (the web layer keeps
    it in the deleting user's session for the undo)."""
    trash = {
        "organization": tenant.organization.pk,
        "code": str(configuration.code),
        "name": configuration.name,
        "notes": configuration.notes,
        "tags": list(configuration.tags),
        "model_slug": configuration.model_slug,
        "accelerator_slug": configuration.accelerator_slug,
        "query": configuration.query,
        "estimator_request": configuration.estimator_request,
        "snapshot": configuration.snapshot,
        "created_by": configuration.created_by_id,
        "created": configuration.created.isoformat(),
        "deleted_at": timezone.now().isoformat(),
    }
    _log(tenant=tenant, actor=user, action=Action.DELETED, subject=configuration.name)
    configuration.delete()
    return trash


@transaction.atomic
def saved_configuration_restore(
    *, tenant: Tenant, user: Any, trash: dict[str, Any]
) -> SavedConfiguration:
    """Undo a delete: the configuration again, with its code (so old bookmarks work), its
    author and its date; its share links stay deleted. Raises PermissionDenied for another
    organization's row."""
    if trash.get("organization") != tenant.organization.pk:
        raise PermissionDenied
    code = uuid.UUID(trash["code"])
    if SavedConfiguration.all_tenants.filter(code=code).exists():
        code = uuid.uuid4()
    author_id = trash.get("created_by")
    author = get_user_model().objects.filter(pk=author_id).first() if author_id else None
    configuration = SavedConfiguration.all_tenants.create(
        organization=tenant.organization,
        code=code,
        name=trash["name"],
        notes=trash["notes"],
        tags=trash["tags"],
        model_slug=trash["model_slug"],
        accelerator_slug=trash["accelerator_slug"],
        query=trash["query"],
        estimator_request=trash["estimator_request"],
        snapshot=trash["snapshot"],
        created_by=author,
    )
    # `created` is set on insert (auto_now_add): put the original date back.
    created = datetime.fromisoformat(trash["created"])
    SavedConfiguration.all_tenants.filter(pk=configuration.pk).update(created=created)
    configuration.created = created
    _log(tenant=tenant, actor=user, action=Action.RESTORED, subject=configuration.name)
    return configuration


@transaction.atomic
def share_link_create(
    *,
    tenant: Tenant,
    user: Any,
    configuration: SavedConfiguration,
    expires_at: datetime | None,
) -> ShareLink:
    link = new_share_link(
        ShareLink, tenant=tenant, user=user, expires_at=expires_at, configuration=configuration
    )
    _log(tenant=tenant, actor=user, action=Action.SHARED, subject=configuration.name)
    return link


@transaction.atomic
def share_link_revoke(*, tenant: Tenant, user: Any, link: ShareLink) -> ShareLink:
    """Editors revoke their own links; admins any link of the org."""
    if revoke_share_link(tenant=tenant, user=user, link=link):
        _log(tenant=tenant, actor=user, action=Action.REVOKED, subject=link.configuration.name)
    return link


@transaction.atomic
def share_policy_update(*, tenant: Tenant, user: Any, public_links: bool) -> SharePolicy:
    policy, _ = SharePolicy.all_tenants.update_or_create(
        organization=tenant.organization, defaults={"public_links": public_links}
    )
    _log(
        tenant=tenant,
        actor=user,
        action=Action.LINKS_ON if public_links else Action.LINKS_OFF,
        subject=tenant.organization.name,
    )
    return policy
