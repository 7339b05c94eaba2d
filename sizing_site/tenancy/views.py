from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters

from sizing_site.tenancy import services
from sizing_site.tenancy.access import (
    SignupRefused,
    Tenant,
    invitation_for_invitee,
    invitation_for_signup,
    tenant_for,
)
from sizing_site.tenancy.forms import InvitationForm, RoleForm, SignupForm
from sizing_site.tenancy.models import Organization, Role
from sizing_site.tenancy.selectors import (
    demo_login_seeded,
    invitation_list,
    invitation_list_for_user,
    membership_list,
    membership_list_for_user,
    signup_list,
)
from sizing_site.tenancy.throttle import signup_failed, signup_locked


class LoginView(auth_views.LoginView):
    """Django's login page, naming the demo login on an instance seed_demo has seeded."""

    def get_context_data(self, **kwargs: object) -> dict[str, object]:
        return {**super().get_context_data(**kwargs), "demo_login": demo_login_seeded()}


def _invited_message() -> str:
    # The same answer whether or not an account matches: admins must not learn which exist.
    return _(
        "Invitation recorded; the person sees it when they sign in with that address or username."
    )


@login_required
def orgs(request: HttpRequest) -> HttpResponse:
    memberships = membership_list_for_user(user=request.user)
    invitations = invitation_list_for_user(user=request.user)
    if len(memberships) == 1 and not invitations:
        return redirect("tenancy:dashboard", org_slug=memberships[0].organization.slug)
    context = {"memberships": memberships, "invitations": invitations}
    return render(request, "tenancy/home.html", context)


@login_required
def members(request: HttpRequest, org_slug: str) -> HttpResponse:
    # Members see the list; only admins post invitations (one membership lookup either way).
    posting = request.method == "POST"
    tenant = tenant_for(request.user, org_slug, min_role=Role.ADMIN if posting else Role.VIEWER)
    form = InvitationForm()
    if posting:
        form = InvitationForm(request.POST)
        if form.is_valid():
            try:
                invitation = services.invitation_create(tenant=tenant, **form.cleaned_data)
            except services.MembershipError as exc:
                form.add_error("identifier", str(exc))
            else:
                messages.success(request, _invited_message())
                if not invitation.signup_token:
                    return redirect("tenancy:members", org_slug=org_slug)
                # Rendered by the POST itself: the sign-up link is shown this once.
                link = signup_address(request, invitation.signup_token)
                return _members_page(request, tenant, InvitationForm(), status=200, link=link)
    return _members_page(request, tenant, form, status=400 if form.errors else 200)


def signup_address(request: HttpRequest, token: str) -> str:
    """A sign-up link's address, without a language prefix (as a share link's): the
    invitee gets the page in their own language."""
    path = reverse("tenancy:signup", args=[token])
    prefix = translation.get_language_from_path(path)
    return request.build_absolute_uri(path.removeprefix(f"/{prefix}") if prefix else path)


def _members_page(
    request: HttpRequest, tenant: Tenant, form: InvitationForm, *, status: int, link: str = ""
) -> HttpResponse:
    is_admin = tenant.can(Role.ADMIN)
    context = {
        "tenant": tenant,
        "is_admin": is_admin,
        "memberships": membership_list(tenant=tenant),
        "invitations": invitation_list(tenant=tenant) if is_admin else [],
        "signups": signup_list(tenant=tenant) if is_admin else [],
        "signup_url": link,
        "form": form,
        "roles": Role.choices,
        "invitation_days": services.INVITATION_LIFETIME.days,
    }
    return render(request, "tenancy/members.html", context, status=status)


def _conflict(request: HttpRequest, tenant: Tenant, exc: services.MembershipError) -> HttpResponse:
    """Another admin's change held the rows on every try: the members page as it is now,
    the message on it, 409 (nothing was changed)."""
    messages.error(request, str(exc))
    return _members_page(request, tenant, InvitationForm(), status=409)


