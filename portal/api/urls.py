"""``/api/v1/``: the customer API, its OpenAPI schema and docs."""

from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.urls import path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

from portal.api.views import account, catalog, documents, health, orders, quotes, renewals, tickets

DOCS_CSP = {"style-src": [UNSAFE_INLINE], "worker-src": ["blob:"], "img-src": ["data:"]}

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api_schema"),
    # Redoc and Swagger UI style their pages with <style> elements they make at run time
    # (and Redoc searches in a blob: worker): allowed on these two pages only. Swagger UI's
    # start-up script is a file of its own (the "split" view), not inline.
    path(
        "docs/",
        csp_update(DOCS_CSP)(SpectacularRedocView.as_view(url_name="api_schema")),
        name="api_docs",
    ),
    path(
        "docs/try/",
        csp_update(DOCS_CSP)(SpectacularSwaggerSplitView.as_view(url_name="api_schema")),
        name="api_swagger",
    ),
    path("sites/", catalog.SiteList.as_view()),
    path("sites/<slug:code>/", catalog.SiteDetail.as_view()),
    path("node-types/", catalog.NodeTypeList.as_view()),
    path("node-types/<slug:code>/", catalog.NodeTypeDetail.as_view()),
    path("price-books/", catalog.PriceBookList.as_view()),
    path("availability/", catalog.Availability.as_view()),
    path("sizing/", catalog.Sizing.as_view()),
    path("estimates/", quotes.Estimates.as_view()),
    path("quotes/", quotes.QuoteList.as_view()),
    path("quotes/<slug:number>/", quotes.QuoteDetail.as_view()),
    path("quotes/<slug:number>/revisions/", quotes.QuoteRevisions.as_view()),
    path("quotes/<slug:number>/accept/", quotes.QuoteAccept.as_view()),
    path("quotes/<slug:number>/reject/", quotes.QuoteReject.as_view()),
    path("orders/", orders.OrderList.as_view()),
    path("orders/<slug:number>/", orders.OrderDetail.as_view()),
    path("orders/<slug:number>/access/", orders.OrderAccess.as_view()),
    path("orders/<slug:number>/delivery-kit/", orders.OrderDeliveryKit.as_view()),
    path("orders/<slug:number>/renewal/", renewals.OrderRenewal.as_view()),
    path("orders/<slug:number>/renewal/accept/", renewals.OrderRenewalAccept.as_view()),
    path("orders/<slug:number>/renewal/decline/", renewals.OrderRenewalDecline.as_view()),
    path("orders/<slug:number>/replacement-policy/", health.ReplacementPolicy.as_view()),
    path("orders/<slug:number>/monitoring/", health.OrderMonitoring.as_view()),
    path("orders/<slug:number>/gpus/", health.OrderGpus.as_view()),
    path("health-events/", health.HealthEventList.as_view()),
    path("health-events/<int:event_id>/", health.HealthEventDetail.as_view()),
    path("health-events/<int:event_id>/approve/", health.HealthEventApprove.as_view()),
    path("orders/<slug:number>/ssh-keys/", orders.OrderSshKeys.as_view()),
    path("orders/<slug:number>/terms/", orders.OrderTerms.as_view()),
    path("orders/<slug:number>/bank-transfer/", orders.OrderBankTransfer.as_view()),
    path("orders/<slug:number>/card-payment/", orders.OrderCardPayment.as_view()),
    path("operations/<slug:operation_id>/", orders.OperationDetail.as_view()),
    path("invoices/", documents.InvoiceList.as_view()),
    path("invoices/<slug:number>/", documents.InvoiceDetail.as_view()),
    path("invoices/<slug:number>/pdf/", documents.InvoicePdf.as_view()),
    path("credit-notes/", documents.CreditNoteList.as_view()),
    path("credit-notes/<slug:number>/", documents.CreditNoteDetail.as_view()),
    path("credit-notes/<slug:number>/pdf/", documents.CreditNotePdf.as_view()),
    path("contracts/", documents.ContractList.as_view()),
    path("contracts/<slug:number>/", documents.ContractDetail.as_view()),
    path("contracts/<slug:number>/pdf/", documents.ContractPdf.as_view()),
    path("contracts/<slug:number>/verification/", documents.ContractVerification.as_view()),
    path("tickets/", tickets.TicketList.as_view()),
    path("tickets/<int:ticket_id>/", tickets.TicketDetail.as_view()),
    path("tickets/<int:ticket_id>/replies/", tickets.TicketReply.as_view()),
    path("ssh-keys/", account.SshKeyList.as_view()),
    path("ssh-keys/<int:key_id>/", account.SshKeyDetail.as_view()),
    path("webhook-endpoints/", account.EndpointList.as_view()),
    path("webhook-endpoints/<int:endpoint_id>/", account.EndpointDetail.as_view()),
    path("webhook-endpoints/<int:endpoint_id>/rotate/", account.EndpointRotate.as_view()),
    path("webhook-event-types/", account.EventTypeList.as_view()),
    path("webhook-deliveries/", account.DeliveryList.as_view()),
    path("webhook-deliveries/<int:delivery_id>/replay/", account.DeliveryReplay.as_view()),
]
