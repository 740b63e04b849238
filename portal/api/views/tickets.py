"""Support tickets: the organisation's tickets with their clocks, opening one (about an
order, a node, or a GPU by its serial), the conversation and history without what only
staff see, and the customer's reply (``portal.support.services`` and ``selectors``, as
the support pages)."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import Membership
from portal.api import serializers as s
from portal.api.base import ApiView, idempotent
from portal.api.problems import Problem
from portal.api.views.common import IDEMPOTENCY, actor, language, organisation
from portal.api.views.orders import order_for_request
from portal.support import selectors, services
from portal.support.models import Ticket, TicketMessage


class TicketsView(ApiView):
    scope_family = "support"


def _ticket(request: Request, ticket_id: int) -> Ticket:
    ticket = selectors.ticket_for_org(organisation(request), ticket_id)
    if ticket is None:
        raise Http404
    return ticket


def _author(message: TicketMessage) -> str:
    """As the customer's page names them: support as "Support", members by name."""
    if message.from_staff:
        return _("Support")
    if message.author is None:
        return _("the portal")
    return message.author.get_full_name() or message.author.get_username()


def _who(user: Any, members: set[int]) -> str:
    if user is None:
        return _("the portal")
    if user.pk in members:
        return str(user.get_full_name() or user.get_username())
    return _("Support")


def ticket_data(ticket: Ticket, *, detail: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": ticket.pk,
        "reference": ticket.reference,
        "subject": ticket.subject,
        "category": ticket.category,
        "category_label": ticket.get_category_display(),
        "priority": ticket.priority,
        "priority_label": ticket.get_priority_display(),
        "status": ticket.status,
        "status_label": ticket.get_status_display(),
        "tier": ticket.tier,
        "source": ticket.source,
        "order": ticket.order.number if ticket.order_id else None,
        "node": ticket.node.hostname if ticket.node_id else None,
        "gpu_serial": ticket.gpu_serial,
        "gpu_index": ticket.gpu_index,
        "created_at": ticket.created_at,
        "first_response_at": ticket.first_response_at,
        "resolved_at": ticket.resolved_at,
        "clocks": [
            {
                "kind": c.kind,
                "state": c.state,
                "due": c.due,
                "stopped_at": c.stopped_at,
                "minutes_left": c.minutes_left,
            }
            for c in selectors.ticket_clocks(ticket)
        ],
    }
    if detail:
        members = set(
            Membership.objects.filter(organisation_id=ticket.organisation_id).values_list(
                "user_id", flat=True
            )
        )
        data["messages"] = [
            {
                "id": m.pk,
                "from_support": m.from_staff,
                "author": _author(m),
                "via": m.via,
                "body": m.body,
                "created_at": m.created_at,
            }
            for m in selectors.ticket_messages(ticket, staff=False)
        ]
        data["history"] = [
            {
                "at": e.created_at,
                "from_label": e.from_label(),
                "to_status": e.to_status,
                "to_label": e.to_label(),
                "who": _who(e.actor, members),
                "comment": e.why(),
            }
            for e in selectors.ticket_history(ticket, staff=False)
        ]
    return data


class _TicketRow(s.TicketSerializer):
    def to_representation(self, instance: Any) -> Any:
        return super().to_representation(ticket_data(instance))


def _invalid(field: str, message: str) -> Problem:
    return Problem(
        400,
        "validation_failed",
        _("The request is not valid."),
        errors=[{"field": field, "message": message, "code": "invalid"}],
    )


def _target(request: Request, data: dict[str, Any]) -> selectors.TicketTarget:
    """What the ticket is about, each the organisation's (``selectors.ticket_target_resolve``,
    as the support page): a refused input is a field of the problem, a combination that does
    not hold together a refused rule."""
    order = order_for_request(request, data["order"]) if data.get("order") else None
    node = None
    if data.get("node"):
        if order is None:
            raise _invalid("node", _("Choose the order the node serves."))
        node = selectors.ticket_nodes(order).filter(hostname=data["node"]).first()
        if node is None:
            raise _invalid("node", _("That node does not serve this order."))
    try:
        return selectors.ticket_target_resolve(
            organisation=organisation(request),
            order=order,
            node=node,
            gpu_serial=data.get("gpu_serial") or "",
        )
    except selectors.TicketTargetInvalid as exc:
        if exc.field is None:
            raise
        raise _invalid(exc.field, exc.message) from None


class TicketList(TicketsView):
    @extend_schema(
        operation_id="tickets_list",
        responses=s.paged(s.TicketSerializer),
        summary="The organisation's support tickets with their clocks / 工单",
    )
    def get(self, request: Request) -> Response:
        qs = selectors.ticket_list_for_org(organisation(request)).order_by()
        return self.paginate(request, qs, _TicketRow)

    @extend_schema(
        operation_id="tickets_open",
        request=s.TicketOpenSerializer,
        responses={201: s.TicketDetailSerializer},
        parameters=[IDEMPOTENCY],
        summary="Open a ticket about an order, a node or a GPU serial / 提交工单",
    )
    @idempotent
    def post(self, request: Request) -> Response:
        body = s.TicketOpenSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        target = _target(request, data)
        ticket = services.ticket_open(
            organisation=organisation(request),
            actor=actor(request),
            subject=data["subject"],
            body=data["body"],
            category=data["category"],
            priority=data["priority"],
            language=language(),
            order=target.order,
            node=target.node,
            gpu_serial=target.gpu_serial,
            gpu_index=target.gpu_index,
        )
        return Response(
            s.TicketDetailSerializer(ticket_data(_ticket(request, ticket.pk), detail=True)).data,
            status=201,
        )


class TicketDetail(TicketsView):
    @extend_schema(
        operation_id="tickets_read",
        responses=s.TicketDetailSerializer,
        summary="A ticket: the conversation, the clocks and the history / 工单详情",
    )
    def get(self, request: Request, ticket_id: int) -> Response:
        ticket = _ticket(request, ticket_id)
        return Response(s.TicketDetailSerializer(ticket_data(ticket, detail=True)).data)


class TicketReply(TicketsView):
    @extend_schema(
        operation_id="tickets_reply",
        request=s.TicketReplySerializer,
        responses={201: s.TicketDetailSerializer},
        parameters=[IDEMPOTENCY],
        summary="Reply (a resolved ticket is reopened) / 回复工单",
    )
    @idempotent
    def post(self, request: Request, ticket_id: int) -> Response:
        ticket = _ticket(request, ticket_id)
        body = s.TicketReplySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.ticket_reply(ticket=ticket, actor=actor(request), body=body.validated_data["body"])
        fresh = _ticket(request, ticket_id)
        return Response(s.TicketDetailSerializer(ticket_data(fresh, detail=True)).data, status=201)
