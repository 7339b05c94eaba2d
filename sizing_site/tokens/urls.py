from django.urls import path

from sizing_site.tokens import views

app_name = "tokens"

urlpatterns = [
    path("account/tokens/", views.tokens, name="tokens"),
    # The code travels in the POST body: a user-owned row, not an org's (the tenant routes
    # carry the org in their path, tests/sizing_site/tenancy/test_isolation.py).
    path("account/tokens/revoke/", views.token_revoke, name="revoke"),
]
