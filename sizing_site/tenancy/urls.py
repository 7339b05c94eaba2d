from django.urls import path

from sizing_site.tenancy import api, views

app_name = "tenancy"

urlpatterns = [
    path("orgs/", views.orgs, name="orgs"),
    path("o/<slug:org_slug>/", views.dashboard, name="dashboard"),
    path("o/<slug:org_slug>/members/", views.members, name="members"),
    path("o/<slug:org_slug>/members/<uuid:code>/role/", views.member_role, name="member-role"),
    path(
        "o/<slug:org_slug>/members/<uuid:code>/remove/", views.member_remove, name="member-remove"
    ),
]

api_urlpatterns = [
    path("o/<slug:org_slug>/members/", api.MemberListApi.as_view(), name="api-members"),
    path(
        "o/<slug:org_slug>/members/<uuid:code>/",
        api.MemberDetailApi.as_view(),
        name="api-member-detail",
    ),
]
