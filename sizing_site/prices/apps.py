from django.apps import AppConfig


class PricesConfig(AppConfig):
    """The price pages (the web layer over `pricing`); no models of its own."""

    name = "sizing_site.prices"
    label = "prices"
