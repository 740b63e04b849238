"""The customer's payment pages, under the language prefix: ``/<lang>/pay/…``."""

from django.urls import path

from billing.views import payments

urlpatterns = [
    path("<slug:number>/", payments.order_pay, name="order_pay"),
    path("<slug:number>/card", payments.order_pay_card, name="order_pay_card"),
    path("<slug:number>/return", payments.order_pay_return, name="order_pay_return"),
]
