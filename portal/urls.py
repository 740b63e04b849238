"""Root URL configuration."""

from django.conf import settings
from django.conf.urls.i18n import i18n_patterns
from django.contrib import admin
from django.urls import include, path

import portal.converters  # noqa: F401  (registers the "signed" path converter)
from billing.payments import urls as payment_urls
from portal import health, i18n, metrics
from portal.operations import feeds as maintenance_feeds
from portal.shop import views as shop_views
from portal.shop import wizard
from portal.support import urls as support_urls

urlpatterns = [
    path("i18n/setlang/", i18n.set_language, name="set_language"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("metrics/targets", metrics.worker_targets, name="metrics_worker_targets"),
    path("stripe/", include(payment_urls.webhook_urlpatterns)),
    path("api/v1/", include("portal.api.urls")),
    path("api/", include("billing.invoicing.urls")),
    path("telemetry/", include("provisioning.telemetry.urls")),
    # The customers' maintenance calendar at a secret address (calendar apps).
    path(
        "maintenance/<str:token>/calendar.ics",
        maintenance_feeds.feed_by_token,
        name="maintenance_feed",
    ),
]
urlpatterns += i18n_patterns(
    path("", shop_views.catalog, name="catalog"),
    path("wizard/", wizard.wizard, name="wizard"),
    path("admin/", admin.site.urls),
    path("", include("billing.orders.urls")),
    path("", include("billing.contracts.urls")),
    path("sales/", include("billing.quotes.urls")),
    path("staff/provisioning/", include("provisioning.urls")),
    path("staff/support/", include(support_urls.staff_urlpatterns)),
    path("status/", include(support_urls.status_urlpatterns)),
    path("staff/operations/", include("portal.operations.urls")),
    path(
        "account/maintenance.ics",
        maintenance_feeds.feed_for_member,
        name="maintenance_feed_member",
    ),
    path("accounts/", include("accounts.urls")),
    path("account/", include("portal.dashboard.urls")),
    path("account/", include(support_urls.customer_urlpatterns)),
    path("pay/", include("billing.payments.urls")),
    path("", include("portal.shop.urls")),
    prefix_default_language=True,
)

if settings.DEBUG:  # pragma: no cover - development static files
    from django.contrib.staticfiles.urls import staticfiles_urlpatterns

    urlpatterns += staticfiles_urlpatterns()
