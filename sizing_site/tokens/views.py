"""The account's API tokens page: list, create (the plain token shown once), revoke."""

from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from sizing_site.tokens import services
from sizing_site.tokens.forms import TokenForm
from sizing_site.tokens.models import ApiToken


@never_cache
@login_required
def tokens(request: HttpRequest) -> HttpResponse:
    assert request.user.is_authenticated
    form = TokenForm(user=request.user)
    plain: str | None = None
    status = 200
    if request.method == "POST":
        form = TokenForm(request.POST, user=request.user)
        if form.is_valid():
            issued = services.token_create(user=request.user, **form.cleaned_data)
            # Shown in this response only: the database keeps its hash.
            plain = issued.plain
            form = TokenForm(user=request.user)
        else:
            status = 400
    rows = ApiToken.objects.filter(user=request.user).select_related("organization")
    context = {"form": form, "tokens": rows, "plain": plain, "now": timezone.now()}
    return render(request, "tokens/tokens.html", context, status=status)


@require_POST
@login_required
def token_revoke(request: HttpRequest) -> HttpResponse:
    try:
        code = UUID(request.POST.get("code", ""))
    except ValueError:
        raise Http404 from None
    token = ApiToken.objects.filter(user=request.user.pk, code=code).first()
    if token is None:  # another user's token is as absent as a missing one
        raise Http404
    services.token_revoke(token)
    messages.success(request, _("Token “%(name)s” revoked.") % {"name": token.name})
    return redirect("tokens:tokens")
