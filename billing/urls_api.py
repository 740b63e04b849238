"""Machine endpoints outside the language prefix: ``/api/…``."""

from django.urls import path

from billing.views import usage

urlpatterns = [
    path("usage/", usage.usage_api, name="usage_api"),
]
