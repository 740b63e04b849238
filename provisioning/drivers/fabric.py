"""Fabric isolation for an order's nodes: an InfiniBand partition key or a VLAN.

InfiniBand fabrics ("ib_ndr400", "ib_hdr200") isolate a cluster with a partition key
(P_Key) in 0x0001–0x7ffe: 0x0000 is invalid and 0x7fff is the default partition; the
switch programs it with the full-membership bit (0x8000) set. Ethernet fabrics
("roce_v2", "ethernet") isolate with a VLAN id in 2–4094 (1 is the default VLAN, 0 and
4095 are reserved).

``SimulatedFabricManager`` only picks keys. The keys already in use come from the
caller (the Django layer reads them from the database, whose unique constraint is what
actually keeps two orders from sharing one); a production manager would also program
the subnet manager or the switches.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from provisioning.drivers.base import DriverError


class FabricKind(enum.StrEnum):
    IB_NDR400 = "ib_ndr400"
    IB_HDR200 = "ib_hdr200"
    ROCE_V2 = "roce_v2"
    ETHERNET = "ethernet"


class KeyKind(enum.StrEnum):
    PKEY = "pkey"
    VLAN = "vlan"


PKEY_RANGE = (0x0001, 0x7FFE)
VLAN_RANGE = (2, 4094)
PKEY_FULL_MEMBERSHIP = 0x8000

_KEY_KIND = {
    FabricKind.IB_NDR400: KeyKind.PKEY,
    FabricKind.IB_HDR200: KeyKind.PKEY,
    FabricKind.ROCE_V2: KeyKind.VLAN,
    FabricKind.ETHERNET: KeyKind.VLAN,
}


def key_kind_for(fabric_kind: str) -> KeyKind:
    """The key kind: "pkey" for InfiniBand fabrics, "vlan" for Ethernet ones."""
    try:
        return _KEY_KIND[FabricKind(fabric_kind)]
    except ValueError:
        known = ", ".join(k.value for k in FabricKind)
        raise ValueError(f"unknown fabric kind {fabric_kind!r}: use one of {known}") from None


@dataclass(frozen=True, order=True)
class FabricKey:
    kind: KeyKind
    value: int

    def __post_init__(self) -> None:
        low, high = PKEY_RANGE if self.kind == KeyKind.PKEY else VLAN_RANGE
        if not low <= self.value <= high:
            raise ValueError(f"{self.kind} {self.value} is outside {low}–{high}")

    @property
    def full_membership_pkey(self) -> int:
        """The P_Key as programmed for full members (bit 15 set)."""
        if self.kind != KeyKind.PKEY:
            raise ValueError("only an InfiniBand partition key has a membership bit")
        return self.value | PKEY_FULL_MEMBERSHIP

    def __str__(self) -> str:
        if self.kind == KeyKind.PKEY:
            return f"pkey 0x{self.value:04x}"
        return f"vlan {self.value}"


class FabricPoolExhausted(DriverError):
    """No free partition key or VLAN is left in the pool."""


class FabricManager(abc.ABC):
    @abc.abstractmethod
    def allocate(
        self, *, order_ref: str, fabric_kind: str, node_hostnames: Sequence[str]
    ) -> FabricKey:
        """Isolate ``node_hostnames`` for ``order_ref``; return the key that does it."""

    @abc.abstractmethod
    def release(self, key: FabricKey) -> None:
        """Give the key back; releasing a key that isn't held does nothing."""


@dataclass(frozen=True)
class FabricAllocation:
    order_ref: str
    fabric_kind: FabricKind
    node_hostnames: tuple[str, ...]


class SimulatedFabricManager(FabricManager):
    """Picks the lowest free key of the right kind; programs nothing."""

    def __init__(
        self,
        *,
        in_use: Iterable[FabricKey] = (),
        pkey_range: tuple[int, int] = PKEY_RANGE,
        vlan_range: tuple[int, int] = VLAN_RANGE,
    ) -> None:
        for (low, high), (min_, max_) in ((pkey_range, PKEY_RANGE), (vlan_range, VLAN_RANGE)):
            if not min_ <= low <= high <= max_:
                raise ValueError(f"range {low}–{high} must lie within {min_}–{max_}")
        self._ranges = {KeyKind.PKEY: pkey_range, KeyKind.VLAN: vlan_range}
        self._in_use: set[FabricKey] = set(in_use)
        self.allocations: dict[FabricKey, FabricAllocation] = {}

    @property
    def in_use(self) -> frozenset[FabricKey]:
        return frozenset(self._in_use)

    def allocate(
        self, *, order_ref: str, fabric_kind: str, node_hostnames: Sequence[str]
    ) -> FabricKey:
        kind = key_kind_for(fabric_kind)
        if not node_hostnames:
            raise ValueError("a fabric partition needs at least one node")
        for key, allocation in self.allocations.items():
            # Safe to run twice: the same order on the same fabric keeps its key.
            if allocation.order_ref == order_ref and allocation.fabric_kind == fabric_kind:
                return key
        low, high = self._ranges[kind]
        used = {k.value for k in self._in_use if k.kind == kind}
        for value in range(low, high + 1):
            if value not in used:
                key = FabricKey(kind, value)
                self._in_use.add(key)
                self.allocations[key] = FabricAllocation(
                    order_ref=order_ref,
                    fabric_kind=FabricKind(fabric_kind),
                    node_hostnames=tuple(node_hostnames),
                )
                return key
        label = "InfiniBand partition key" if kind == KeyKind.PKEY else "VLAN id"
        shown = f"0x{low:04x}–0x{high:04x}" if kind == KeyKind.PKEY else f"{low}–{high}"
        raise FabricPoolExhausted(
            f"no free {label} left for order {order_ref} on {fabric_kind}: "
            f"all {high - low + 1} in {shown} are in use"
        )

    def release(self, key: FabricKey) -> None:
        self._in_use.discard(key)
        self.allocations.pop(key, None)
