"""Billing URLs under the language prefix."""

from django.urls import path

from billing.views import contracts, public

urlpatterns = [
    path("q/<slug:token>/", public.quote_public, name="quote_public"),
    path("q/<slug:token>/accept", public.quote_public_accept, name="quote_public_accept"),
    path("q/<slug:token>/reject", public.quote_public_reject, name="quote_public_reject"),
    path("q/<slug:token>/pdf", public.quote_public_pdf, name="quote_public_pdf"),
    path("contracts/verify/", contracts.contract_verify, name="contract_verify"),
]
