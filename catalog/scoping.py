"""Fail-closed managers for rows an organisation owns: the one scoping design of the portal.

Tenant-owned rows (saved configurations, memberships, ...) and org-optional rows (a cloud
offer that is public or one organisation's negotiated price) are reached only through a
manager whose `get_queryset()` raises, so `Model.objects.all()` or `.filter(...)` without
naming the organisation is an error rather than a leak. Admin, migrations and services that
write every row use the model's loudly named unscoped manager (`all_tenants`, `all_orgs`).

It lives in `catalog`, the lowest Django layer, so every layer above can share it: the
organisation model itself is the web layer's (`tenancy.Organization`), and the layers below
it see an organisation only as an `Owner`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from django.db import models
from django.db.models import Q


class TenantRequired(LookupError):
    """A scoped table was queried without naming the organisation."""


class Owner(Protocol):
    """The organisation a row belongs to, as the layers below the web layer see it."""

    @property
    def pk(self) -> Any: ...

    @property
    def name(self) -> str: ...


class TenantManager(models.Manager[Any]):
    """Rows that each belong to one organisation; every read names it.

    Subclasses add other named ways in (a user's own memberships, the public rows) built on
    `_unscoped()`, and list them in `scopes` so the error says what to call instead.
    """

    scopes: ClassVar[tuple[str, ...]] = ("for_organization",)

    def get_queryset(self) -> models.QuerySet[Any]:
        ways = ", ".join(f".{scope}()" for scope in self.scopes)
        raise TenantRequired(f"{self.model.__name__}.objects needs a scope: use {ways}")

    def _unscoped(self) -> models.QuerySet[Any]:
        """Every row: only for the named scopes of this manager and its subclasses."""
        return super().get_queryset()

    def for_organization(self, organization: Owner | None) -> models.QuerySet[Any]:
        """Only the organisation's own rows (what the web layer's `Tenant.scoped()` calls)."""
        if organization is None or organization.pk is None:
            raise TenantRequired(f"{self.model.__name__}: no organization given")
        return self._unscoped().filter(organization=organization)


class OrgOptionalManager(TenantManager):
    """Rows that are public (no organisation) or owned by one organisation."""

    scopes = ("public", "visible_to", "for_organization")

    def public(self) -> models.QuerySet[Any]:
        return self._unscoped().filter(organization__isnull=True)

    def visible_to(self, organizations: Sequence[Owner]) -> models.QuerySet[Any]:
        """Public rows plus those of the given organisations (the caller's memberships)."""
        return self._unscoped().filter(
            Q(organization__isnull=True) | Q(organization__in=[o.pk for o in organizations])
        )


class CatalogManager(OrgOptionalManager):
    """Catalog rows (models, accelerators): the public catalog, plus rows one organisation
    added for itself (a fine-tune, an in-house accelerator).

    Unlike the other scoped managers a plain read does not raise: the whole portal reads
    the public catalog, so `get_queryset()` is the public rows. It stays fail-closed, as an
    unscoped read can never return an organisation's row; pages that show them name the
    caller's organisations with `visible_to()` or `for_organization()`. The model's
    `all_orgs` manager is every row, for admin and the seed.
    """

    def get_queryset(self) -> models.QuerySet[Any]:
        return self.public()
