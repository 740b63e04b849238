from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class BillingConfig(AppConfig):
    name = "billing"
    verbose_name = _("Billing")

    def ready(self) -> None:
        from billing.contracts import subscriptions
        from billing.pricing import shop_data

        # The shop's memo of sites, node types and price books reloads when they change.
        shop_data.connect_signals()
        # Contracts that waited for the customer's legal entity are drafted once it is saved.
        subscriptions.connect_signals()
