"""Node writes: adding and editing nodes (with the leaf group's port budget) and moving
them along their lifecycle, one at a time or in bulk."""

from __future__ import annotations

from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from core import lifecycle
from core.errors import DomainError
from core.texts import Text
from core.types import Actor
from inventory.models import (
    ACTIVE_RESERVATION_STATUSES,
    Node,
    NodeStatus,
    NodeType,
    Reservation,
    Switch,
    SwitchRole,
)

__all__ = [
    "NODE_BOOKING_BOUND",
    "NODE_EDITABLE",
    "leaf_group",
    "node_bulk_create",
    "node_bulk_transition",
    "node_create",
    "node_mark_faulty",
    "node_transition",
    "node_update",
    "port_budget_check",
]


def node_transition(*, node: Node, to_status: str, actor: Actor = None, reason: str) -> Node:
    """Move a node along its lifecycle, recording who, when, from, to and why."""
    if not reason or not reason.strip():
        raise DomainError(_("Say why the node changes status."))
    return lifecycle.transition(node, to=to_status, actor=actor, reason=reason)


def node_mark_faulty(*, node: Node, actor: Actor = None, reason: str) -> Node:
    """Take a node out of service because it is broken."""
    return node_transition(node=node, to_status=NodeStatus.FAULTY, actor=actor, reason=reason)


def node_bulk_transition(
    *, nodes: Sequence[Node], to_status: str, actor: Actor = None, reason: str
) -> tuple[list[Node], list[str]]:
    """Move each node through the state machine; one refused move does not stop the rest.

    Returns the moved nodes and one message per refused node.
    """
    moved: list[Node] = []
    refused: list[str] = []
    for node in nodes:
        try:
            moved.append(
                node_transition(node=node, to_status=to_status, actor=actor, reason=reason)
            )
        except DomainError as exc:
            refused.append(exc.message)
    return moved, refused


def leaf_group(leaf: Switch) -> list[Switch]:
    """The switches of a leaf's group: the rail switches of its scalable unit, or itself."""
    if not leaf.scalable_unit:
        return [leaf]
    return list(
        Switch.objects.filter(
            site_id=leaf.site_id, scalable_unit=leaf.scalable_unit, role=SwitchRole.LEAF
        ).order_by("name")
    )


def port_budget_check(
    *, leaf_switch_id: int, node_type_id: int, exclude_node_id: int | None
) -> None:
    """A node under a leaf group must find a free port for each of its NICs: the group's
    ports for nodes against the NICs of the nodes already under it (retired ones left
    out). Raises ``DomainError`` with the figures."""
    leaf = Switch.objects.select_for_update().get(pk=leaf_switch_id)
    group = leaf_group(leaf)
    budget = sum(s.ports_for_nodes for s in group)
    nodes = Node.objects.filter(leaf_switch__in=group).exclude(status=NodeStatus.RETIRED)
    if exclude_node_id is not None:
        nodes = nodes.exclude(pk=exclude_node_id)
    used = nodes.aggregate(n=Sum("node_type__nic_count"))["n"] or 0
    needs = NodeType.objects.values_list("nic_count", flat=True).get(pk=node_type_id)
    if used + needs > budget:
        name = leaf.scalable_unit or leaf.name
        raise DomainError(
            ngettext(
                "Leaf group %(group)s (%(n)s switch) has %(budget)s ports for nodes; its nodes "
                "use %(used)s and this node needs %(needs)s more. Put it under another leaf "
                "group, or give the switch more ports for nodes.",
                "Leaf group %(group)s (%(n)s switches) has %(budget)s ports for nodes; its "
                "nodes use %(used)s and this node needs %(needs)s more. Put it under another "
                "leaf group, or give the switches more ports for nodes.",
                len(group),
            )
            % {"group": name, "n": len(group), "budget": budget, "used": used, "needs": needs}
        )


