"""Billing URLs under the language prefix."""

from django.urls import path

from billing.views import public

urlpatterns = [
    path("q/<str:token>/", public.quote_public, name="quote_public"),
    path("q/<str:token>/accept", public.quote_public_accept, name="quote_public_accept"),
    path("q/<str:token>/reject", public.quote_public_reject, name="quote_public_reject"),
    path("q/<str:token>/pdf", public.quote_public_pdf, name="quote_public_pdf"),
]
