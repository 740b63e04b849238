"""The delivery kit of a cluster (pure: no Django): the hostfile, the NCCL environment for
the delivered fabric, a Slurm ``topology.conf`` and the Kubernetes node labels.

Built from the order's current slots (``KitNode`` per active node), so after every swap
the kit names the spare: it is computed from the slots each time it is shown, never
stored stale.

Sources: NCCL's environment variables (https://docs.nvidia.com/deeplearning/nccl/
user-guide/docs/env.html: ``NCCL_IB_HCA``, ``NCCL_SOCKET_IFNAME``, ``NCCL_NET_GDR_LEVEL``,
``NCCL_ALGO``, ``NCCL_COLLNET_ENABLE``); Slurm's topology.conf (``SwitchName=… Switches=…
Nodes=…`` for the tree plugin, ``BlockName=… Nodes=…`` for topology/block); the
Kubernetes topology labels (``topology.kubernetes.io/region|zone``) and NVIDIA GPU
feature discovery's ``nvidia.com/gpu.*`` names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from core.i18n_hook import _

IB_FABRICS = ("ib_ndr", "ib_hdr")


@dataclass(frozen=True)
class KitNode:
    hostname: str
    address: str
    gpus: int
    leaf: str
    spine: tuple[str, ...] = ()
    scalable_unit: str = ""
    rack: str = ""


@dataclass(frozen=True)
class Kit:
    hostfile: str
    nccl_env: str
    guidance: list[str] = field(default_factory=list)
    topology_conf: str = ""
    k8s_labels: str = ""


def hostfile(nodes: Sequence[KitNode]) -> str:
    """OpenMPI/DeepSpeed hostfile: one line per node with its GPU slots."""
    return "".join(f"{n.address or n.hostname} slots={n.gpus}\n" for n in nodes)


def nccl_env(*, fabric: str, nic_count: int, nodes: int) -> tuple[str, list[str]]:
    """The NCCL environment and the algorithm guidance for the delivered fabric."""
    lines = ["NCCL_SOCKET_IFNAME=bond0"]
    guidance: list[str] = []
    if fabric in IB_FABRICS:
        hcas = ",".join(f"mlx5_{i}:1" for i in range(max(nic_count, 1)))
        lines += [f"NCCL_IB_HCA={hcas}", "NCCL_NET_GDR_LEVEL=PHB", "NCCL_IB_GID_INDEX=0"]
    elif fabric == "roce_v2":
        hcas = ",".join(f"mlx5_{i}:1" for i in range(max(nic_count, 1)))
        lines += [f"NCCL_IB_HCA={hcas}", "NCCL_NET_GDR_LEVEL=PHB", "NCCL_IB_GID_INDEX=3",
                  "NCCL_IB_TC=106"]  # fmt: skip
    else:
        lines += ["NCCL_IB_DISABLE=1", "NCCL_NET_GDR_LEVEL=LOC"]
    guidance.append(
        _(
            "Ring: the default for large messages within a node and on a few nodes; keep it "
            "for gradient all-reduce up to about 8 nodes (NCCL_ALGO=Ring forces it)."
        )
    )
    guidance.append(
        _(
            "Tree: lower latency at scale; NCCL picks it for small and medium messages "
            "across many nodes (NCCL_ALGO=Tree to compare; measure with all_reduce_perf)."
        )
    )
    if fabric in IB_FABRICS and nodes >= 8:
        guidance.append(
            _(
                "CollNet/SHARP: in-network reduction on the InfiniBand switches; set "
                "NCCL_COLLNET_ENABLE=1 only once we have enabled the SHARP plugin for you."
            )
        )
    else:
        guidance.append(_("CollNet: not available on this fabric or size; leave it off."))
    return "".join(f"export {line}\n" for line in lines), guidance


def topology_conf(nodes: Sequence[KitNode]) -> str:
    """Slurm topology.conf: a tree (leaf switches under their spines) and, when the
    fabric has scalable units, the topology/block blocks."""
    by_leaf: dict[str, list[str]] = {}
    spines: dict[str, set[str]] = {}
    for n in nodes:
        by_leaf.setdefault(n.leaf, []).append(n.hostname)
        for spine in n.spine:
            spines.setdefault(spine, set()).add(n.leaf)
    out = ["# topology/tree"]
    for leaf, hosts in sorted(by_leaf.items()):
        out.append(f"SwitchName={leaf} Nodes={','.join(sorted(hosts))}")
    for spine, leaves in sorted(spines.items()):
        out.append(f"SwitchName={spine} Switches={','.join(sorted(leaves))}")
    units: dict[str, list[str]] = {}
    for n in nodes:
        if n.scalable_unit:
            units.setdefault(n.scalable_unit, []).append(n.hostname)
    if units:
        out.append("# topology/block (one block per scalable unit)")
        for unit, hosts in sorted(units.items()):
            out.append(f"BlockName={unit} Nodes={','.join(sorted(hosts))}")
    return "\n".join(out) + "\n"


def k8s_labels(nodes: Sequence[KitNode], *, site: str, gpu_product: str) -> str:
    """kubectl label commands giving each node its topology."""
    out = []
    for n in nodes:
        labels = [
            f"topology.kubernetes.io/region={site}",
            f"topology.kubernetes.io/zone={n.scalable_unit or n.leaf}",
            f"network.topology/leaf={n.leaf}",
        ]
        if n.spine:
            labels.append(f"network.topology/spine={n.spine[0]}")
        if n.rack:
            labels.append(f"network.topology/rack={n.rack}")
        labels.append(f"nvidia.com/gpu.product={gpu_product}")
        labels.append(f"nvidia.com/gpu.count={n.gpus}")
        out.append(f"kubectl label node {n.hostname} --overwrite " + " ".join(labels))
    return "\n".join(out) + "\n"


def build(
    nodes: Sequence[KitNode], *, fabric: str, nic_count: int, site: str, gpu_product: str
) -> Kit:
    ordered = sorted(nodes, key=lambda n: (n.scalable_unit, n.leaf, n.hostname))
    env, guidance = nccl_env(fabric=fabric, nic_count=nic_count, nodes=len(ordered))
    return Kit(
        hostfile=hostfile(ordered),
        nccl_env=env,
        guidance=guidance,
        topology_conf=topology_conf(ordered),
        k8s_labels=k8s_labels(ordered, site=site, gpu_product=gpu_product),
    )
