"""Numbered pages for the API's lists that are not cursor-paged: `page` from 1 and
`page_size`, answered with the total `count`, `next`, `previous` and `results`.

One rule for a bad page across the API (the sweeps page their rows the same way): a
`page` that is not a whole number from 1 is a 400 naming it; a page past the last is a
404 naming it.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from rest_framework import exceptions
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.views import APIView


class NumberedPages(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def paginate_queryset(
        self, queryset: Any, request: Request, view: APIView | None = None
    ) -> list[Any] | None:
        asked = request.query_params.get(self.page_query_param)
        if asked is not None and not (asked.isascii() and asked.isdigit() and int(asked) >= 1):
            raise exceptions.ValidationError(
                {self.page_query_param: [_("Expected a whole number from 1.")]}
            )
        try:
            return super().paginate_queryset(queryset, request, view)
        except exceptions.NotFound:
            message = _("There is no page %(page)s.") % {"page": asked}
            raise exceptions.NotFound({self.page_query_param: [message]}) from None
