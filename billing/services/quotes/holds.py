"""Placing a quote's nodes (topology-aware) and holding them until it expires."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.utils.translation import gettext as _

from billing.models import ItemKind, Quote, QuoteStatus
from billing.periods import rental_period
from billing.services.quotes.common import OPEN_STATUSES, ItemSpec, move
from core.errors import NotEnoughCapacity
from core.types import Actor
from inventory import selectors as inventory_selectors
from inventory import services as inventory_services
from inventory.models import Node, NodeType, Site
from inventory.placement import leaf_summary, unit_summary


@dataclass(frozen=True)
class Held:
    """Nodes placed and held for a quote that is still to be numbered (self-service):
    the reservation group (``None`` when no node was asked for) and the placement."""

    group: uuid.UUID | None
    placement: dict[str, Any]


def nodes_wanted(items: Iterable[ItemSpec]) -> dict[int, int]:
    """Node type id -> nodes, from a quote's item specs (as ``place_and_hold`` counts)."""
    wanted: dict[int, int] = defaultdict(int)
    for item in items:
        if item.kind == ItemKind.NODE and item.node_type_id is not None:
            wanted[item.node_type_id] += int(item.quantity)
    return dict(wanted)


def place_and_hold(quote: Quote, actor: Actor, held: Held | None = None) -> None:
    """Choose concrete nodes per node type (topology-aware) and hold them until expiry.

    ``held``: the caller placed and held them already (``nodes_place_and_hold``), before
    the quote took its number; they are only recorded on the quote.
    """
    if held is None:
        wanted: dict[int, int] = defaultdict(int)
        for item in quote.items.filter(kind=ItemKind.NODE):
            wanted[item.node_type_id] += int(item.quantity)
        held = nodes_place_and_hold(
            site=quote.site,
            start_date=quote.start_date,
            term=quote.term,
            duration=quote.duration,
            wanted=wanted,
            owner_ref=f"quote:{quote.number}-v{quote.version}",
            expires_at=quote.expires_at,
            actor=actor,
        )
    quote.reservation_group = held.group
    quote.placement = held.placement


def nodes_place_and_hold(
    *,
    site: Site,
    start_date: date,
    term: str,
    duration: int,
    wanted: dict[int, int],
    owner_ref: str,
    expires_at: datetime | None,
    actor: Actor,
) -> Held:
    """Place ``wanted`` nodes per node type over the rental period and hold them until
    ``expires_at``; raises ``NotEnoughCapacity`` (nothing held) when a type cannot be
    placed. Needs no quote, so a self-service order places its nodes before it takes any
    gapless number (the numbering lock is then held only for the short rest)."""
    start_at, end_at = rental_period(site=site, start_date=start_date, term=term, duration=duration)
    types = NodeType.objects.in_bulk(list(wanted))
    chosen = []
    placement: dict[str, Any] = {
        "start_at": start_at.isoformat(),
        "end_at": end_at.isoformat(),
        "groups": [],
    }
    for type_id, count in sorted(wanted.items()):
        nt = types[type_id]
        found = inventory_selectors.availability_search(
            site=site, node_type=nt, count=count, start_at=start_at, end_at=end_at
        )
        if found.placement is None:
            values = {
                "free": found.free_count,
                "count": count,
                "type": nt.name,
                "site": site.display_name,
            }
            if found.earliest_start:
                values["when"] = found.earliest_start.astimezone(site.tzinfo).strftime(
                    "%Y-%m-%d %H:%M"
                )
                message = _(
                    "Only %(free)s of %(count)s %(type)s nodes are free at %(site)s for the "
                    "whole period; the full count is free from %(when)s."
                )
            else:
                message = _(
                    "Only %(free)s of %(count)s %(type)s nodes are free at %(site)s for the "
                    "whole period, and the full count is not free within a year."
                )
            raise NotEnoughCapacity(message % values)
        chosen.extend(found.placement.node_ids)
        leaves = leaf_summary(found.placement)
        unit_count, rails = unit_summary(
            leaves, inventory_selectors.leaf_units(site=site, leaves=[n for n, _c in leaves])
        )
        placement["groups"].append(
            {
                "node_type": nt.code,
                "node_type_name": nt.name,
                "count": count,
                "fabric": nt.get_fabric_display(),
                "fabric_code": nt.fabric,
                "leaves": leaves,
                "units": unit_count,
                "rails": rails,
                "racks": len(found.placement.racks),
                "hostnames": [c.hostname for c in found.placement.nodes],
            }
        )
    if not chosen:
        return Held(group=None, placement=placement)
    reservations = inventory_services.reservation_hold(
        nodes=list(Node.objects.filter(pk__in=chosen)),
        start_at=start_at,
        end_at=end_at,
        owner_ref=owner_ref,
        expires_at=expires_at,
        actor=actor,
    )
    return Held(group=reservations[0].group, placement=placement)


def release_holds(quote: Quote, actor: Actor, reason: str) -> None:
    if quote.reservation_group:
        inventory_services.reservation_group_release(
            group=quote.reservation_group, actor=actor, reason=reason
        )


def supersede_others(others: list[Quote], *, by: Quote, actor: Actor) -> None:
    """Only one version of a quote may be open: the others stop, and free their nodes."""
    reason = _("Superseded by v%(v)s.") % {"v": by.version}
    for other in others:
        if other.status in OPEN_STATUSES:
            release_holds(other, actor, reason)
            move(other, QuoteStatus.SUPERSEDED, actor, reason)
