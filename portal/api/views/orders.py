"""Orders: status and timeline, provisioning progress per node and step (also as an
operation to poll), access details (ssh config, hostfile), the SSH keys to install, the
standard terms, and payment (card start, bank transfer instructions)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import Http404
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import Organisation
from billing.contracts import gate
from billing.documents.common import bank_details
from billing.models import Invoice, InvoiceStatus, Order, OrderStatus
from billing.orders import services as order_services
from billing.payments import services as payment_services
from core.errors import DomainError
from portal.api import serializers as s
from portal.api.access import AccessNode, hostfile, ssh_config
from portal.api.base import ApiView, idempotent
from portal.api.problems import Problem
from portal.api.views.common import IDEMPOTENCY, actor, ip, language, organisation
from portal.dashboard import selectors as dashboard
from provisioning import selectors as provisioning_selectors
from provisioning.health import selectors as health_selectors
from provisioning.models import ProvisioningRun, RunNodeState, RunStatus

OPERATION_DONE = {RunStatus.DELIVERED, RunStatus.FAILED, RunStatus.CANCELLED}


def _order(org: Organisation, number: str) -> Order:
    order = dashboard.order_for_org(org, number)
    if order is None:
        raise Http404
    return order


def order_for_request(request: Request, number: str) -> Order:
    """The key's organisation's order ``number`` (another's: 404, as on the pages)."""
    return _order(organisation(request), number)


def operation_data(run: ProvisioningRun) -> dict[str, Any]:
    progress = provisioning_selectors.run_progress(run)
    return {
        "id": f"prov-{run.pk}",
        "kind": run.kind,
        "status": run.status,
        "done": run.status in OPERATION_DONE,
        "percent": 100 if run.status == RunStatus.DELIVERED else progress.percent,
        "eta": progress.eta,
        "message": str(progress.message or ""),
        "order": run.order.number,
        "created_at": run.created_at,
        "nodes": [
            {
                "hostname": n.run_node.node.hostname,
                "state": n.run_node.state,
                "percent": n.percent,
                "message": str(n.message or ""),
                "eta": n.eta,
                "steps": [
                    {
                        "name": step.name,
                        "label": str(step.get_name_display()),
                        "status": step.status,
                        "started_at": step.started_at,
                        "finished_at": step.finished_at,
                        "message": step.message,
                    }
                    for step in n.steps
                ],
            }
            for n in progress.nodes
        ],
    }


def order_detail_data(request: Request, number: str) -> dict[str, Any]:
    """The order as ``GET /orders/{number}/`` shows it."""
    order = _order(organisation(request), number)
    run = provisioning_selectors.latest_run(order)
    state = gate.gate_state(order)
    order.api_timeline = dashboard.order_timeline(order, viewer=request.user)
    order.api_nodes = [r.node.hostname for r in dashboard.order_reservations(order)]
    order.api_operation = operation_data(run) if run is not None else None
    order.api_gate = {
        "paid": state.paid,
        "agreed": state.agreed,
        "needs_contract": state.needs_contract,
        "released": state.released,
        "provision_at": state.provision_at.isoformat() if state.provision_at else None,
        "missing": [str(m) for m in state.missing],
    }
    order.api_invoices = [i.number for i in order.invoices.all()]
    return s.OrderDetailSerializer(order).data


class OrdersView(ApiView):
    scope_family = "orders"


class OrderList(OrdersView):
    @extend_schema(
        operation_id="orders_list",
        responses=s.paged(s.OrderSerializer),
        summary="The organisation's orders, newest first / 订单",
    )
    def get(self, request: Request) -> Response:
        qs = Order.objects.filter(organisation=organisation(request)).select_related(
            "site", "quote"
        )
        return self.paginate(request, qs, s.OrderSerializer)


class OrderDetail(OrdersView):
    @extend_schema(
        operation_id="orders_read",
        responses=s.OrderDetailSerializer,
        summary="Status, timeline, nodes, provisioning progress / 订单详情",
    )
    def get(self, request: Request, number: str) -> Response:
        return Response(order_detail_data(request, number))


class OperationDetail(OrdersView):
    @extend_schema(
        operation_id="operations_read",
        responses=s.OperationSerializer,
        summary="Long work to poll (a provisioning run) / 长时操作",
    )
    def get(self, request: Request, operation_id: str) -> Response:
        prefix, _sep, pk = operation_id.partition("-")
        if prefix != "prov" or not pk.isdigit() or len(pk) > 18:
            raise Http404
        run = (
            ProvisioningRun.objects.filter(pk=int(pk), order__organisation=organisation(request))
            .select_related("order")
            .first()
        )
        if run is None:
            raise Http404
        return Response(s.OperationSerializer(operation_data(run)).data)


class OrderAccess(OrdersView):
    @extend_schema(
        operation_id="orders_access",
        responses=s.AccessSerializer,
        summary="Access details: ssh config and hostfile of the delivered nodes / 访问信息",
    )
    def get(self, request: Request, number: str) -> Response:
        order = _order(organisation(request), number)
        run = provisioning_selectors.latest_run(order)
        nodes: list[AccessNode] = []
        lines: list[dict[str, Any]] = []
        jump = settings.PORTAL_SSH_JUMP_HOST
        delivered = run is not None and run.status == RunStatus.DELIVERED
        if run is not None:
            for n in provisioning_selectors.run_progress(run).nodes:
                rn = n.run_node
                if rn.state != RunNodeState.ACTIVE or rn.delivered_at is None:
                    continue
                node = AccessNode(
                    hostname=rn.node.hostname,
                    user=rn.ssh_user or "root",
                    addresses=tuple(rn.addresses or ()),
                    gpus=rn.node.node_type.gpu_count if hasattr(rn.node, "node_type") else 0,
                )
                nodes.append(node)
                lines.append(
                    {
                        "hostname": node.hostname,
                        "user": node.user,
                        "addresses": list(node.addresses),
                        "ssh": n.ssh_line,
                    }
                )
        return Response(
            s.AccessSerializer(
                {
                    "delivered": delivered,
                    "jump_host": jump,
                    "nodes": lines,
                    "ssh_config": ssh_config(nodes, jump_host=jump, order=order.number)
                    if nodes
                    else "",
                    "hostfile": hostfile(nodes),
                }
            ).data
        )


class OrderDeliveryKit(OrdersView):
    @extend_schema(
        operation_id="orders_delivery_kit",
        responses=s.DeliveryKitSerializer,
        summary="The delivery kit: hostfile, NCCL environment, Slurm topology.conf, "
        "Kubernetes labels (rebuilt after each swap) / 交付工具包",
    )
    def get(self, request: Request, number: str) -> Response:
        order = order_for_request(request, number)
        kit = health_selectors.order_delivery_kit(order)
        if kit is None:
            raise Problem(
                409,
                "not_delivered",
                _("Order %(n)s has not been delivered yet.") % {"n": order.number},
            )
        return Response(
            s.DeliveryKitSerializer(
                {
                    "hostfile": kit.hostfile,
                    "nccl_env": kit.nccl_env,
                    "guidance": [str(g) for g in kit.guidance],
                    "topology_conf": kit.topology_conf,
                    "k8s_labels": kit.k8s_labels,
                }
            ).data
        )


class OrderSshKeys(OrdersView):
    @extend_schema(
        operation_id="orders_set_ssh_keys",
        request=s.OrderKeysSerializer,
        responses=s.OrderDetailSerializer,
        parameters=[IDEMPOTENCY],
        summary="Choose the SSH keys the nodes get (until provisioning) / 选择 SSH 公钥",
    )
    @idempotent
    def post(self, request: Request, number: str) -> Response:
        body = s.OrderKeysSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        order = _order(organisation(request), number)
        order_services.order_set_access(
            order=order,
            ssh_key_ids=sorted(set(body.validated_data["ssh_key_ids"])),
            actor=actor(request),
        )
        return Response(order_detail_data(request, number))


class OrderTerms(OrdersView):
    scope_family = "contracts"

    @extend_schema(
        operation_id="orders_accept_terms",
        request=s.TermsAcceptSerializer,
        responses=s.OrderDetailSerializer,
        parameters=[IDEMPOTENCY],
        summary="Accept the standard terms (orders that need no contract) / 接受标准条款",
    )
    @idempotent
    def post(self, request: Request, number: str) -> Response:
        body = s.TermsAcceptSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        order = _order(organisation(request), number)
        gate.terms_accept(
            order=order, user=actor(request), name=body.validated_data["name"], ip=ip(request)
        )
        return Response(order_detail_data(request, number))


def _open_invoice(order: Order) -> Invoice:
    invoices = [i for i in order.invoices.all() if i.status == InvoiceStatus.ISSUED]
    if order.status != OrderStatus.AWAITING_PAYMENT:
        invoices = [i for i in invoices if i.period_seq != 1]
    if not invoices:
        raise DomainError(_("Order %(n)s has no invoice open for payment.") % {"n": order.number})
    return invoices[0]


class OrderBankTransfer(OrdersView):
    scope_family = "billing"

    @extend_schema(
        operation_id="orders_bank_transfer",
        responses=s.BankTransferSerializer,
        summary="Bank transfer instructions for the open invoice / 银行转账信息",
    )
    def get(self, request: Request, number: str) -> Response:
        order = _order(organisation(request), number)
        invoice = _open_invoice(order)
        bank = bank_details(order.site, language())
        return Response(
            s.BankTransferSerializer(
                {
                    "invoice": invoice.number,
                    "amount": invoice.amount_due,
                    "currency": invoice.currency,
                    "due_at": invoice.due_at,
                    "reference": invoice.bank_reference or invoice.number,
                    "account_name": bank["account_name"],
                    "account_number": bank["account_number"],
                    "bank_name": bank["bank_name"],
                    "swift_code": bank.get("swift", ""),
                }
            ).data
        )


class OrderCardPayment(OrdersView):
    scope_family = "billing"

    @extend_schema(
        operation_id="orders_card_payment",
        request=None,
        responses={201: s.CardPaymentSerializer},
        parameters=[IDEMPOTENCY],
        summary="Start a card payment (a Stripe PaymentIntent's client secret) / 发起银行卡支付",
    )
    @idempotent
    def post(self, request: Request, number: str) -> Response:
        order = _order(organisation(request), number)
        payment, secret = payment_services.payment_card_start(order=order, actor=actor(request))
        return Response(
            s.CardPaymentSerializer(
                {
                    "payment": payment.pk,
                    "client_secret": secret,
                    "publishable_key": settings.STRIPE_PUBLISHABLE_KEY,
                    "amount": payment.amount,
                    "currency": payment.currency,
                }
            ).data,
            status=201,
        )
