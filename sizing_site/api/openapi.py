"""How drf-spectacular reads the API (settings.REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]):
operation ids, and the API token's security scheme. No views here: DRF imports this
module while drf-spectacular's own views are being defined."""

from __future__ import annotations

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
        """drf-spectacular's, with the request guard's 400 (sizing_site.guards: a NUL
        character in the address or query, a query that is not UTF-8) on every operation
        that takes path or query parameters and documents no 400 of its own."""
        operation: dict[str, Any] | None = super().get_operation(*args, **kwargs)
        if operation is None or not operation.get("parameters"):
            return operation
        responses = operation.setdefault("responses", {})
        if "400" not in responses:
            from sizing_site.api.schema import ERRORS  # not at import: see the module's doc

            responses["400"] = {
                "description": "A NUL character in the address or query, or a query that is "
                "not UTF-8.",
                "content": {"application/json": {"schema": ERRORS}},
            }
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
