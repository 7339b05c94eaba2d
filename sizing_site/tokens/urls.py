from django.urls import path

from sizing_site.tokens import views

app_name = "tokens"

urlpatterns = [
    path("account/tokens/", views.tokens, name="tokens"),
    path("account/tokens/<uuid:code>/revoke/", views.token_revoke, name="revoke"),
]
