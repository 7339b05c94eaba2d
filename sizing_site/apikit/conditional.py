"""Conditional reads for the API: private, always-revalidated GET answers and the entity
tags of If-None-Match. The catalog and the price lists answer 304 from them."""

from __future__ import annotations

from typing import Any

from django.utils.cache import patch_vary_headers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


class RevalidatedReads(APIView):
    """GET and HEAD answers are private and revalidated every time (an ETag answers the
    revalidation): they differ by caller (Accept, Cookie, Authorization)."""

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        if request.method in ("GET", "HEAD"):
            response["Cache-Control"] = "private, no-cache"
            patch_vary_headers(response, ("Accept", "Cookie", "Authorization"))
        return response


def if_none_match_etags(header: str) -> set[str]:
    """The entity tags of If-None-Match, weak ones compared weakly (RFC 9110 13.1.2)."""
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()} | (
        {"*"} if header.strip() == "*" else set()
    )
