"""Load the demo inventory and users: the seeds' offer in Shenzhen and Hong Kong.

Idempotent: run it any number of times; it updates what exists and adds what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from ipaddress import IPv4Address
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone

from billing import demo as billing_demo
from billing.contracts import signatures
from billing.demo import DEMO_CUSTOMER_NAME
from billing.demo import contracts as demo_contracts
from billing.demo import running as demo_running
from billing.models import OrderStatus
from core.errors import DomainError
from inventory import services
from inventory.gpus import BY_KEY, GpuFacts
from inventory.models import (
    Fabric,
    GPUModel,
    ImageProfile,
    Interconnect,
    Node,
    NodeStatus,
    NodeType,
    Rack,
    Reservation,
    Site,
    Switch,
    SwitchRole,
)
from provisioning.validation.services import validation_rules_seed

# The demo's GPU models, in the order they are created: their figures and sources are
# the one table of GPU facts (inventory.gpus: measured GEMM of ../shared/VALIDATION.md).
DEMO_GPU_KEYS = ("H100", "H200", "A100-40G", "A100-80G", "V100S", "RTX3090")


def gpu_model_defaults(facts: GpuFacts) -> dict[str, Any]:
    """A ``GPUModel`` row's fields from the table's row."""
    return {
        "name": facts.seed_name,
        "memory_gb": facts.memory_gib,
        "memory_bandwidth_tbs": facts.hbm_tbs,
        "reference_tflops": facts.gemm_tflops,
        "reference_precision": facts.gemm_precision,
        "nvlink_generation": facts.nvlink_generation,
        "reference_source": facts.source,
    }


GPU_MODELS: list[dict[str, Any]] = [gpu_model_defaults(BY_KEY[key]) for key in DEMO_GPU_KEYS]

NODE_TYPES: list[dict[str, Any]] = [
    {
        "code": "h100-8x-nvlink",
        "name": "H100 8-GPU NVLink",
        "cpu": "2× Intel Xeon Platinum 8480+",
        "ram_gb": 2048,
        "ram_kind": "DDR5 ECC",
        "gpu": "H100 80G SXM",
        "gpu_count": 8,
        "interconnect": Interconnect.NVSWITCH,
        "nic_count": 8,
        "nic_speed_gbps": 400,
        "fabric": Fabric.IB_NDR,
        "storage": "2× 3.84 TB NVMe (RAID1)",
        "description": "4× NVSwitch, 8× ConnectX-7 400 Gb/s InfiniBand NDR.",
    },
    {
        "code": "a100-40g-4x",
        "name": "A100 40G 4-GPU",
        "cpu": "2× AMD EPYC 7742",
        "ram_gb": 512,
        "ram_kind": "DDR4 ECC",
        "gpu": "A100 40G SXM",
        "gpu_count": 4,
        "interconnect": Interconnect.NVLINK,
        "nic_count": 2,
        "nic_speed_gbps": 200,
        "fabric": Fabric.IB_HDR,
        "storage": "2× 1.92 TB NVMe (RAID1)",
        "description": "4× A100 40G with NVLink, 2× ConnectX-6 200 Gb/s.",
    },
    {
        "code": "e5-baremetal",
        "name": "Bare-metal E5",
        "name_zh": "E5 裸金属服务器",
        "cpu": "2× Intel Xeon E5-2698 v4",
        "ram_gb": 256,
        "ram_kind": "DDR4 ECC",
        "gpu": None,
        "gpu_count": 0,
        "interconnect": Interconnect.PCIE,
        "nic_count": 1,
        "nic_speed_gbps": 10,
        "fabric": Fabric.ETHERNET,
        "storage": "2× 480 GB SSD",
        "optional": ["RTX 3090 24G", "V100S 32G PCIe"],
        "max_optional_gpus": 4,
        "description": "Optional RTX 3090 or V100S cards, 1–4, PCIe only.",
    },
]

NODE_TYPES_NICS = {nt["code"]: nt["nic_count"] for nt in NODE_TYPES}

SITES: list[dict[str, Any]] = [
    {
        "code": "SZ",
        "name": "Shenzhen",
        "name_zh": "深圳",
        "city": "Shenzhen",
        "city_zh": "深圳",
        "timezone": "Asia/Shanghai",
        "currency": "CNY",
        "vat_rate": Decimal("0.0600"),
        "ssh_jump_host": "jump.sz.gpu-cloud.example",
    },
    {
        "code": "HK",
        "name": "Hong Kong",
        "name_zh": "香港",
        "city": "Hong Kong",
        "city_zh": "香港",
        "timezone": "Asia/Hong_Kong",
        "currency": "HKD",
        "vat_rate": Decimal("0.0000"),
        "ssh_jump_host": "jump.hk.gpu-cloud.example",
    },
]


RAILS = 8  # rail switches per scalable unit for the 8-NIC (rail-optimised) node types


@dataclass(frozen=True)
class Pod:
    """A block of identical nodes under one leaf switch."""

    site: str
    node_type: str
    short: str  # used in host names
    leaf: str
    fabric: str
    port_speed_gbps: int
    spine: str
    nodes: int
    nodes_per_rack: int
    rack_prefix: str
    first_rack: int


# 16 H100 nodes fit under one Shenzhen leaf (20 each); 64 need four leaves.
PODS: list[Pod] = [
    *[
        Pod("SZ", "h100-8x-nvlink", "h100", f"sz-ib-leaf-{i:02d}", Fabric.IB_NDR, 400,
            "sz-ib-spine-01", 20, 4, "A", 1 + (i - 1) * 5)
        for i in range(1, 5)
    ],
    *[
        Pod("SZ", "a100-40g-4x", "a100", f"sz-hdr-leaf-{i:02d}", Fabric.IB_HDR, 200,
            "sz-hdr-spine-01", 16, 8, "B", 1 + (i - 1) * 2)
        for i in range(1, 3)
    ],
    Pod("SZ", "e5-baremetal", "e5", "sz-eth-leaf-01", Fabric.ETHERNET, 10,
        "sz-eth-spine-01", 24, 12, "C", 1),
    Pod("HK", "h100-8x-nvlink", "h100", "hk-ib-leaf-01", Fabric.IB_NDR, 400,
        "hk-ib-spine-01", 16, 4, "A", 1),
    Pod("HK", "a100-40g-4x", "a100", "hk-hdr-leaf-01", Fabric.IB_HDR, 200,
        "hk-hdr-spine-01", 8, 8, "B", 1),
    Pod("HK", "e5-baremetal", "e5", "hk-eth-leaf-01", Fabric.ETHERNET, 10,
        "hk-eth-spine-01", 24, 12, "C", 1),
]  # fmt: skip

# (site, short, number) -> status the demo node starts in, for a realistic fleet.
DEMO_STATUSES = {
    ("SZ", "h100", 80): NodeStatus.MAINTENANCE,
    ("HK", "e5", 24): NodeStatus.FAULTY,
}

DEMO_USERS: list[dict[str, Any]] = [
    {"username": "admin", "password": "admin-demo-2026", "superuser": True, "group": None,
     "email": "admin@example.com"},
    {"username": "manager", "password": "manager-demo-2026", "superuser": False,
     "group": "Sales managers", "email": "manager@example.com"},
    {"username": "sales", "password": "sales-demo-2026", "superuser": False, "group": "Sales",
     "email": "sales@example.com"},
    {"username": "ops", "password": "ops-demo-2026", "superuser": False, "group": "Operations",
     "email": "ops@example.com"},
    {"username": "finance", "password": "finance-demo-2026", "superuser": False,
     "group": "Finance", "email": "finance@example.com"},
    {"username": "support", "password": "support-demo-2026", "superuser": False,
     "group": "Support", "email": "support@example.com"},
    {"username": "customer", "password": "customer-demo-2026", "superuser": False,
     "group": None, "email": "customer@example.com", "full_name": DEMO_CUSTOMER_NAME},
]  # fmt: skip

GROUP_PERMISSIONS = {
    "Operations": ("inventory", ("view", "add", "change")),
    "Sales": ("inventory", ("view",)),
    "Sales managers": ("inventory", ("view",)),
    # Invoices are marked paid (bank transfers) in the back office.
    "Finance": ("billing", ("view", "change")),
    # The support desk: tickets (work them), saved replies, status incidents.
    "Support": ("support", ("view", "add", "change")),
}

# The staff actions each role may take, by the permission each action names (issue 25:
# tests/portal/test_staff_actions.py walks every action as every role).
GROUP_ACTION_PERMISSIONS = {
    "Operations": (
        # The provisioning run page: see it; retry a step, swap a node, cancel the run.
        "provisioning.view_provisioningrun",
        "provisioning.change_provisioningrun",
        # Re-run validation on a node; the outbox: publish waiting work now.
        "provisioning.view_nodevalidation",
        "provisioning.change_nodevalidation",
        "core.view_outboxmessage",
        "core.change_outboxmessage",
        # The support desk's queue and missed clocks (read); status incidents (post).
        "support.view_ticket",
        "support.view_statusincident",
        "support.add_statusincident",
        "support.change_statusincident",
        # The operations console: the order a calendar bar opens; maintenance over an
        # active booking (with a reason); utilisation and revenue.
        "billing.view_order",
        "inventory.override_booking",
        "inventory.see_operations_reports",
    ),
    "Sales": (),
    # The provider's countersignature (an authorised signatory).
    "Sales managers": ("billing.view_contract", "billing.countersign_contract"),
    # Credit notes and refunds; metered usage posted, imported or voided.
    "Finance": (
        "billing.add_creditnote",
        "billing.add_refund",
        "billing.record_usage",
        # Utilisation and revenue (the operations console's report page).
        "inventory.see_operations_reports",
    ),
    # Support sees the orders and nodes a ticket is about (in the back office).
    "Support": ("billing.view_order", "inventory.view_node", "provisioning.view_healthincident"),
}

DEMO_BOOKING = "order:demo-seed"

# The seeds' environment, installed on every node unless the order names another image.
IMAGE_PROFILES = [
    {
        "code": "ubuntu2204-cuda124-pt23",
        "name": "Ubuntu 22.04 + CUDA 12.4 + PyTorch 2.3 + DeepSpeed 0.14 + FlashAttention-2",
        "image_url": "http://images.provisioning.local/ubuntu-22.04-cuda-12.4-pytorch-2.3.iso",
        "ssh_user": "ubuntu",
        "is_default": True,
    },
    {
        "code": "ubuntu2204-bare",
        "name": "Ubuntu 22.04 (no GPU stack)",
        "image_url": "http://images.provisioning.local/ubuntu-22.04.iso",
        "ssh_user": "ubuntu",
        "is_default": False,
    },
]


class Command(BaseCommand):
    help = "Load the demo inventory, price books and users (Shenzhen, Hong Kong). Idempotent."

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        sites = {
            s["code"]: Site.objects.update_or_create(code=s["code"], defaults=s)[0] for s in SITES
        }
        gpus = {
            g["name"]: GPUModel.objects.update_or_create(name=g["name"], defaults=g)[0]
            for g in GPU_MODELS
        }
        types = {}
        for spec in NODE_TYPES:
            spec = dict(spec)
            optional = spec.pop("optional", [])
            gpu = spec.pop("gpu")
            spec["gpu_model"] = gpus[gpu] if gpu else None
            nt = NodeType.objects.update_or_create(code=spec["code"], defaults=spec)[0]
            nt.optional_gpu_models.set([gpus[name] for name in optional])
            types[nt.code] = nt

        for profile in IMAGE_PROFILES:
            ImageProfile.objects.update_or_create(code=profile["code"], defaults=profile)
        created = 0
        for pod in PODS:
            created += self._pod(pod, sites[pod.site], types[pod.node_type])
        self._demo_booking(sites["SZ"], types["h100-8x-nvlink"])
        self._users()
        billing_demo.seed_price_books()
        billing_demo.seed_sales_and_customers()
        validation_rules_seed()
        billing_demo.seed_sellers()
        billing_demo.seed_signatories()
        signatures.demo_certificate_ensure()
        if settings.PORTAL_SEED_DEMO_CONTRACT:
            contract = demo_contracts.demo_signed_contract()
            self.stdout.write(f"signed demo contract: {contract.number}")
        if settings.PORTAL_SEED_DEMO_RUNNING_ORDER:
            try:
                with transaction.atomic():
                    order = demo_running.demo_running_order()
            except DomainError as exc:  # e.g. the demo's H100 nodes were all booked since
                self.stderr.write(f"no running demo order: {exc.message}")
            else:
                then = "; the worker provisions it now" if order.status == OrderStatus.PAID else ""
                self.stdout.write(
                    f"running demo order: {order.number} ({order.status}{then}): "
                    f"/zh-hans/account/orders/{order.number}/ (customer)"
                )
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo data ready: {Site.objects.count()} sites, {NodeType.objects.count()} "
                f"node types, {Node.objects.count()} nodes ({created} new)."
            )
        )

    def _pod(self, pod: Pod, site: Site, nt: NodeType) -> int:
        spine = Switch.objects.update_or_create(
            site=site,
            name=pod.spine,
            defaults={
                "role": SwitchRole.SPINE,
                "fabric": pod.fabric,
                "port_speed_gbps": pod.port_speed_gbps,
            },
        )[0]
        leaf = Switch.objects.update_or_create(
            site=site,
            name=pod.leaf,
            defaults={
                "role": SwitchRole.LEAF,
                "fabric": pod.fabric,
                "port_speed_gbps": pod.port_speed_gbps,
            },
        )[0]
        leaf.uplinks.add(spine)
        if NODE_TYPES_NICS.get(pod.node_type, 0) == RAILS:
            # Rail-optimised: one scalable unit of RAILS rail switches (this leaf is rail
            # 1); each node connects one NIC to each rail, so the unit is the leaf group.
            unit = pod.leaf.replace("leaf", "su")
            Switch.objects.filter(pk=leaf.pk).update(scalable_unit=unit)
            for rail in range(2, RAILS + 1):
                extra = Switch.objects.update_or_create(
                    site=site,
                    name=f"{pod.leaf}-rail{rail}",
                    defaults={
                        "role": SwitchRole.LEAF,
                        "fabric": pod.fabric,
                        "port_speed_gbps": pod.port_speed_gbps,
                        "scalable_unit": unit,
                    },
                )[0]
                extra.uplinks.add(spine)
        existing = set(Node.objects.filter(leaf_switch=leaf).values_list("hostname", flat=True))
        offset = sum(
            p.nodes for p in PODS[: PODS.index(pod)] if p.site == pod.site and p.short == pod.short
        )
        racks = {}
        new_nodes = []
        for i in range(pod.nodes):
            number = offset + i + 1
            rack_no = pod.first_rack + i // pod.nodes_per_rack
            rack_name = f"{site.code}-{pod.rack_prefix}{rack_no:02d}"
            if rack_name not in racks:
                racks[rack_name] = Rack.objects.get_or_create(
                    site=site, name=rack_name, defaults={"room": f"{site.code}-1F"}
                )[0]
            hostname = f"{site.code.lower()}-{pod.short}-{number:03d}"
            if hostname in existing:
                continue
            new_nodes.append(
                Node(
                    site=site,
                    node_type=nt,
                    rack=racks[rack_name],
                    leaf_switch=leaf,
                    hostname=hostname,
                    serial=f"DEMO-{site.code}-{pod.short.upper()}-{number:04d}",
                    bmc_address=f"https://bmc-{hostname}.oob.internal",
                    # Demo addresses: public from the benchmarking range (RFC 2544),
                    # fabric (IPoIB / RoCE) from a private one; unique per pod and node.
                    ip_address=str(IPv4Address("198.18.0.0") + 256 * PODS.index(pod) + number),
                    fabric_address=str(IPv4Address("10.200.0.0") + 256 * PODS.index(pod) + number),
                    status=DEMO_STATUSES.get((site.code, pod.short, number), NodeStatus.AVAILABLE),
                )
            )
        services.node_bulk_create(nodes=new_nodes, reason="Demo inventory.")
        created = len(new_nodes)
        return created

    def _demo_booking(self, site: Site, nt: NodeType) -> None:
        """Eight Shenzhen H100 nodes rented for the next 60 days, so counts are live."""
        if Reservation.objects.filter(owner_ref=DEMO_BOOKING).exists():
            return
        nodes = list(
            Node.objects.filter(site=site, node_type=nt, status=NodeStatus.AVAILABLE).order_by(
                "hostname"
            )[:8]
        )
        start = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(days=3)
        services.reservation_hold(
            nodes=nodes,
            start_at=start,
            end_at=start + timedelta(days=60),
            owner_ref=DEMO_BOOKING,
            firm=True,
        )

    def _users(self) -> None:
        groups = {}
        for name, (app, actions) in GROUP_PERMISSIONS.items():
            group = Group.objects.get_or_create(name=name)[0]
            perms = Permission.objects.filter(
                content_type__app_label=app,
                codename__regex=r"^({})_".format("|".join(actions)),
            )
            extra = [
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
                for app_label, codename in (
                    p.split(".", 1) for p in GROUP_ACTION_PERMISSIONS.get(name, ())
                )
            ]
            group.permissions.set([*perms, *extra])
            groups[name] = group
        user_model = get_user_model()
        for spec in DEMO_USERS:
            user, created = user_model.objects.get_or_create(
                username=spec["username"], defaults={"email": spec["email"]}
            )
            user.is_superuser = spec["superuser"]
            user.is_staff = spec["superuser"] or spec["group"] is not None
            if spec.get("full_name") and not user.get_full_name():
                user.first_name = spec["full_name"]  # as sign-up stores it
            if created:  # a password changed since is kept (hashing is slow on purpose)
                user.set_password(spec["password"])
            user.save()
            if spec["group"]:
                user.groups.set([groups[spec["group"]]])
