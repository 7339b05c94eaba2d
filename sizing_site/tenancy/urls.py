from django.urls import path

from sizing_site.tenancy import views

app_name = "tenancy"

urlpatterns = [
    path("orgs/", views.orgs, name="orgs"),
    path("invitations/", views.invitations, name="invitations"),
    # "o/<slug:org_slug>/" (name "dashboard"), the org's overview, reads every app's rows:
    # sizing_site.orgarea, above the apps, routes it in this namespace (sizing_site/urls.py).
    path("o/<slug:org_slug>/members/", views.members, name="members"),
    path("o/<slug:org_slug>/members/<uuid:code>/role/", views.member_role, name="member-role"),
    path(
        "o/<slug:org_slug>/members/<uuid:code>/remove/", views.member_remove, name="member-remove"
    ),
    # Admin side: the org's own invitations.
    path(
        "o/<slug:org_slug>/members/invitations/<uuid:code>/revoke/",
        views.invitation_revoke,
        name="invitation-revoke",
    ),
    # Admin side: accounts made through sign-up links, awaiting approval.
    path(
        "o/<slug:org_slug>/members/signups/<uuid:code>/approve/",
        views.signup_approve,
        name="signup-approve",
    ),
    path(
        "o/<slug:org_slug>/members/signups/<uuid:code>/reject/",
        views.signup_reject,
        name="signup-reject",
    ),
    # A sign-up link (public: the token is the credential, as a share link's).
    path("join/<str:token>/", views.signup, name="signup"),
    # Invitee side: the org is in the path, the lookup is among the user's own invitations.
    path(
        "o/<slug:org_slug>/invitations/<uuid:code>/accept/",
        views.invitation_accept,
        name="invitation-accept",
    ),
    path(
        "o/<slug:org_slug>/invitations/<uuid:code>/decline/",
        views.invitation_decline,
        name="invitation-decline",
    ),
]
