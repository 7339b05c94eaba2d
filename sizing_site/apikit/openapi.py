"""How drf-spectacular reads the API (settings.REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]):
operation ids, the refusals every operation may answer and what every body and parameter
refuses (no unknown field, no NUL, no blank required text; closed_request_bodies, a
postprocessing hook), and the API token's security scheme. No views here: DRF imports this
module while drf-spectacular's own views are being defined."""

from __future__ import annotations

import copy
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.plumbing import build_bearer_security_scheme_object


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's, with "<path>_list" as the operation id of a GET on a collection
    (a path that does not end in a parameter) also for plain API views, so a list and its
    detail never share an id."""

    def get_operation_id(self) -> str:
        operation_id: str = super().get_operation_id()
        collection = not self.path.rstrip("/").endswith("}")
        if self.method == "GET" and collection and operation_id.endswith("_retrieve"):
            return operation_id.removesuffix("_retrieve") + "_list"
        return operation_id

    def get_operation(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        """drf-spectacular's, with the refusals that come before or around any view on
        every operation that does not document its own (sizing_site.apikit.schema.
        limit_responses): the request guard's 400 (sizing_site.guards: a NUL character in
        the address or query, a query that is not UTF-8) where there are path or query
        parameters, a bad token's 401, gunicorn's 414 and 431, the throttles' 429, and for
        a body the body limit's 413 and the parsers' 415. Paging parameters start at 1."""
        operation: dict[str, Any] | None = super().get_operation(*args, **kwargs)
        if operation is None:
            return operation
        from sizing_site.apikit.schema import limit_responses  # not at import: see the module's doc

        for parameter in operation.get("parameters", []):
            # A copy: a parameter's schema may be a module's shared dict (api.schema.CONTEXT).
            parameter["schema"] = kind = copy.deepcopy(parameter.get("schema", {}))
            # Paging parameters are whole numbers from 1 everywhere (api.pagination).
            if parameter["in"] == "query" and parameter["name"] in ("page", "page_size"):
                kind.setdefault("minimum", 1)
            # The request guard refuses a NUL character anywhere in the address and query.
            if kind.get("type") == "string":
                _no_nul(kind)
            elif kind.get("type") == "array" and kind.get("items", {}).get("type") == "string":
                _no_nul(kind["items"])
        responses = operation.setdefault("responses", {})
        limits = limit_responses(
            parameters=bool(operation.get("parameters")), body="requestBody" in operation
        )
        for code, response in limits.items():
            responses.setdefault(code, response)
        operation["responses"] = dict(sorted(responses.items()))
        return operation


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """The API token (sizing_site.tokens): `Authorization: Bearer rs_...`."""

    target_class = "sizing_site.tokens.authentication.ApiTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        scheme: dict[str, Any] = build_bearer_security_scheme_object(
            header_name="AUTHORIZATION", token_prefix="Bearer"
        )
        return scheme


# No text the API takes may hold a NUL character: the request guard refuses one in the
# address and query, Django's and DRF's text fields in a body (sizing_site.guards).
NO_NUL = "^[^\\x00]*$"
# A required text field is stripped (Python's whitespace) and then must not be empty: it
# holds a character that is no whitespace to Python. Written for both regex dialects:
# ECMA's \s lacks Python's \x1c-\x1f and \x85, and holds \ufeff, which Python keeps.
NON_BLANK = "(?:[^\\s\\x1c-\\x1f\\x85]|\\ufeff)"


def closed_request_bodies(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """A postprocessing hook (SPECTACULAR_SETTINGS) over the bodies the API takes, the
    request components and the bodies written inline: every object refuses a field it does
    not name (400, "Unknown field."), so it says additionalProperties: false; no text may
    hold a NUL character; a body with required fields is itself required."""
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request"):
            _close(component)
    for item in result.get("paths", {}).values():
        for operation in item.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            if not body:
                continue
            for media in body.get("content", {}).values():
                # A copy: an inline body may share its dicts with a response's schema.
                media["schema"] = media_schema = copy.deepcopy(media.get("schema") or {})
                _close(media_schema)
                if media_schema.get("required") or _component(result, media_schema).get("required"):
                    body["required"] = True
    return result


def _component(result: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The component a {"$ref": ...} names, else {}."""
    ref = schema.get("$ref", "")
    found: dict[str, Any] = result["components"]["schemas"].get(ref.rsplit("/", 1)[-1], {})
    return found if ref else {}


def _close(schema: dict[str, Any]) -> None:
    """additionalProperties: false on an object with properties, and no NUL in its text,
    down through its properties, items and choices (not into open objects)."""
    if schema.get("type") == "object" and "properties" in schema:
        schema.setdefault("additionalProperties", False)
        for name, child in schema["properties"].items():
            # Required, or never blank when sent (DRF's minLength 1): stripped, not empty.
            if child.get("type") != "string" or {"enum", "format", "pattern"} & set(child):
                continue
            if name in schema.get("required", []) or child.get("minLength", 0) >= 1:
                child["pattern"] = NON_BLANK
    if schema.get("type") == "string":
        _no_nul(schema)
    for child in schema.get("properties", {}).values():
        _close(child)
    for key in ("oneOf", "anyOf", "allOf"):
        for child in schema.get(key, []):
            _close(child)
    if isinstance(schema.get("items"), dict):
        _close(schema["items"])


def _no_nul(schema: dict[str, Any]) -> None:
    """A string without NUL: a pattern of its own, or beside the one it has."""
    if {"enum", "format", "x-any-text"} & set(schema):
        return  # the choices and formats (uuid, date, uri, binary) hold none
    if "pattern" not in schema:
        schema["pattern"] = NO_NUL
    elif schema["pattern"] != NO_NUL and {"pattern": NO_NUL} not in schema.get("allOf", []):
        schema.setdefault("allOf", []).append({"pattern": NO_NUL})
