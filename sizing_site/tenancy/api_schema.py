"""OpenAPI shapes of the organization member endpoints (tenancy.api)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse

from sizing_site.apikit.schema import NOT_A_MEMBER, NOT_LOGGED_IN, recorded
from sizing_site.tenancy.models import Role

MEMBERSHIP: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "format": "uuid", "description": "The membership's code."},
        "username": {"type": "string"},
        "role": {"type": "string", "enum": list(Role.values)},
    },
    "required": ["code", "username", "role"],
}
MEMBER_LIST: dict[str, Any] = {
    "type": "object",
    "properties": {
        "organization": {"type": "string", "description": "The organization's slug."},
        "members": {"type": "array", "items": MEMBERSHIP},
    },
    "required": ["organization", "members"],
}


def member_list_responses() -> dict[int, OpenApiResponse]:
    call = recorded()["members"]
    example = OpenApiExample("Members", value=call["response"], response_only=True)
    return {
        200: OpenApiResponse(response=MEMBER_LIST, examples=[example]),
        403: NOT_LOGGED_IN,
        404: NOT_A_MEMBER,
    }


def member_detail_responses() -> dict[int, OpenApiResponse]:
    member = recorded()["members"]["response"]["members"][0]
    example = OpenApiExample("Member", value=member, response_only=True)
    return {
        200: OpenApiResponse(response=MEMBERSHIP, examples=[example]),
        403: NOT_LOGGED_IN,
        404: NOT_A_MEMBER,
    }
