"""Placing a quote's nodes (topology-aware) and holding them until it expires."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from billing.models import ItemKind, Quote, QuoteStatus
from billing.periods import rental_period
from billing.services.quotes.common import OPEN_STATUSES, move
from core.errors import NotEnoughCapacity
from core.types import Actor
from inventory import selectors as inventory_selectors
from inventory import services as inventory_services
from inventory.models import Node, NodeType
from inventory.placement import leaf_summary, unit_summary


def place_and_hold(quote: Quote, actor: Actor) -> None:
    """Choose concrete nodes per node type (topology-aware) and hold them until expiry."""
    start_at, end_at = rental_period(
        site=quote.site, start_date=quote.start_date, term=quote.term, duration=quote.duration
    )
    wanted: dict[int, int] = defaultdict(int)
    for item in quote.items.filter(kind=ItemKind.NODE):
        wanted[item.node_type_id] += int(item.quantity)
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
            site=quote.site, node_type=nt, count=count, start_at=start_at, end_at=end_at
        )
        if found.placement is None:
            values = {
                "free": found.free_count,
                "count": count,
                "type": nt.display_name,
                "site": quote.site.display_name,
            }
            if found.earliest_start:
                values["when"] = found.earliest_start.astimezone(quote.site.tzinfo).strftime(
                    "%Y-%m-%d %H:%M"
                )
                message = ngettext(
                    "Only %(free)s of %(count)s %(type)s node is free at %(site)s for the "
                    "whole period; the full count is free from %(when)s.",
                    "Only %(free)s of %(count)s %(type)s nodes are free at %(site)s for the "
                    "whole period; the full count is free from %(when)s.",
                    count,
                )
            else:
                message = ngettext(
                    "Only %(free)s of %(count)s %(type)s node is free at %(site)s for the "
                    "whole period, and the full count is not free within a year.",
                    "Only %(free)s of %(count)s %(type)s nodes are free at %(site)s for the "
                    "whole period, and the full count is not free within a year.",
                    count,
                )
            raise NotEnoughCapacity(message % values)
        chosen.extend(found.placement.node_ids)
        leaves = leaf_summary(found.placement)
        unit_count, rails = unit_summary(
            leaves, inventory_selectors.leaf_units(site=quote.site, leaves=[n for n, _c in leaves])
        )
        placement["groups"].append(
            {
                "node_type": nt.code,
                "node_type_name": nt.name,
                "node_type_name_zh": nt.name_zh,
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
        quote.placement = placement
        return
    reservations = inventory_services.reservation_hold(
        nodes=list(Node.objects.filter(pk__in=chosen)),
        start_at=start_at,
        end_at=end_at,
        owner_ref=f"quote:{quote.number}-v{quote.version}",
        expires_at=quote.expires_at,
        actor=actor,
    )
    quote.reservation_group = reservations[0].group
    quote.placement = placement


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
