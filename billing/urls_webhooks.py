"""Stripe's webhook endpoint, outside the language prefix: ``/stripe/webhook``."""

from django.urls import path

from billing.views import payments

urlpatterns = [
    path("webhook", payments.stripe_webhook, name="stripe_webhook"),
]
