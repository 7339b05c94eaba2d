"""Writes for the inventory: create, update and delete a machine. Each write records who
made it in the machine's history (django-simple-history): set explicitly, so a write
through an API token is attributed as one through the pages is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction

from sizing_site.fleet.forms import MACHINE_FIELDS
from sizing_site.fleet.models import InventoryMachine
from sizing_site.tenancy.access import Tenant
from sizing_site.tenancy.models import Role


def _own(tenant: Tenant, machine: InventoryMachine) -> None:
    if machine.organization_id != tenant.organization.pk:
        raise PermissionDenied


def _assign(machine: InventoryMachine, values: Mapping[str, Any]) -> None:
    for name in MACHINE_FIELDS:
        if name in values:
            setattr(machine, name, values[name])


@transaction.atomic
def machine_create(*, tenant: Tenant, user: Any, values: Mapping[str, Any]) -> InventoryMachine:
    """A new machine of the tenant's organization from a MachineForm's cleaned data
    (editors)."""
    if not tenant.can(Role.EDITOR):
        raise PermissionDenied
    machine = InventoryMachine(organization=tenant.organization, created_by=user)
    _assign(machine, values)
    machine._history_user = user  # type: ignore[attr-defined]
    machine.full_clean()
    machine.save()
    return machine


@transaction.atomic
def machine_update(
    *, tenant: Tenant, user: Any, machine: InventoryMachine, values: Mapping[str, Any]
) -> InventoryMachine:
    """Change the fields in `values` (a MachineForm's cleaned data) (editors)."""
    if not tenant.can(Role.EDITOR):
        raise PermissionDenied
    _own(tenant, machine)
    _assign(machine, values)
    machine._history_user = user  # type: ignore[attr-defined]
    machine.full_clean()
    machine.save()
    return machine


@transaction.atomic
def machine_delete(*, tenant: Tenant, user: Any, machine: InventoryMachine) -> None:
    """Delete the machine (admins); its history keeps the deletion and who made it."""
    if not tenant.can(Role.ADMIN):
        raise PermissionDenied
    _own(tenant, machine)
    machine._history_user = user  # type: ignore[attr-defined]
    machine.delete()
