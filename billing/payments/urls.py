"""Payment URLs: the customer's payment pages (``urlpatterns``, under the language
prefix: ``/<lang>/pay/…``) and Stripe's webhook endpoint (``webhook_urlpatterns``,
outside it: ``/stripe/webhook``)."""

from django.urls import path

from billing.payments import views

urlpatterns = [
    path("<slug:number>/", views.order_pay, name="order_pay"),
    path("<slug:number>/card", views.order_pay_card, name="order_pay_card"),
    path("<slug:number>/return", views.order_pay_return, name="order_pay_return"),
]

webhook_urlpatterns = [
    path("webhook", views.stripe_webhook, name="stripe_webhook"),
]
