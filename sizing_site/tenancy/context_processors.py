from __future__ import annotations

from functools import partial

from django.http import HttpRequest

from sizing_site.tenancy.selectors import membership_list_for_user


def organizations(request: HttpRequest) -> dict[str, object]:
    """The signed-in user's organizations, for the org switcher in the base template."""
    # A callable: templates evaluate it only on pages that render the switcher.
    return {"user_memberships": partial(membership_list_for_user, user=request.user)}
