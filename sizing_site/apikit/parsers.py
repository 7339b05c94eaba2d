"""The API's JSON parser (settings.REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]). A module of
its own: DRF imports it while rest_framework.views is being defined, so it must not import
that module (sizing_site.apikit.errors does)."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.parsers import JSONParser

from catalog.limits import has_lone_surrogate


class JsonBodyParser(JSONParser):
    """DRF's JSON parser; a body nested too deeply for Python's parser is a 400 (it would
    raise RecursionError, a 500), and so is one with an unpaired surrogate ("\\ud800"):
    json makes a str of it that every view, serializer, database and response would fail
    to encode, so it is refused here once, for every endpoint."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError(_("The JSON is nested too deeply.")) from None
        if has_lone_surrogate(data):
            raise exceptions.ParseError(
                _("The JSON contains an unpaired surrogate (such as \\ud800), which is not text.")
            )
        return data