@transaction.atomic
def node_create(
    *,
    site_id: int,
    node_type_id: int,
    rack_id: int,
    leaf_switch_id: int,
    hostname: str,
    serial: str,
    bmc_address: str = "",
    status: str = NodeStatus.AVAILABLE,
    actor: Actor = None,
    reason: str = "",
) -> Node:
    """Add a node to the inventory, validated, with a first event row."""
    node = Node(
        site_id=site_id,
        node_type_id=node_type_id,
        rack_id=rack_id,
        leaf_switch_id=leaf_switch_id,
        hostname=hostname,
        serial=serial,
        bmc_address=bmc_address,
        status=status,
    )
    node.full_clean()
    port_budget_check(
        leaf_switch_id=leaf_switch_id, node_type_id=node_type_id, exclude_node_id=None
    )
    node.save()
    lifecycle.record_creation([node], actor=actor, reason=reason or Text("Added to the inventory."))
    return node


# Fields an operator may edit on an existing node (status moves through the lifecycle).
NODE_EDITABLE = ("hostname", "serial", "bmc_address", "site", "rack", "leaf_switch", "node_type")
# Changing these under an active booking would change what the customer was sold.
NODE_BOOKING_BOUND = ("site", "leaf_switch", "node_type")


@transaction.atomic
def node_update(
    *,
    node_id: int,
    changes: dict[str, object],
    status: str | None = None,
    actor: Actor = None,
    reason: str,
) -> Node:
    """Edit a node's fields (admin form, CSV import, API), validated as a whole.

    Refuses to move a node that is booked (an active hold or firm reservation that has
    not ended) to another site, leaf switch or node type: placement and price were based
    on them. A changed ``status`` moves through the node lifecycle with an event.
    """
    node = Node.objects.select_for_update().get(pk=node_id)
    unknown = set(changes) - set(NODE_EDITABLE) - {"notes"}
    if unknown:
        raise DomainError(
            _("These node fields cannot be edited: %(fields)s.")
            % {"fields": ", ".join(sorted(unknown))}
        )
    changed = [
        name
        for name, value in changes.items()
        if getattr(node, f"{name}_id" if name in (*NODE_BOOKING_BOUND, "rack") else name)
        != (getattr(value, "pk", value))
    ]
    bound = [name for name in changed if name in NODE_BOOKING_BOUND]
    if bound:
        booking = (
            Reservation.objects.filter(
                node=node, status__in=ACTIVE_RESERVATION_STATUSES, end_at__gt=timezone.now()
            )
            .order_by("start_at")
            .first()
        )
        if booking is not None:
            labels = {f.name: str(f.verbose_name) for f in Node._meta.fields}
            raise DomainError(
                _(
                    "Node %(hostname)s is booked (%(owner)s until %(end)s), so its "
                    "%(fields)s cannot change; move the booking to another node first."
                )
                % {
                    "hostname": node.hostname,
                    "owner": booking.owner_ref,
                    "end": booking.end_at.strftime("%Y-%m-%d"),
                    "fields": ", ".join(labels[name] for name in bound),
                }
            )
    for name in changed:
        setattr(node, name, changes[name])
    if changed:
        try:
            node.full_clean(exclude=["status"])
        except ValidationError as exc:
            raise DomainError(" ".join(exc.messages)) from exc
        if {"leaf_switch", "node_type"} & set(changed):
            port_budget_check(
                leaf_switch_id=node.leaf_switch_id,
                node_type_id=node.node_type_id,
                exclude_node_id=node.pk,
            )
        node.save(update_fields=changed)
    if status is not None and status != node.status:
        node = node_transition(node=node, to_status=status, actor=actor, reason=reason)
    return node


@transaction.atomic
def node_bulk_create(*, nodes: Sequence[Node], actor: Actor = None, reason: str) -> list[Node]:
    """Add many nodes at once (demo data, large imports): each is validated with
    ``clean()``; uniqueness is left to the database's constraints."""
    for node in nodes:
        node.clean_fields(exclude=["site", "node_type", "rack", "leaf_switch"])
        node.clean()
    created = Node.objects.bulk_create(nodes)
    if any(n.pk is None for n in created):
        hostnames = [n.hostname for n in nodes]
        created = list(Node.objects.filter(hostname__in=hostnames))
    lifecycle.record_creation(created, actor=actor, reason=reason)
    return created
