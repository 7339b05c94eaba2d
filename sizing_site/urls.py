from django.conf.urls.i18n import i18n_patterns
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from sizing_site.core import views as core_views
from sizing_site.explore import views as explore_views
from sizing_site.orgarea import urls as orgarea_urls
from sizing_site.tenancy import urls as tenancy_urls
from sizing_site.tenancy import views as tenancy_views

# API addresses no route matches answer in the API's error shape (sizing_site.apikit.errors).
handler404 = "sizing_site.apikit.errors.page_not_found"
handler500 = "sizing_site.apikit.errors.server_error"

urlpatterns = [
    path("health/", core_views.health, name="health"),
    path("health/live/", core_views.live, name="health-live"),
    # Django's i18n/setlang/ (name "set_language"), with next= resolved in its own language.
    path("i18n/setlang/", core_views.set_language, name="set_language"),
    path("admin/", admin.site.urls),
    path("api/v1/", include(("sizing_site.api_urls", "api"))),
]

urlpatterns += i18n_patterns(
    path("", explore_views.home, name="home"),
    path("accounts/login/", tenancy_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "accounts/password/",
        auth_views.PasswordChangeView.as_view(),
        name="password_change",
    ),
    path(
        "accounts/password/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    # The tenancy namespace, with the org overview (tenancy:dashboard), which lists every
    # app's rows and so lives above them (sizing_site.orgarea; tenancy imports no app).
    path("", include((orgarea_urls.urlpatterns + tenancy_urls.urlpatterns, "tenancy"))),
    path("", include("catalog.urls")),
    path("", include("sizing_site.prices.urls")),
    path("", include("sizing_site.configurator.urls")),
    path("", include("sizing_site.explore.urls")),
    path("", include("sizing_site.reports.urls")),
    path("", include("sizing_site.tokens.urls")),
    path("", include("sizing_site.fleet.urls")),
    path("", include("sizing_site.planner.urls")),
    path("", include("sizing_site.owncatalog.urls")),
)
