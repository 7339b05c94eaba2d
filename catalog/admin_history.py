"""The admin's change history (django-simple-history) for staff, with malformed addresses
answered 404: simple-history's own views pass the object id and the version id from the
address straight to the database, and a non-integer one raised a ValueError (a 500) on
every model with an integer key."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.utils import unquote
from django.core.exceptions import ValidationError
from django.db.models import Field
from django.http import Http404, HttpRequest, HttpResponse
from simple_history.admin import SimpleHistoryAdmin


def _require_key(field: Field[Any, Any], value: str) -> None:
    """Http404 unless `value` is a valid value of the key `field` (an integer for an
    AutoField), as an address naming no such row."""
    try:
        field.to_python(unquote(value))
    except (ValidationError, ValueError, TypeError) as exc:
        raise Http404 from exc


class HistoryAdmin(SimpleHistoryAdmin):
    """SimpleHistoryAdmin whose history list and history version pages check the ids in
    their address before any query."""

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        _require_key(self.model._meta.pk, object_id)
        return super().history_view(request, object_id, extra_context)

    def history_form_view(
        self,
        request: HttpRequest,
        object_id: str,
        version_id: str,
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        _require_key(self.model._meta.pk, object_id)
        _require_key(self.model.history.model._meta.pk, version_id)
        return super().history_form_view(request, object_id, version_id, extra_context)
