"""The customer's support pages under ``/<lang>/account/support/``: their organisation's
tickets, opening one about an order, a node or a GPU (by serial), the conversation and
the clocks; and their status page under ``/<lang>/account/status/``."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.decorators import customer_required
from core.errors import DomainError
from portal.dashboard.views.common import page_language
from portal.support import selectors, services
from portal.support.forms import ReplyForm, TicketForm
from portal.support.models import Ticket


def _ticket_or_404(request: HttpRequest, ticket_id: int) -> Ticket:
    ticket = selectors.ticket_for_org(request.organisation, ticket_id)  # type: ignore[attr-defined]
    if ticket is None:
        raise Http404
    return ticket


@customer_required
@require_GET
def ticket_list(request: HttpRequest) -> HttpResponse:
    tickets = list(selectors.ticket_list_for_org(request.organisation))  # type: ignore[attr-defined]
    rows = [{"ticket": t, "clocks": selectors.ticket_clocks(t)} for t in tickets]
    return render(request, "support/tickets.html", {"rows": rows})


@customer_required
@require_http_methods(["GET", "POST"])
def ticket_new(request: HttpRequest) -> HttpResponse:
    organisation = request.organisation  # type: ignore[attr-defined]
    initial = {k: request.GET.get(k, "") for k in ("order", "node", "gpu_serial", "category")}
    form = TicketForm(
        request.POST or None,
        organisation=organisation,
        initial={k: v for k, v in initial.items() if v},
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            target = selectors.ticket_target_resolve(
                organisation=organisation,
                order=form.orders.get(data["order"]) if data["order"] else None,
                node=form.nodes.get(data["node"]) if data["node"] else None,
                gpu_serial=data["gpu_serial"],
            )
            ticket = services.ticket_open(
                organisation=organisation,
                actor=request.user,
                subject=data["subject"],
                body=data["body"],
                category=data["category"],
                priority=data["priority"],
                language=page_language(request),
                order=target.order,
                node=target.node,
                gpu_serial=target.gpu_serial,
                gpu_index=target.gpu_index,
            )
        except selectors.TicketTargetInvalid as exc:
            form.add_error(exc.field, exc.message)
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Ticket %(ref)s is open.") % {"ref": ticket.reference})
            return redirect("support_ticket", ticket.pk)
    return render(request, "support/ticket_new.html", {"form": form})


@customer_required
@require_GET
def ticket_detail(request: HttpRequest, ticket_id: int) -> HttpResponse:
    ticket = _ticket_or_404(request, ticket_id)
    return render(request, "support/ticket.html", _context(ticket, ReplyForm()))


def _context(ticket: Ticket, form: ReplyForm) -> dict[str, object]:
    return {
        "ticket": ticket,
        "clocks": selectors.ticket_clocks(ticket),
        "conversation": selectors.ticket_messages(ticket, staff=False),
        "history": selectors.ticket_history(ticket, staff=False),
        "diagnostics": selectors.diagnostics(ticket),
        "form": form,
    }


@customer_required
@require_POST
def ticket_reply(request: HttpRequest, ticket_id: int) -> HttpResponse:
    ticket = _ticket_or_404(request, ticket_id)
    form = ReplyForm(request.POST)
    if form.is_valid():
        try:
            services.ticket_reply(ticket=ticket, actor=request.user, body=form.cleaned_data["body"])
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Your reply is sent to support."))
            return redirect("support_ticket", ticket.pk)
    return render(request, "support/ticket.html", _context(ticket, form), status=400)


@customer_required
@require_GET
def customer_status(request: HttpRequest) -> HttpResponse:
    status = selectors.customer_status(request.organisation)  # type: ignore[attr-defined]
    return render(request, "support/status_customer.html", {"status": status})
