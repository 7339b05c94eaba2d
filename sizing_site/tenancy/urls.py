from django.urls import URLPattern, URLResolver, include, path

from sizing_site.tenancy import api, views

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

api_urlpatterns: list[URLPattern | URLResolver] = [
    path("", include("sizing_site.api.urls")),  # POST estimate/
    path("o/<slug:org_slug>/members/", api.MemberListApi.as_view(), name="api-members"),
    path(
        "o/<slug:org_slug>/members/<uuid:code>/",
        api.MemberDetailApi.as_view(),
        name="api-member-detail",
    ),
    # Invitations. Admin side: the org's own.
    path(
        "o/<slug:org_slug>/members/invitations/",
        api.InvitationListApi.as_view(),
        name="api-invitations",
    ),
    path(
        "o/<slug:org_slug>/members/invitations/<uuid:code>/",
        api.InvitationDetailApi.as_view(),
        name="api-invitation-detail",
    ),
    # Invitee side: the caller's own, looked up among the invitations addressed to them.
    path("invitations/", api.MyInvitationListApi.as_view(), name="api-my-invitations"),
    path(
        "o/<slug:org_slug>/invitations/<uuid:code>/accept/",
        api.InvitationAcceptApi.as_view(),
        name="api-invitation-accept",
    ),
    path(
        "o/<slug:org_slug>/invitations/<uuid:code>/decline/",
        api.InvitationDeclineApi.as_view(),
        name="api-invitation-decline",
    ),
]
