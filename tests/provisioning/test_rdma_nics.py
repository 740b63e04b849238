"""Which RDMA devices are fabric NICs: counted and measured (``metrics._ib``, the agent's
``fabric_devices``). On an InfiniBand fabric only the devices whose link layer is
InfiniBand; a front-end or storage Ethernet RDMA NIC (RoCE) is neither. On a RoCE fabric
every RDMA port is Ethernet: counted for the report, judged by no rule."""

from __future__ import annotations

from pathlib import Path

from provisioning.agent.checks import fabric_devices
from provisioning.validation.metrics import derive

SAMPLES = Path(__file__).parent / "samples"
IBSTAT = (SAMPLES / "ibstat_8xH100_8ib_1eth-bond_gpud.txt").read_text()
WRITE_BW = (SAMPLES / "ib_write_bw_NDR400_mlx5_0.txt").read_text()
IB8 = ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]


def document(listing: str, measured: list[str], title: str = "ibstat exit 0") -> dict:
    raw = "\n".join(
        [f"### {title}\n{listing}"]
        + [f"### device {d} exit 0\n{WRITE_BW.replace('mlx5_0', d)}" for d in measured]
    )
    check = {"name": "ib_write_bw", "status": "completed", "return_code": 0, "raw": raw}
    return {"host": {"device": "cuda"}, "checks": [check], "complete": True}


def judged(doc: dict, fabric: str | None):
    return derive(doc, node="n1", gpu_model="H100", fabric=fabric)


def test_an_infiniband_fabric_counts_and_measures_only_infiniband_devices():
    m = judged(document(IBSTAT, IB8), "ndr400")
    assert m.metrics["ib_nic_count"] == 8 and m.metrics["rdma_ethernet_nic_count"] == 1
    assert m.metrics["ib_write_bw_gbps"] == [392.34] * 8
    assert m.problems == [] and all(c.parse_error is None for c in m.checks)


def test_an_infiniband_device_listed_but_not_measured_is_a_problem():
    m = judged(document(IBSTAT, IB8[:7]), "ndr400")
    assert [(p.code, p.params) for p in m.problems] == [
        ("ib_nic_not_measured", {"device": "mlx5_9"})
    ]
    assert "ib_write_bw_gbps" not in m.metrics  # not measured: the per-NIC rule fails closed


def test_a_measured_ethernet_device_is_not_judged_on_an_infiniband_fabric():
    only_eth = IBSTAT[IBSTAT.index("CA 'mlx5_bond_0'") :]
    m = judged(document(only_eth, ["mlx5_bond_0"]), "ndr400")
    assert m.metrics["ib_nic_count"] == 0
    assert "ib_write_bw_gbps" not in m.metrics


def test_a_roce_fabric_records_its_ethernet_rdma_devices():
    roce = IBSTAT[IBSTAT.index("CA 'mlx5_bond_0'") :]
    roce = roce + "\n" + roce.replace("mlx5_bond_0", "mlx5_bond_1")
    m = judged(document(roce, ["mlx5_bond_0", "mlx5_bond_1"]), "100g")
    assert m.metrics["ib_nic_count"] == 0 and m.metrics["rdma_ethernet_nic_count"] == 2
    assert m.metrics["ib_write_bw_gbps"] == [392.34, 392.34]


def test_no_listing_or_a_damaged_one_is_a_parse_error():
    for listing in ("", "CA 'mlx5_0'\n"):  # empty; cut after the first CA line
        m = judged(document(listing, IB8), "ndr400")
        (check,) = m.checks
        assert check.parse_error and "RDMA device listing" in check.parse_error
        assert "ib_nic_count" not in m.metrics
    old = document(IBSTAT, IB8)  # an agent before the listing: the NIC sections only
    raw = old["checks"][0]["raw"]
    old["checks"][0]["raw"] = raw[raw.index("### device ") :]
    m = judged(old, "ndr400")
    assert "no RDMA device listing" in (m.checks[0].parse_error or "")
    assert "ib_nic_count" not in m.metrics and "ib_write_bw_gbps" not in m.metrics


def test_the_agent_measures_infiniband_devices_else_the_ethernet_ones():
    layers = {"mlx5_0": "InfiniBand", "mlx5_bond_0": "Ethernet", "mlx5_1": "InfiniBand"}
    assert fabric_devices(layers) == ["mlx5_0", "mlx5_1"]
    assert fabric_devices({"mlx5_bond_0": "Ethernet", "mlx5_2": "Ethernet"}) == [
        "mlx5_bond_0",
        "mlx5_2",
    ]
    assert fabric_devices({}) == []
