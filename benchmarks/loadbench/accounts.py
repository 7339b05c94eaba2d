"""Who the clients act as besides the bench user: its API token, its admin membership of
seed_demo's organization, and the abuse run's viewer with a read-only token. Each made by
the project's own services in `manage.py shell`, as the portal's pages make them."""

from __future__ import annotations

from pathlib import Path

from .server import USER, manage, shell_output

PLANNER_ORG = "demo"  # seed_demo's organization
ABUSER = "abuser"  # a viewer of PLANNER_ORG with a read-only token


def api_token(root: Path, env: dict[str, str]) -> str:
    """An API token of the bench user (sizing_site.tokens), as its owner sees it once."""
    code = (
        "from django.contrib.auth.models import User; "
        "from sizing_site.tokens.services import token_create; "
        f"print(token_create(user=User.objects.get(username={USER!r}), name='bench').plain)"
    )
    return shell_output(root, env, code)


def json_headers(token: str) -> dict[str, str]:
    """The headers of an API call with a JSON body, authenticated by `token`."""
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


def join_demo_org(root: Path, env: dict[str, str]) -> None:
    """seed_demo (the demo organization and its inventory machine), the bench user an admin."""
    manage(root, env, "seed_demo", "--allow-production")
    code = (
        "from django.contrib.auth.models import User; "
        "from sizing_site.tenancy.models import Membership, Organization, Role; "
        f"Membership.all_tenants.get_or_create(user=User.objects.get(username={USER!r}), "
        f"organization=Organization.objects.get(slug={PLANNER_ORG!r}), "
        "defaults={'role': Role.ADMIN})"
    )
    manage(root, env, "shell", "-c", code)


def abuser_token(root: Path, env: dict[str, str]) -> str:
    """A viewer of the demo organization and its read-only API token (limited to that
    organization), made by the token service as the tokens page makes one."""
    code = (
        "from django.contrib.auth.models import User; "
        "from sizing_site.tenancy.models import Membership, Organization, Role; "
        "from sizing_site.tokens.services import token_create; "
        f"org = Organization.objects.get(slug={PLANNER_ORG!r}); "
        f"user = User.objects.create_user({ABUSER!r}); "
        "Membership.all_tenants.create(user=user, organization=org, role=Role.VIEWER); "
        "print(token_create(user=user, name='abuse', organization=org, read_only=True).plain)"
    )
    return shell_output(root, env, code)
