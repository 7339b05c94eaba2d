"""Writes for saved configurations, their share links and the sharing policy; each one
leaves an entry in the org's activity log. Share links and the policy themselves are
sizing_site.sharing's; snapshots are written as ConfigurationSnapshot.to_json()."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from sizing_site.configurator.state import ConfiguratorState
from sizing_site.reports import selectors
from sizing_site.reports.models import Action, ActivityEntry, SavedConfiguration, ShareLink
from sizing_site.reports.snapshots import ConfigurationSnapshot
from sizing_site.sharing import services as sharing
from sizing_site.sharing.models import SharePolicy
from sizing_site.tenancy.access import Tenant


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
    data: Mapping[str, Any] | None = None,
) -> SavedConfiguration:
    """Freeze the configurator state, sized now (configurator.state.configuration_size),
    with the answer panel's cost at the rent-or-buy figures in `data` (the configurator's
    query as sent; None: the catalog's defaults)."""
    frozen = selectors.configuration_snapshot(state=state, data=data)
    configuration = SavedConfiguration.all_tenants.create(
        organization=tenant.organization,
        name=name,
        notes=notes,
        tags=tags,
        model_slug=state.model.slug,
        accelerator_slug=state.accelerator.slug,
        query=frozen.query,
        estimator_request=frozen.estimator_request,
        snapshot=frozen.snapshot.to_json(),
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
        snapshot=configuration.frozen.to_json(),
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
        snapshot=ConfigurationSnapshot.from_json(trash["snapshot"]).to_json(),
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
    link = sharing.share_link_create(
        ShareLink, tenant=tenant, user=user, subject=configuration, expires_at=expires_at
    )
    _log(tenant=tenant, actor=user, action=Action.SHARED, subject=configuration.name)
    return link


@transaction.atomic
def share_link_revoke(*, tenant: Tenant, user: Any, link: ShareLink) -> ShareLink:
    """Editors revoke their own links; admins any link of the org (PermissionDenied)."""
    if sharing.share_link_revoke(tenant=tenant, user=user, link=link):
        _log(tenant=tenant, actor=user, action=Action.REVOKED, subject=link.configuration.name)
    return link


@transaction.atomic
def share_policy_update(*, tenant: Tenant, user: Any, public_links: bool) -> SharePolicy:
    policy = sharing.share_policy_update(tenant=tenant, public_links=public_links)
    _log(
        tenant=tenant,
        actor=user,
        action=Action.LINKS_ON if public_links else Action.LINKS_OFF,
        subject=tenant.organization.name,
    )
    return policy
