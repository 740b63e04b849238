"""The fabric check's raw output → metrics: the RDMA listing (``ibstat``) and
``ib_write_bw`` per fabric NIC."""

from __future__ import annotations

import re
from typing import Any

from provisioning.validation.metrics.collect import _Out, _reason
from provisioning.validation.parsers import (
    parse_ib_write_bw,
    parse_ibstat,
)
from provisioning.validation.rules import (
    IB_FABRICS,
)

_IB_SECTION = re.compile(r"^### (.+)$", re.MULTILINE)
_IB_DEVICE = re.compile(r"^device (\S+) exit (\S+)$")


def _ib(check: dict[str, Any], out: _Out, fabric: str | None) -> None:
    """The RDMA listing (``ibstat``) and one ``ib_write_bw`` section per NIC measured.

    ``ib_nic_count`` counts the devices whose link layer is InfiniBand: a front-end or
    storage Ethernet RDMA NIC (RoCE) on an InfiniBand node is not a fabric NIC, so it is
    neither counted nor judged (the agent does not measure it). On an InfiniBand fabric
    every InfiniBand device must have been measured. Elsewhere (RoCE, Ethernet) the
    Ethernet RDMA devices are counted (``rdma_ethernet_nic_count``, informational: ibstat
    cannot tell a RoCE fabric port from a front-end one) and their figures recorded."""
    parts = _IB_SECTION.split(check.get("raw") or "")
    listing: dict[str, Any] | None = None
    measured: dict[str, str] = {}
    for i in range(1, len(parts) - 1, 2):
        title, body = parts[i].strip(), parts[i + 1]
        if m := _IB_DEVICE.match(title):
            measured[m.group(1)] = body
        elif listing is None:
            listing = parse_ibstat(body)
    if listing is None or listing["damaged"]:
        why = "; ".join(listing["errors"]) if listing else "no RDMA device listing (ibstat)"
        out.parse_errors["ib_write_bw"] = f"RDMA device listing: {why}"
        return
    layers = {d["name"]: d["link_layer"] for d in listing["devices"]}
    infiniband = [d for d, layer in layers.items() if layer == "InfiniBand"]
    ethernet = [d for d, layer in layers.items() if layer == "Ethernet"]
    out.put("ib_nic_count", len(infiniband))
    out.put("rdma_ethernet_nic_count", len(ethernet))
    if fabric in IB_FABRICS:
        fabric_nics = infiniband
    else:
        fabric_nics = infiniband or ethernet
    values = []
    for device in fabric_nics:
        if device not in measured:
            out.problems.append(
                _reason(
                    "ib_nic_not_measured",
                    f"{device} (link layer {layers[device]}) was listed but not measured",
                    device=device,
                )
            )
            continue
        parsed = parse_ib_write_bw(measured[device])
        if parsed["damaged"]:
            out.parse_errors["ib_write_bw"] = f"{device}: " + "; ".join(parsed["errors"])
            return
        values.append(parsed["bw_avg_gbps"])
    if values and len(values) == len(fabric_nics):
        out.put("ib_write_bw_gbps", values)
        out.put("ib_write_bw_devices", fabric_nics)
