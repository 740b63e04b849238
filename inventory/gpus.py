"""The one table of GPU facts: pure data, no Django.

Everything that needs a GPU's reference figures reads them here: the sizing calculator
(``inventory.sizing``), the validation rules' thresholds
(``provisioning.validation``) and the demo seed (``GPUModel`` rows). A ``GPUModel`` row
staff edit overrides the table for that model wherever a ``GPUModel`` is at hand (the
wizard's node options carry the row's figures).

``gemm_tflops`` is the *measured* dense GEMM reference of ../shared/VALIDATION.md (not
the datasheet peak), at ``gemm_precision``; ``hbm_gbps`` is the datasheet memory
bandwidth. Each row names its sources.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


def N_(message: str) -> str:
    """Marks a text for translation without translating it (``make messages`` extracts
    ``N_``; the acceptance report shows these sources in the reader's language)."""
    return message


@dataclass(frozen=True)
class GpuFacts:
    """What a GPU family runs and its reference figures."""

    key: str  # the rule key (``normalize_gpu_model``): H100, A100-40G, RTX3090 …
    match: str  # matched case-insensitively against a model name ("A100 80G" before "A100")
    seed_name: str  # the demo seed's ``GPUModel.name``
    architecture: str
    memory_gib: int  # the card's memory as sold ("80G" is 80 GiB)
    bf16: bool
    fp8: bool
    int_weights: bool  # int8/int4 weight-only kernels (AWQ/GPTQ/Marlin: Turing or newer)
    gemm_tflops: Decimal
    gemm_precision: str
    hbm_gbps: Decimal
    nvlink_generation: int | None
    gemm_source: str
    hbm_source: str
    #: NVLinks per GPU as ``nvidia-smi nvlink -s`` lists them on an SXM board (None: PCIe).
    nvlink_links: int | None = None

    @property
    def hbm_tbs(self) -> Decimal:
        return self.hbm_gbps / 1000

    @property
    def gemm_metric(self) -> str:
        """The validation agent's metric for this GPU's GEMM reference."""
        return f"gemm_tflops_{self.gemm_precision}"

    @property
    def source(self) -> str:
        return f"{self.gemm_source}; {self.hbm_source}"


# Order matters for ``gpu_facts``: the first ``match`` found in a name wins.
GPU_FACTS: tuple[GpuFacts, ...] = (
    GpuFacts("H200", "H200", "H200 141G SXM", "Hopper", 141, True, True, True, Decimal("790"), "bf16", Decimal("4800"), 4,
             N_("bf16 GEMM same as H100 (~790 TFLOPS; VALIDATION.md, ml-engineering)"), N_("HBM3e 4.8 TB/s (NVIDIA H200 datasheet)"), 18),
    GpuFacts("H100", "H100", "H100 80G SXM", "Hopper", 80, True, True, True, Decimal("790"), "bf16", Decimal("3350"), 4,
             N_("bf16 GEMM ~790 TFLOPS measured (VALIDATION.md; stas00/ml-engineering MAMF 794.5)"), N_("HBM3 3.35 TB/s (NVIDIA H100 SXM datasheet)"), 18),
    GpuFacts("A100-80G", "A100 80G", "A100 80G SXM", "Ampere", 80, True, False, True, Decimal("265"), "bf16", Decimal("2039"), 3,
             N_("bf16 GEMM ~265–271 TFLOPS measured, lower figure used (VALIDATION.md; ml-engineering)"), N_("HBM2e 2.04 TB/s (NVIDIA A100 datasheet)"), 12),
    GpuFacts("A100-40G", "A100", "A100 40G SXM", "Ampere", 40, True, False, True, Decimal("246"), "bf16", Decimal("1555"), 3,
             N_("bf16 GEMM ~246 TFLOPS measured (VALIDATION.md; zzc0721/torch-performance-test-data)"), N_("HBM2 1.555 TB/s (NVIDIA A100 datasheet; not in VALIDATION.md: GUESS)"), 12),
    GpuFacts("RTX3090", "3090", "RTX 3090 24G", "Ampere", 24, True, False, True, Decimal("76"), "bf16", Decimal("936"), None,
             N_("bf16 GEMM ~76 TFLOPS measured (VALIDATION.md; zzc0721/torch-performance-test-data)"), N_("GDDR6X 936 GB/s (NVIDIA GeForce RTX 3090 specifications; not in VALIDATION.md: GUESS)")),
    GpuFacts("V100S", "V100", "V100S 32G PCIe", "Volta", 32, False, False, False, Decimal("89"), "fp16", Decimal("1134"), None,
             N_("fp16 GEMM ~89 TFLOPS measured (VALIDATION.md; zzc0721/torch-performance-test-data)"), N_("HBM2 1,134 GB/s (NVIDIA V100S datasheet; not in VALIDATION.md: GUESS)")),
)  # fmt: skip

BY_KEY: dict[str, GpuFacts] = {facts.key: facts for facts in GPU_FACTS}


def gpu_facts(name: str) -> GpuFacts | None:
    """The facts for a GPU model name such as "H100 80G SXM", or None when unknown."""
    upper = name.upper()
    for facts in GPU_FACTS:
        if facts.match.upper() in upper:
            return facts
    return None
