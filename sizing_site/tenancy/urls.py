from django.urls import path

from sizing_site.tenancy import views

app_name = "tenancy"

urlpatterns = [
    path("orgs/", views.orgs, name="orgs"),
    path("invitations/", views.invitations, name="invitations"),
    path("o/<slug:org_slug>/", views.dashboard, name="dashboard"),
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
