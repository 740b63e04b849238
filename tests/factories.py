"""Small builders for inventory objects in tests (plain functions, real models)."""

from __future__ import annotations

import itertools
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.utils import timezone

from core.models import OutboxMessage
from inventory.models import (
    Fabric,
    GPUModel,
    Interconnect,
    MaintenanceWindow,
    Node,
    NodeEvent,
    NodeType,
    Rack,
    Reservation,
    Site,
    Switch,
    SwitchRole,
)
from portal.celery import app

_seq = itertools.count(1)


def site(code: str = "SZ", **kw) -> Site:
    defaults = {
        "name": "Shenzhen",
        "city": "Shenzhen",
        "timezone": "Asia/Shanghai",
        "currency": "CNY",
        "vat_rate": Decimal("0.06"),
    }
    defaults.update(kw)
    return Site.objects.get_or_create(code=code, defaults=defaults)[0]


def gpu_model(name: str = "H100 80G SXM") -> GPUModel:
    return GPUModel.objects.get_or_create(
        name=name,
        defaults={
            "memory_gb": 80,
            "memory_bandwidth_tbs": Decimal("3.35"),
            "reference_tflops": Decimal("790"),
            "reference_source": "test",
            "nvlink_generation": 4,
        },
    )[0]


def node_type(code: str = "h100-8x", **kw) -> NodeType:
    defaults = {
        "name": "H100 8-GPU NVLink",
        "cpu": "2× Xeon Platinum 8480+",
        "ram_gb": 2048,
        "gpu_model": gpu_model(),
        "gpu_count": 8,
        "interconnect": Interconnect.NVSWITCH,
        "nic_count": 8,
        "nic_speed_gbps": 400,
        "fabric": Fabric.IB_NDR,
        "storage": "2× 3.84 TB NVMe RAID1",
    }
    defaults.update(kw)
    return NodeType.objects.get_or_create(code=code, defaults=defaults)[0]


def rack(s: Site, name: str) -> Rack:
    return Rack.objects.get_or_create(site=s, name=name)[0]


def leaf(s: Site, name: str, fabric: str = Fabric.IB_NDR, *, ports: int = 8192) -> Switch:
    """A leaf switch; by default with room for any test's nodes (the port budget itself is
    tested in tests/inventory/test_port_budget.py)."""
    return Switch.objects.get_or_create(
        site=s,
        name=name,
        defaults={
            "role": SwitchRole.LEAF,
            "fabric": fabric,
            "port_speed_gbps": 400,
            "port_count": ports,
        },
    )[0]


def node(s: Site, nt: NodeType, *, leaf_name: str = "leaf-1", rack_name: str = "R01", **kw) -> Node:
    n = next(_seq)
    defaults = {
        "hostname": f"{s.code.lower()}-{nt.code}-{n:05d}",
        "serial": f"SN{n:08d}",
        "bmc_address": f"https://10.0.{n // 250}.{n % 250}",
    }
    defaults.update(kw)
    return Node.objects.create(
        site=s, node_type=nt, rack=rack(s, rack_name), leaf_switch=leaf(s, leaf_name), **defaults
    )


def demo_start(sz: Site) -> date:
    """The demo's start date: a week after today in Shenzhen."""
    from billing.pricing.periods import site_today

    return site_today(sz) + timedelta(days=7)


def demo_objects() -> dict:
    """The objects of ``seed_demo`` that tests use, by short name (see conftest ``demo``)."""
    from django.contrib.auth import get_user_model

    from accounts.models import Organisation
    from billing.demo import DEMO_ORGANISATION_TAX_IDS
    from billing.pricing import selectors

    users = get_user_model().objects
    sz = Site.objects.get(code="SZ")
    return {
        "sz": sz,
        "site": sz,
        "hk": Site.objects.get(code="HK"),
        "h100": NodeType.objects.get(code="h100-8x-nvlink"),
        "a100": NodeType.objects.get(code="a100-40g-4x"),
        "e5": NodeType.objects.get(code="e5-baremetal"),
        "rtx": GPUModel.objects.get(name="RTX 3090 24G"),
        "types": {nt.code: nt for nt in NodeType.objects.all()},
        "gpus": {g.name: g for g in GPUModel.objects.all()},
        "org": Organisation.objects.get(tax_id=DEMO_ORGANISATION_TAX_IDS[0]),
        "sales": users.get(username="sales"),
        "manager": users.get(username="manager"),
        "admin": users.get(username="admin"),
        "customer": users.get(username="customer"),
        "start": demo_start(sz),
        "sz_book": selectors.price_book_in_force(site=sz),
    }


