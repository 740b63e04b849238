"""Placing a quote's nodes (topology-aware) and holding them until it expires."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from billing.models import ItemKind, Quote, QuoteStatus
from billing.pricing.periods import rental_period
from billing.quotes.services.common import OPEN_STATUSES, ItemSpec, move
from core.errors import NotEnoughCapacity
from core.types import Actor
from inventory import selectors as inventory_selectors
from inventory import services as inventory_services
from inventory.models import Node, NodeType, Site
from inventory.placement import Candidate, Placement, leaf_summary, place, unit_summary


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


def place_and_hold(
    quote: Quote,
    actor: Actor,
    held: Held | None = None,
    prefer: Collection[int] = (),
    continues: str = "",
) -> None:
    """Choose concrete nodes per node type (topology-aware) and hold them until expiry.

    ``held``: the caller placed and held them already (``nodes_place_and_hold``), before
    the quote took its number; they are only recorded on the quote. ``prefer`` (node ids,
    e.g. a renewal's current nodes): where they are free for the whole period they are
    the ones held; else the nearest placement is.
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
            prefer=prefer,
            continues=continues,
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
    prefer: Collection[int] = (),
    continues: str = "",
) -> Held:
    """Place ``wanted`` nodes per node type over the rental period and hold them until
    ``expires_at``; raises ``NotEnoughCapacity`` (nothing held) when a type cannot be
    placed. Needs no quote, so a self-service order places its nodes before it takes any
    gapless number (the numbering lock is then held only for the short rest)."""
    start_at, end_at = rental_period(site=site, start_date=start_date, term=term, duration=duration)
    inventory_services.placement_lock(site_id=site.pk, node_type_ids=list(wanted))
    preferred_ids = set(prefer)
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
            site=site,
            node_type=nt,
            count=count,
            start_at=start_at,
            end_at=end_at,
            continues=continues,
        )
        chosen_placement = found.placement
        if preferred_ids:
            chosen_placement = keep_preferred(found.free, preferred_ids, count) or chosen_placement
        if chosen_placement is None:
            raise NotEnoughCapacity(shortage_message(site, nt, count, found))
        chosen.extend(chosen_placement.node_ids)
        leaves = leaf_summary(chosen_placement)
        unit_count, rails = unit_summary(
            leaves, inventory_selectors.leaf_units(site=site, leaves=[n for n, _c in leaves])
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
                "racks": len(chosen_placement.racks),
                "hostnames": [c.hostname for c in chosen_placement.nodes],
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
        continues=continues,
    )
    return Held(group=reservations[0].group, placement=placement)


def keep_preferred(
    free: Sequence[Candidate], preferred_ids: Collection[int], count: int
) -> Placement | None:
    """The preferred nodes that are free (as many as wanted), completed by the nearest
    others: under the preferred nodes' leaf switches first, else wherever the
    topology-aware placement puts them. ``None`` when no preferred node is free or the
    count cannot be met."""
    kept = sorted(
        (c for c in free if c.node_id in preferred_ids), key=lambda c: (c.leaf, c.hostname)
    )
    if not kept:
        return None
    if len(kept) >= count:
        return place(kept, count)
    need = count - len(kept)
    rest = [c for c in free if c.node_id not in preferred_ids]
    leaves = {c.leaf for c in kept}
    extra = place([c for c in rest if c.leaf in leaves], need) or place(rest, need)
    if extra is None:
        return None
    return Placement(tuple(kept) + extra.nodes)


def shortage_message(site: Site, nt: NodeType, count: int, found: Any) -> str:
    """ "Only 3 of 16 H100 nodes are free at Shenzhen for the whole period; …": what
    Send says when the nodes are not free, and what the draft page warns at once."""
    values = {
        "free": found.free_count,
        "count": count,
        "type": nt.display_name,
        "site": site.display_name,
    }
    if found.earliest_start:
        values["when"] = found.earliest_start.astimezone(site.tzinfo).strftime("%Y-%m-%d %H:%M")
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
    return message % values


def capacity_shortages(
    *, site: Site, term: str, duration: int, start_date: date, wanted: dict[int, int]
) -> list[str]:
    """The shortage messages for node counts per node type id (none: all are free now).
    Reads only: a draft is checked at once, and Send checks again while holding."""
    start_at, end_at = rental_period(site=site, start_date=start_date, term=term, duration=duration)
    types = NodeType.objects.in_bulk(list(wanted))
    out = []
    for type_id, count in sorted(wanted.items()):
        if count <= 0 or type_id not in types:
            continue
        found = inventory_selectors.availability_search(
            site=site, node_type=types[type_id], count=count, start_at=start_at, end_at=end_at
        )
        if found.placement is None:
            out.append(shortage_message(site, types[type_id], count, found))
    return out


def quote_capacity_shortages(quote: Quote) -> list[str]:
    """``capacity_shortages`` for a quote's node lines."""
    wanted: dict[int, int] = defaultdict(int)
    for item in quote.items.all():
        if item.kind == ItemKind.NODE and item.node_type_id:
            wanted[item.node_type_id] += int(item.quantity)
    return capacity_shortages(
        site=quote.site,
        term=quote.term,
        duration=quote.duration,
        start_date=quote.start_date,
        wanted=dict(wanted),
    )


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
