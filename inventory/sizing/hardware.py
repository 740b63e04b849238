"""The hardware as the calculator sees it: ``NodeOption`` (built by the caller from the
inventory) and what a GPU runs (its architecture's number formats, its reference figures).

A node option's own figures (from its ``GPUModel`` row) win; ``inventory.gpus`` fills in
what an option leaves empty, and ``ARCH_BY_KEY`` names the architecture of GPUs the table
has no figures for.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from core.i18n_hook import _
from inventory.gpus import gpu_facts


@dataclass(frozen=True)
class NodeOption:
    """A node type as the calculator sees it (the caller builds it from the inventory).

    ``gpu_memory_gib`` (GiB, as the card has it: "80G" is 80 GiB) and ``bf16_tflops``
    (the measured GEMM reference) are per GPU;
    ``host_ram_gb`` is the node's RAM; ``monthly_price_per_node`` is the list price of
    one node for one month, or None when there is no price to compare.
    """

    code: str
    name: str
    gpu_model: str
    gpus_per_node: int
    gpu_memory_gib: Decimal | int
    bf16_tflops: Decimal
    intra_node: str
    nic_count: int
    nic_speed_gbps: int
    fabric: str
    monthly_price_per_node: Decimal | None = None
    host_ram_gb: int = 0
    memory_bandwidth_tbs: Decimal | float = 0

    @property
    def inter_node_gbps(self) -> int:
        """Per-node bandwidth to the fabric: NICs × speed."""
        return self.nic_count * self.nic_speed_gbps


# --- GPU facts: the node option's own figures first, inventory.gpus as the fallback ------

# Architecture of GPUs without a row in inventory.gpus: precision support only.
ARCH_BY_KEY: dict[str, str] = {
    "B200": "Blackwell",
    "GB200": "Blackwell",
    "L40": "Ada",
    "L4": "Ada",
    "4090": "Ada",
    "A800": "Ampere",
    "A40": "Ampere",
    "A30": "Ampere",
    "A10": "Ampere",
    "H800": "Hopper",
    "H20": "Hopper",
    "T4": "Turing",
    "P100": "Pascal",
}
BF16_ARCHITECTURES = frozenset({"Ampere", "Ada", "Hopper", "Blackwell"})
FP8_ARCHITECTURES = frozenset({"Ada", "Hopper", "Blackwell"})
INT_WEIGHT_ARCHITECTURES = frozenset({"Turing", "Ampere", "Ada", "Hopper", "Blackwell"})


def gpu_architecture(name: str) -> str | None:
    """ "Hopper", "Ampere", "Volta"… for a GPU model name, or None when unknown."""
    facts = gpu_facts(name)
    if facts is not None:
        return facts.architecture
    upper = name.upper()
    for key, arch in sorted(ARCH_BY_KEY.items(), key=lambda kv: -len(kv[0])):
        if key in upper:
            return arch
    return None


def reference_tflops(option: NodeOption) -> float:
    """The measured GEMM reference per GPU: the node option's own figure (the
    ``GPUModel`` row staff edit), or the table's when the option carries none."""
    if option.bf16_tflops:
        return float(option.bf16_tflops)
    facts = gpu_facts(option.gpu_model)
    return float(facts.gemm_tflops) if facts is not None else 0.0


def memory_bandwidth(option: NodeOption) -> float:
    """Memory bandwidth per GPU (TB/s): the option's own figure, else the table's."""
    if option.memory_bandwidth_tbs:
        return float(option.memory_bandwidth_tbs)
    facts = gpu_facts(option.gpu_model)
    return float(facts.hbm_tbs) if facts is not None else 0.0


def precision_problem(option: NodeOption, precision: str) -> str | None:
    """Why this GPU cannot run ``precision`` (None when it can)."""
    arch = gpu_architecture(option.gpu_model)
    label = arch or _("an unknown architecture")
    if precision == "bf16" and arch not in BF16_ARCHITECTURES:
        return _("%(gpu)s (%(arch)s) has no bf16: bf16 needs Ampere or newer") % {
            "gpu": option.gpu_model,
            "arch": label,
        }
    if precision == "fp8" and arch not in FP8_ARCHITECTURES:
        return _("%(gpu)s (%(arch)s) has no fp8: fp8 needs Hopper (or Ada) or newer") % {
            "gpu": option.gpu_model,
            "arch": label,
        }
    if precision in ("int8", "int4") and arch not in INT_WEIGHT_ARCHITECTURES:
        return _(
            "%(gpu)s (%(arch)s) has no kernels for int8/int4 weights: they need Turing or newer"
        ) % {"gpu": option.gpu_model, "arch": label}
    return None
