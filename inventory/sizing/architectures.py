"""Published shapes of well-known models the calculator sizes: pure data, no Django.

Each ``Architecture`` names its source: the model's config.json on Hugging Face or its
technical report. GPU facts live in ``inventory.gpus`` (read through
``inventory.sizing.hardware``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Architecture:
    """A transformer's shape. ``params_active`` equals ``params_total`` for a dense model.

    ``kv_elems_per_token_layer`` overrides the usual 2 × KV heads × head dim (K and V)
    for attention that caches something else (DeepSeek's multi-head latent attention
    caches one compressed latent of 512 + 64 rope dims per token and layer).
    """

    code: str
    name: str
    params_total: float
    params_active: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    experts: int = 0
    experts_active: int = 0
    kv_elems_per_token_layer: int | None = None
    source: str = ""

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    @property
    def expert_params(self) -> float:
        """Parameters of all routed experts: (total − active) / (E − k) per expert, × E."""
        if not self.is_moe or self.experts <= self.experts_active:
            return 0.0
        per_expert = (self.params_total - self.params_active) / (self.experts - self.experts_active)
        return per_expert * self.experts

    @property
    def kv_elems(self) -> int:
        """Elements cached per token and layer: 2 (K and V) × KV heads × head dim."""
        if self.kv_elems_per_token_layer is not None:
            return self.kv_elems_per_token_layer
        return 2 * self.kv_heads * self.head_dim


ARCHITECTURES: dict[str, Architecture] = {
    a.code: a
    for a in (
        Architecture(
            "llama3-8b", "Llama-3 8B", 8.03e9, 8.03e9, 32, 4096, 32, 8, 128, 14336, 128256,
            source="meta-llama/Meta-Llama-3-8B config.json",
        ),
        Architecture(
            "llama3-70b", "Llama-3 70B", 70.55e9, 70.55e9, 80, 8192, 64, 8, 128, 28672, 128256,
            source="meta-llama/Meta-Llama-3-70B config.json",
        ),
        Architecture(
            "llama3-405b", "Llama-3.1 405B", 405.85e9, 405.85e9, 126, 16384, 128, 8, 128,
            53248, 128256, source="meta-llama/Llama-3.1-405B config.json",
        ),
        Architecture(
            "qwen2.5-7b", "Qwen2.5 7B", 7.62e9, 7.62e9, 28, 3584, 28, 4, 128, 18944, 152064,
            source="Qwen/Qwen2.5-7B config.json",
        ),
        Architecture(
            "qwen2-72b", "Qwen2 72B", 72.71e9, 72.71e9, 80, 8192, 64, 8, 128, 29568,
            152064, source="Qwen/Qwen2-72B config.json",
        ),
        Architecture(
            "qwen2.5-72b", "Qwen2.5 72B", 72.71e9, 72.71e9, 80, 8192, 64, 8, 128, 29568,
            152064, source="Qwen/Qwen2.5-72B config.json",
        ),
        Architecture(
            "mixtral-8x7b", "Mixtral 8×7B", 46.70e9, 12.88e9, 32, 4096, 32, 8, 128, 14336,
            32000, experts=8, experts_active=2,
            source="mistralai/Mixtral-8x7B-v0.1 config.json; Mistral AI, Mixtral of experts",
        ),
        Architecture(
            "deepseek-v3", "DeepSeek-V3 671B", 671e9, 37e9, 61, 7168, 128, 128, 128, 18432,
            129280, experts=256, experts_active=8, kv_elems_per_token_layer=512 + 64,
            source="DeepSeek-V3 technical report (arXiv 2412.19437); deepseek-ai/DeepSeek-V3 "
            "config.json (MLA kv_lora_rank 512, qk_rope_head_dim 64)",
        ),
    )
}  # fmt: skip
