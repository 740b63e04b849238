"""The dashboard's front page (orders, quotes, invoices, members) and one order's page:
its timeline, booked nodes, provisioning progress, documents and SSH keys."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST

from accounts.decorators import customer_required
from accounts.models import MemberRole
from billing.contracts import gate
from billing.documents.common import issues_payment_requests
from billing.models import Order
from billing.orders import services as order_services
from billing.shop.cancellation import order_cancellable
from core.errors import DomainError
from portal.dashboard import selectors
from portal.dashboard.views.common import order_or_404
from portal.operations import services as operations_services
from provisioning import access
from provisioning import selectors as provisioning_selectors
from provisioning.health import selectors as health_selectors
from provisioning.validation.reasons import annotate_progress

# Who may edit the organisation's billing details (accounts:organisation_settings).
BILLING_EDITORS = (MemberRole.OWNER, MemberRole.BILLING)
# Who may choose which of the organisation's SSH keys an order installs (the keys
# themselves are managed by owners on accounts:ssh_keys).
ACCESS_EDITORS = (MemberRole.OWNER, MemberRole.MEMBER)


@customer_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    organisation = request.organisation
    now = timezone.now()
    orders = selectors.order_list_for_org(organisation)
    for order in orders:
        order.payable_invoice = selectors.payable_invoice(order, now)
    return render(
        request,
        "dashboard/dashboard.html",
        {
            "organisation": organisation,
            "membership": request.membership,
            "orders": orders,
            "quotes": selectors.quote_list_for_org(organisation),
            "invoices": selectors.invoice_list_for_org(organisation),
            "members": selectors.members_summary(organisation),
            "can_edit_billing": request.membership.role in BILLING_EDITORS,
            # The organisation's maintenance calendar (iCal) at its secret address.
            "maintenance_feed_url": operations_services.feed_url(organisation.pk),
        },
    )


@customer_required
@require_GET
def order_detail(request: HttpRequest, number: str) -> HttpResponse:
    order = order_or_404(request, number)
    reservations = selectors.order_reservations(order)
    access_keys = selectors.order_access_keys(order)
    return render(
        request,
        "dashboard/order.html",
        {
            "organisation": request.organisation,
            "order": order,
            "quote": order.quote,
            "site_timezone": order.site.timezone,
            # Mainland sellers send payment requests (付款通知书), Hong Kong ones invoices.
            "payment_request": issues_payment_requests(order.site),
            "timeline": selectors.order_timeline(order, viewer=request.user),
            "bookings": selectors.bookings(order, reservations),
            "placement": order.quote.placement or {},
            "invoices": list(order.invoices.all()),
            "payable_invoice": selectors.payable_invoice(order, timezone.now()),
            **_progress_context(order),
            "acceptance_runs": selectors.acceptance_runs_for_order(order),
            "gate": gate.gate_state(order),
            "can_edit_organisation": request.membership.role in BILLING_EDITORS,
            **selectors.order_continuity(order),
            **selectors.order_money(order),
            "access_keys": access_keys,
            "access_chosen": [key for key in access_keys if key.chosen],
            "access_open": order.status in order_services.ACCESS_EDITABLE,
            "access_editor": request.membership.role in ACCESS_EDITORS,
            "cancellable": order_cancellable(order),
            **health_selectors.order_day2(order),
        },
    )


@customer_required
@require_POST
def order_access(request: HttpRequest, number: str) -> HttpResponse:
    """Choose which of the organisation's SSH keys go on the order's nodes (until
    provisioning starts)."""
    order = order_or_404(request, number)
    target = reverse("dashboard_order", args=[order.number]) + "#access"
    if request.membership.role not in ACCESS_EDITORS:
        messages.error(request, _("Only owners and members choose the SSH keys of an order."))
        return redirect(target)
    try:
        ids = sorted({int(v) for v in request.POST.getlist("keys")})
    except ValueError:
        ids = [-1]  # not an id: refused below like a key of another organisation
    try:
        order_services.order_set_access(order=order, ssh_key_ids=ids, actor=request.user)
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        if ids:
            messages.success(
                request,
                ngettext(
                    "Saved: %(count)s SSH key will be installed on the nodes.",
                    "Saved: %(count)s SSH keys will be installed on the nodes.",
                    len(ids),
                )
                % {"count": len(ids)},
            )
        else:
            messages.warning(
                request,
                _("Saved: no SSH key chosen, so nobody will be able to log in to the nodes."),
            )
    return redirect(target)


def _progress_context(order: Order) -> dict[str, object]:
    run = provisioning_selectors.latest_run(order)
    return {
        "progress": annotate_progress(provisioning_selectors.run_progress(run)) if run else None,
        "delivery_access": access.order_access(order, run) if run else None,
        "poll_url": reverse("dashboard_order_progress", args=[order.number]),
        "staff": False,
    }


@customer_required
@require_GET
def order_progress(request: HttpRequest, number: str) -> HttpResponse:
    """The provisioning section of the order page, polled by htmx while the run is live."""
    order = order_or_404(request, number)
    context = _progress_context(order)
    if context["progress"] is None:
        return HttpResponse("")
    return render(request, "provisioning/_progress.html", context)
