"""Numbered pages for the API's lists that are not cursor-paged: `page` from 1 and
`page_size`, answered with the total `count`, `next`, `previous` and `results`.

One rule for a bad page across the API (the sweeps page their rows the same way): a
`page` or `page_size` that is not a whole number from 1 is a 400 naming it; a page past
the last is a 404 naming it; a `page_size` past the maximum is the maximum.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.views import APIView


def whole_number(params: Mapping[str, str], name: str) -> int | None:
    """A paging parameter (`page`, `page_size`): None when absent, else a whole number
    from 1 or a 400 naming it. A size past any page's (ten digits and more) reads as 10**9:
    the paginators cap it at their own maximum anyway."""
    asked = params.get(name)
    if asked is None:
        return None
    if not (asked.isascii() and asked.isdigit() and asked.strip("0")):
        raise exceptions.ValidationError({name: [_("Expected a whole number from 1.")]})
    return int(asked) if len(asked) < 10 else 10**9


class NumberedPages(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def paginate_queryset(
        self, queryset: Any, request: Request, view: APIView | None = None
    ) -> list[Any] | None:
        asked = request.query_params.get(self.page_query_param)
        whole_number(request.query_params, self.page_query_param)
        whole_number(request.query_params, self.page_size_query_param)
        try:
            return super().paginate_queryset(queryset, request, view)
        except exceptions.NotFound:
            message = _("There is no page %(page)s.") % {"page": asked}
            raise exceptions.NotFound({self.page_query_param: [message]}) from None
