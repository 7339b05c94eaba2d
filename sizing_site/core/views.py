from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache

from sizing_site.core.health import dependency_status


@never_cache
def health(request: HttpRequest) -> JsonResponse:
    checks = dependency_status()
    down = sorted(name for name, state in checks.items() if state.startswith("down"))
    body = {"status": "down" if down else "ok", "down": down, "checks": checks}
    return JsonResponse(body, status=503 if down else 200)
