"""The customer's free cancellation before delivery (``billing.shop.cancellation``)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts.decorators import customer_required
from accounts.models import MemberRole
from billing.shop import cancellation
from core.errors import DomainError
from portal.dashboard.views.common import order_or_404

CANCELLERS = (MemberRole.OWNER, MemberRole.BILLING)


@customer_required
@require_POST
def order_cancel(request: HttpRequest, number: str) -> HttpResponse:
    order = order_or_404(request, number)
    target = reverse("dashboard_order", args=[order.number])
    if request.membership.role not in CANCELLERS:
        messages.error(request, _("Only owners and billing members cancel an order."))
        return redirect(target + "#cancel")
    if not request.POST.get("confirm"):
        messages.error(request, _("Tick the box to confirm the cancellation."))
        return redirect(target + "#cancel")
    try:
        done = cancellation.order_cancel(
            order=order,
            actor=request.user,
            name=request.user.get_full_name() or request.user.get_username(),
        )
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect(target + "#cancel")
    messages.success(
        request,
        _("Order %(n)s is cancelled free of charge.") % {"n": order.number}
        + (" " + _("Your card payment is refunded in full.") if done.refunds else "")
        + (
            " "
            + _(
                "Our finance team returns your bank transfer in full; the refund appears "
                "here once it is sent."
            )
            if done.transfers_due
            else ""
        ),
    )
    return redirect(target)
