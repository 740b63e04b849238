"""The support desk's staff pages under ``/<lang>/staff/support/``: the queue by the
clock that runs out first, a ticket with its diagnostics and every action (reply with a
saved reply, internal note, assign, priority, resolve: each recorded with who and why),
the missed clocks, and the status incidents."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from core.errors import DomainError
from inventory.models import Node, Rack, Switch
from portal.support import selectors, services
from portal.support.forms import (
    AssignForm,
    IncidentForm,
    IncidentUpdateForm,
    NoteForm,
    PriorityForm,
    ResolveForm,
    StaffReplyForm,
    names,
)
from portal.support.models import StatusIncident, Ticket
from portal.support.views.common import (
    ADD_INCIDENTS,
    CHANGE_INCIDENTS,
    VIEW_INCIDENTS,
    VIEW_TICKETS,
    WORK_TICKETS,
    permission_required,
)

QUEUE_LIMIT = 200


@permission_required(VIEW_TICKETS)
@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    view = request.GET.get("view", "active")
    if view not in selectors.QUEUE_VIEWS:
        view = "active"
    tickets = list(selectors.ticket_queue(view=view, user=request.user)[:QUEUE_LIMIT])
    rows = [{"ticket": t, "clocks": selectors.ticket_clocks(t)} for t in tickets]
    return render(
        request,
        "support/staff_queue.html",
        {
            "rows": rows,
            "view": view,
            "views": selectors.QUEUE_VIEWS,
            "missed": selectors.missed_clocks_summary(),
            "limit": QUEUE_LIMIT,
        },
    )


def _ticket(ticket_id: int) -> Ticket:
    ticket = selectors.ticket_for_staff(ticket_id)
    if ticket is None:
        raise Http404
    return ticket


def _page(request: HttpRequest, ticket: Ticket, status: int = 200, **forms: object) -> HttpResponse:
    staff = list(services.support_staff())
    context: dict[str, object] = {
        "ticket": ticket,
        "clocks": selectors.ticket_clocks(ticket),
        "contract": selectors.ticket_contract(ticket),
        "conversation": selectors.ticket_messages(ticket, staff=True),
        "history": selectors.ticket_history(ticket, staff=True),
        "diagnostics": selectors.diagnostics(ticket),
        "may_work": request.user.has_perm(WORK_TICKETS),
        "reply_form": StaffReplyForm(),
        "note_form": NoteForm(),
        "assign_form": AssignForm(staff=staff, initial={"assignee": str(ticket.assignee_id or "")}),
        "priority_form": PriorityForm(initial={"priority": ticket.priority}),
        "resolve_form": ResolveForm(),
    }
    context.update(forms)
    return render(request, "support/staff_ticket.html", context, status=status)


@permission_required(VIEW_TICKETS)
@require_GET
def ticket_detail(request: HttpRequest, ticket_id: int) -> HttpResponse:
    return _page(request, _ticket(ticket_id))


def _act(
    request: HttpRequest,
    ticket: Ticket,
    form_name: str,
    form: object,
    do: Callable[[dict[str, object]], object],
    done: str,
) -> HttpResponse:
    if form.is_valid():  # type: ignore[attr-defined]
        try:
            do(form.cleaned_data)  # type: ignore[attr-defined]
        except DomainError as exc:
            form.add_error(None, str(exc))  # type: ignore[attr-defined]
        else:
            messages.success(request, done)
            return redirect("support_staff_ticket", ticket.pk)
    return _page(request, ticket, status=400, **{form_name: form})


@permission_required(WORK_TICKETS)
@require_POST
def ticket_reply(request: HttpRequest, ticket_id: int) -> HttpResponse:
    ticket = _ticket(ticket_id)
    return _act(
        request,
        ticket,
        "reply_form",
        StaffReplyForm(request.POST),
        lambda d: services.ticket_reply(
            ticket=ticket,
            actor=request.user,
            body=str(d["body"] or ""),
            staff=True,
            wait_for_customer=bool(d["wait_for_customer"]),
            saved_reply=d["saved_reply"],  # type: ignore[arg-type]
        ),
        _("Reply sent to the customer."),
    )


@permission_required(WORK_TICKETS)
@require_POST
def ticket_note(request: HttpRequest, ticket_id: int) -> HttpResponse:
    ticket = _ticket(ticket_id)
    return _act(
        request,
        ticket,
        "note_form",
        NoteForm(request.POST),
        lambda d: services.ticket_note(ticket=ticket, actor=request.user, body=str(d["body"])),
        _("Internal note added."),
    )


@permission_required(WORK_TICKETS)
@require_POST
def ticket_assign(request: HttpRequest, ticket_id: int) -> HttpResponse:
    ticket = _ticket(ticket_id)
    form = AssignForm(request.POST, staff=list(services.support_staff()))
    return _act(
        request,
        ticket,
        "assign_form",
        form,
        lambda d: services.ticket_assign(
            ticket=ticket,
            actor=request.user,
            assignee=form.staff.get(str(d["assignee"])),
            reason=str(d["reason"]),
        ),
        _("Ticket assigned."),
    )


@permission_required(WORK_TICKETS)
@require_POST
def ticket_priority(request: HttpRequest, ticket_id: int) -> HttpResponse:
    ticket = _ticket(ticket_id)
    return _act(
        request,
        ticket,
        "priority_form",
        PriorityForm(request.POST),
        lambda d: services.ticket_set_priority(
            ticket=ticket, actor=request.user, priority=str(d["priority"]), reason=str(d["reason"])
        ),
        _("Priority changed; the clocks follow it."),
    )


@permission_required(WORK_TICKETS)
@require_POST
def ticket_resolve(request: HttpRequest, ticket_id: int) -> HttpResponse:
    ticket = _ticket(ticket_id)
    return _act(
        request,
        ticket,
        "resolve_form",
        ResolveForm(request.POST),
        lambda d: services.ticket_resolve(
            ticket=ticket, actor=request.user, resolution=str(d["resolution"])
        ),
        _("Ticket resolved."),
    )


@permission_required(VIEW_TICKETS)
@require_GET
def missed(request: HttpRequest) -> HttpResponse:
    tickets = list(selectors.tickets_missed_clocks())
    rows = [{"ticket": t, "clocks": selectors.ticket_clocks(t)} for t in tickets]
    return render(
        request,
        "support/staff_missed.html",
        {"rows": rows, "missed": selectors.missed_clocks_summary()},
    )


# --- status incidents ------------------------------------------------------------------


@permission_required(VIEW_INCIDENTS)
@require_GET
def incidents(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "support/staff_incidents.html",
        {
            "incidents": list(selectors.status_incidents_for_staff()[:100]),
            "form": IncidentForm(),
            "may_add": request.user.has_perm(ADD_INCIDENTS),
        },
    )


def _named(model: type, site_id: int, field: str, value: str) -> list[object]:
    wanted = names(value)
    found = list(model.objects.filter(Q(site_id=site_id), **{f"{field}__in": wanted}))  # type: ignore[attr-defined]
    missing = sorted(set(wanted) - {getattr(o, field) for o in found})
    if missing:
        raise DomainError(_("Not in this site: %(names)s.") % {"names": ", ".join(missing)})
    return found


@permission_required(ADD_INCIDENTS)
@require_POST
def incident_new(request: HttpRequest) -> HttpResponse:
    form = IncidentForm(request.POST)
    if form.is_valid():
        d = form.cleaned_data
        try:
            site = d["site"]
            incident = services.status_incident_open(
                site=site,
                component=d["component"],
                impact=d["impact"],
                title=d["title"],
                title_zh=d["title_zh"],
                body=d["body"],
                body_zh=d["body_zh"],
                actor=request.user,
                racks=_named(Rack, site.pk, "name", d["racks"]),  # type: ignore[arg-type]
                switches=_named(Switch, site.pk, "name", d["switches"]),  # type: ignore[arg-type]
                nodes=_named(Node, site.pk, "hostname", d["nodes"]),  # type: ignore[arg-type]
            )
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Incident posted on the status page."))
            return redirect("support_staff_incident", incident.pk)
    return render(
        request,
        "support/staff_incidents.html",
        {
            "incidents": list(selectors.status_incidents_for_staff()[:100]),
            "form": form,
            "may_add": True,
        },
        status=400,
    )


def _incident(incident_id: int) -> StatusIncident:
    incident = selectors.status_incident_for_staff(incident_id)
    if incident is None:
        raise Http404
    return incident


@permission_required(VIEW_INCIDENTS)
@require_GET
def incident_detail(request: HttpRequest, incident_id: int) -> HttpResponse:
    incident = _incident(incident_id)
    return _incident_page(request, incident, IncidentUpdateForm(initial={
        "status": incident.status, "impact": incident.impact}))  # fmt: skip


def _incident_page(
    request: HttpRequest, incident: StatusIncident, form: IncidentUpdateForm, status: int = 200
) -> HttpResponse:
    return render(
        request,
        "support/staff_incident.html",
        {
            "incident": incident,
            "form": form,
            "events": list(incident.events.select_related("actor").order_by("created_at", "pk")),
            "may_change": request.user.has_perm(CHANGE_INCIDENTS),
        },
        status=status,
    )


@permission_required(CHANGE_INCIDENTS)
@require_POST
def incident_update(request: HttpRequest, incident_id: int) -> HttpResponse:
    incident = _incident(incident_id)
    form = IncidentUpdateForm(request.POST)
    if form.is_valid():
        d = form.cleaned_data
        try:
            services.status_incident_update(
                incident=incident,
                status=d["status"],
                impact=d["impact"],
                body=d["body"],
                body_zh=d["body_zh"],
                actor=request.user,
            )
        except DomainError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, _("Update posted."))
            return redirect("support_staff_incident", incident.pk)
    return _incident_page(request, incident, form, status=400)
