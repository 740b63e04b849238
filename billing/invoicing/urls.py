"""Machine endpoints outside the language prefix: ``/api/…``."""

from django.urls import path

from billing.invoicing import views

urlpatterns = [
    path("usage/", views.usage_api, name="usage_api"),
]
