from __future__ import annotations

from urllib.parse import urlsplit

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import translation
from django.views import i18n
from django.views.decorators.cache import never_cache

from sizing_site.core.health import dependency_checks


def _is_staff(request: HttpRequest) -> bool:
    # Reading the user loads the session from the database; with the database down that
    # raises, and a health probe must then still answer "down", not 500.
    try:
        return bool(request.user.is_staff)
    except Exception:
        return False


@never_cache
def health(request: HttpRequest) -> JsonResponse:
    """Up or down for anyone (load balancers, probes); which dependency failed and the
    error's class only for staff, never its message (hosts, ports, credentials)."""
    checks = dependency_checks()
    down = any(check.state == "down" for check in checks)
    body: dict[str, object] = {"status": "down" if down else "up"}
    if _is_staff(request):
        body["checks"] = {check.name: check.state for check in checks}
        body["errors"] = {check.name: check.error for check in checks if check.error}
    return JsonResponse(body, status=503 if down else 200)


def live(request: HttpRequest) -> HttpResponse:
    """Liveness: answers without touching the database, cache or broker. A process
    supervisor restarts on its failure; the load benchmark uses it as the trivial view."""
    return HttpResponse("ok", content_type="text/plain")


def set_language(request: HttpRequest) -> HttpResponse:
    """Django's set_language, resolving next= in the language of its own prefix. Django
    translates next= by resolving it in the active language, which on this prefix-less
    address comes from the cookie: a German cookie left an /en/ address unresolved and the
    switch to German landed on /en/ again."""
    next_url = request.POST.get("next", request.GET.get("next")) or ""
    prefix = translation.get_language_from_path(urlsplit(next_url).path)
    with translation.override(prefix or translation.get_language()):
        return i18n.set_language(request)
