"""The delivery kit (pure): hostfile, NCCL environment per fabric, Slurm topology.conf
(tree and blocks), Kubernetes labels; and on the order page, regenerated after a swap."""

from __future__ import annotations

from provisioning import delivery_kit as kit

NODES = [
    kit.KitNode("sz-h100-002", "10.0.0.2", 8, "leaf-2", ("spine-1",), "SU1", "R02"),
    kit.KitNode("sz-h100-001", "10.0.0.1", 8, "leaf-1", ("spine-1",), "SU1", "R01"),
    kit.KitNode("sz-h100-017", "10.0.1.1", 8, "leaf-9", ("spine-1",), "SU2", "R05"),
]


def test_hostfile_and_nccl_for_infiniband():
    built = kit.build(NODES, fabric="ib_ndr", nic_count=8, site="SZ", gpu_product="H100")
    assert built.hostfile.splitlines() == [
        "10.0.0.1 slots=8", "10.0.0.2 slots=8", "10.0.1.1 slots=8",
    ]  # fmt: skip
    env = built.nccl_env
    assert (
        "export NCCL_IB_HCA=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1"
        in env
    )
    assert "export NCCL_NET_GDR_LEVEL=PHB" in env and "NCCL_SOCKET_IFNAME=" in env
    assert any(g.startswith("Ring") for g in built.guidance)
    assert any(g.startswith("Tree") for g in built.guidance)
    assert any(g.startswith("CollNet") for g in built.guidance)


def test_ethernet_disables_ib():
    env, _ = kit.nccl_env(fabric="ethernet", nic_count=1, nodes=2)
    assert "NCCL_IB_DISABLE=1" in env and "NCCL_IB_HCA" not in env


def test_topology_conf_tree_and_blocks():
    conf = kit.topology_conf(NODES).splitlines()
    assert "SwitchName=leaf-1 Nodes=sz-h100-001" in conf
    assert "SwitchName=spine-1 Switches=leaf-1,leaf-2,leaf-9" in conf
    assert "BlockName=SU1 Nodes=sz-h100-001,sz-h100-002" in conf
    assert "BlockName=SU2 Nodes=sz-h100-017" in conf


def test_kubernetes_labels():
    labels = kit.k8s_labels(NODES[:1], site="SZ", gpu_product="H100").strip()
    assert labels.startswith("kubectl label node sz-h100-002 --overwrite")
    assert "topology.kubernetes.io/zone=SU1" in labels and "network.topology/leaf=leaf-2" in labels