@login_required
def member_role(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    # Tenant first, method second: outsiders get the same 404 whatever the method.
    tenant = tenant_for(request.user, org_slug, min_role=Role.ADMIN)
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose a valid role."))
        return redirect("tenancy:members", org_slug=org_slug)
    try:
        services.membership_change_role(tenant=tenant, code=code, role=form.cleaned_data["role"])
    except services.MembershipConflict as exc:
        return _conflict(request, tenant, exc)
    except services.MembershipError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Role changed."))
    return redirect("tenancy:members", org_slug=org_slug)


def _admin_post(
    request: HttpRequest,
    org_slug: str,
    code: UUID,
    action: Callable[..., object],
    done: str,
) -> HttpResponse:
    """An admin's POST on one row of the members page: run `action`, say how it went."""
    # Tenant first, method second: outsiders get the same 404 whatever the method.
    tenant = tenant_for(request.user, org_slug, min_role=Role.ADMIN)
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    try:
        action(tenant=tenant, code=code)
    except services.MembershipConflict as exc:
        return _conflict(request, tenant, exc)
    except services.MembershipError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, done)
    return redirect("tenancy:members", org_slug=org_slug)


@login_required
def member_remove(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    return _admin_post(request, org_slug, code, services.membership_remove, _("Member removed."))


@login_required
def invitation_revoke(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    return _admin_post(
        request, org_slug, code, services.invitation_revoke, _("Invitation revoked.")
    )


@login_required
def invitations(request: HttpRequest) -> HttpResponse:
    context = {"invitations": invitation_list_for_user(user=request.user)}
    return render(request, "tenancy/invitations.html", context)


def _invitee_post(
    request: HttpRequest,
    org_slug: str,
    code: UUID,
    action: Callable[..., object],
    done: Callable[[Organization], str],
    then: str,
) -> HttpResponse:
    """The invitee's POST on one of their invitations: run `action`, say `done(org)` and go
    to `then`, or back to their invitations when it failed."""
    # Invitee first, method second: anyone else gets the same 404 whatever the method.
    invitee = invitation_for_invitee(request.user, org_slug, code)
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    try:
        action(invitee=invitee)
    except services.MembershipError as exc:
        messages.error(request, str(exc))
        return redirect("tenancy:invitations")
    messages.success(request, done(invitee.invitation.organization))
    return redirect(then)


@login_required
def invitation_accept(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    def done(org: Organization) -> str:
        return _("You joined %(org)s.") % {"org": org.name}

    dashboard = reverse("tenancy:dashboard", kwargs={"org_slug": org_slug})
    return _invitee_post(request, org_slug, code, services.invitation_accept, done, dashboard)


@login_required
def invitation_decline(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    return _invitee_post(
        request,
        org_slug,
        code,
        services.invitation_decline,
        lambda org: _("Invitation declined."),
        "tenancy:invitations",
    )


@login_required
def signup_approve(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    return _admin_post(
        request, org_slug, code, services.signup_approve, _("Account approved; it may sign in now.")
    )


@login_required
def signup_reject(request: HttpRequest, org_slug: str, code: UUID) -> HttpResponse:
    return _admin_post(
        request,
        org_slug,
        code,
        services.signup_reject,
        _("Sign-up rejected; the account is deleted."),
    )


@never_cache
@sensitive_post_parameters("password1", "password2")
def signup(request: HttpRequest, token: str) -> HttpResponse:
    """An invitee without an account makes one from the link the admin passed on: the
    account is inactive until an org admin approves it. Links that do not open count as
    failed logins from this address (tenancy.throttle)."""
    if signup_locked(request):
        return _signup_refused(request, _locked_message(), status=429)
    try:
        invitation = invitation_for_signup(token)
    except SignupRefused as exc:
        if signup_failed(request):
            return _signup_refused(request, _locked_message(), status=429)
        return _signup_refused(request, str(exc), status=exc.status)
    form = SignupForm(request.POST if request.method == "POST" else None)
    if form.is_valid():
        try:
            services.signup_complete(
                invitation=invitation,
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password1"],
            )
        except services.MembershipError as exc:
            form.add_error(None, str(exc))
        else:
            context = {"organization": invitation.organization, "done": True}
            return render(request, "tenancy/signup.html", context)
    context = {"organization": invitation.organization, "invitation": invitation, "form": form}
    return render(request, "tenancy/signup.html", context, status=400 if form.errors else 200)


def _locked_message() -> str:
    return _("Too many sign-up links from your address did not open; try again later.")


def _signup_refused(request: HttpRequest, message: str, *, status: int) -> HttpResponse:
    return render(request, "tenancy/signup.html", {"refused": message}, status=status)