def contract_signed_shortcut(order):
    """Tests of payments: the order's contract as if signed and countersigned (no PDFs,
    no codes), so that paying it starts provisioning as before the gate."""
    from core import lifecycle

    for contract in order.contracts.all():
        lifecycle.transition(contract, to="customer_signed", reason="test: signed")
        lifecycle.transition(contract, to="countersigned", reason="test: countersigned")
    return order


def run_outbox(*names: str) -> int:
    """Run the pending outbox messages of these tasks, as the worker would, once each."""
    ran = 0
    for message in OutboxMessage.objects.filter(status="pending").order_by("pk"):
        if not all(name in names for name in message.task_names):
            continue
        for name, args in message.steps:
            app.tasks[name](*args)
        message.status = "published"
        message.save(update_fields=["status"])
        ran += 1
    return ran


def run_document_renders() -> int:
    """Run the document renders web requests asked the outbox for (the documents queue)."""
    names = {
        name
        for message in OutboxMessage.objects.filter(status="pending")
        for name in message.task_names
        if name.rsplit(".", 1)[-1].startswith("document_")
    }
    return run_outbox(*names) if names else 0


def operations_fleet(
    n: int, *, start: datetime, days: int = 90, prefix: str = "fleet", site_code: str = "FL"
) -> list[Node]:
    """``n`` nodes of one site in racks of 16 under leaf switches of 32 (two per scalable
    unit), with bookings over ``[start, start + days)`` built by ``bulk_create`` (the
    reservation calendar's tests, its browser test and ``bench/operations.py``): per node
    an ended booking before the start, a firm one, then a hold expiring in a day; every
    25th node a maintenance window, every 40th a faulty period. Returns the nodes."""
    s = site(site_code, name=f"Fleet {site_code}", city="Shenzhen")
    nt = node_type(f"{prefix}-h100")
    racks = [rack(s, f"{prefix}-R{i:03d}") for i in range((n + 15) // 16)]
    leaves = []
    for i in range((n + 31) // 32):
        sw = leaf(s, f"{prefix}-leaf-{i:03d}")
        if not sw.scalable_unit:
            Switch.objects.filter(pk=sw.pk).update(scalable_unit=f"{prefix}-SU{i // 2:02d}")
        leaves.append(sw)
    nodes = Node.objects.bulk_create(
        [
            Node(
                site=s,
                node_type=nt,
                rack=racks[i // 16],
                leaf_switch=leaves[i // 32],
                hostname=f"{prefix}-{i:05d}",
                serial=f"{prefix.upper()}-SN{i:07d}",
                status="faulty" if i % 40 == 39 else "available",
            )
            for i in range(n)
        ]
    )
    if any(x.pk is None for x in nodes):
        nodes = list(Node.objects.filter(hostname__startswith=f"{prefix}-").order_by("hostname"))
    day = timedelta(days=1)
    rows = []
    for i, x in enumerate(nodes):
        offset = (i % 7) * day
        firm_from = start + offset + 2 * day
        firm_to = firm_from + (20 + i % 10) * day
        hold_from = firm_to + 2 * day
        rows += [
            Reservation(
                node=x,
                start_at=start - 30 * day,
                end_at=start - 10 * day,
                held_from=start - 31 * day,
                held_until=start - 10 * day + timedelta(hours=8),
                status="ended",
                owner_ref=f"order:{prefix}-old-{i % 50}",
            ),
            Reservation(
                node=x,
                start_at=firm_from,
                end_at=firm_to,
                held_from=firm_from - day,
                held_until=firm_to + timedelta(hours=8),
                status="firm",
                owner_ref=f"order:{prefix}-{i % 97}",
            ),
            Reservation(
                node=x,
                start_at=hold_from,
                end_at=hold_from + 30 * day,
                held_from=hold_from - day,
                held_until=hold_from + 30 * day + timedelta(hours=8),
                status="hold",
                expires_at=timezone.now() + day,
                owner_ref=f"quote:{prefix}-Q{i % 89}-v1",
            ),
        ]
    Reservation.objects.bulk_create(rows, batch_size=2000)
    MaintenanceWindow.objects.bulk_create(
        [
            MaintenanceWindow(
                node=x,
                start_at=start + 50 * day,
                end_at=start + 50 * day + timedelta(hours=6),
                reason="fleet maintenance",
            )
            for i, x in enumerate(nodes)
            if i % 25 == 0
        ]
    )
    NodeEvent.objects.bulk_create(
        [
            NodeEvent(node=x, from_status="available", to_status="faulty", reason="fleet")
            for i, x in enumerate(nodes)
            if i % 40 == 39
        ]
    )
    return nodes
