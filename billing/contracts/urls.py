"""Contract pages under the language prefix: anyone may verify a signed contract's file."""

from django.urls import path

from billing.contracts import views

urlpatterns = [
    path("contracts/verify/", views.contract_verify, name="contract_verify"),
]
