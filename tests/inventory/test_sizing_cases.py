"""The six hand-checked sizing cases of issue 25, with the figures computed by hand.

Each figure below is worked out from the published formula and the model's config.json,
independently of the calculator's code, and the calculator must agree:
- model states: ZeRO paper (Rajbhandari et al. 2019) Fig. 1, mixed-precision Adam
  w = 2, g = 2, K = 12 bytes per parameter: stage 2 wΨ + (g+K)Ψ/N_d, stage 3 16Ψ/N_d,
  Ψ the parameters of one TP × PP shard;
- ZeRO-3 gather/prefetch buffer (our estimate, shown on its own line): 2 × w × Ψ/L;
- activations: Korthikanti et al. 2022 with full checkpointing and FlashAttention:
  L × 2·s·b·h/t + one layer recomputed s·b·h·34/t (MoE: 34 + 19·(k−1)) + fp32 logits
  4·s·b·V/t;
- KV cache: 2 × L × KV heads/t × head dim × 2 bytes × context × sequences per replica;
- headroom: 2 GiB + 10 % of the rest;
- everything per GPU in GiB (2^30 bytes): the cards have 40/80 GiB.
Configs: meta-llama/Meta-Llama-3-8B and -70B, Qwen/Qwen2-72B, mistralai/Mixtral-8x7B-v0.1,
deepseek-ai/DeepSeek-V3 config.json (hidden_size, num_hidden_layers, num_attention_heads,
num_key_value_heads, intermediate_size, vocab_size; DeepSeek kv_lora_rank 512 +
qk_rope_head_dim 64). Compute: the measured GEMM reference × 40 % MFU: H100 790 → 316
TFLOPS, A100 40G 246 → 98.4.
"""

from decimal import Decimal

import pytest

from core.i18n_hook import get_translator, set_translator
from inventory import sizing
from inventory.sizing import SizingInput, evaluate, size
from tests.inventory.test_sizing import A100, H100

GIB = 2**30
D = Decimal


@pytest.fixture(autouse=True)
def english_source():
    """Assert on the English source text, whatever translator the Django layer installed."""
    previous = get_translator()
    set_translator(None)
    try:
        yield
    finally:
        set_translator(previous)


def gib(nbytes):
    return pytest.approx(nbytes / GIB, rel=1e-6)


def test_llama3_8b_zero2_on_a100_40g_is_tensor_parallel_and_carries_no_zero_stage():
    # Ψ = 8.03e9, L = 32, h = 4096, V = 128,256; s = 4096, b = 1.
    # DP 4 with ZeRO-2: 2 × 8.03e9 + 14 × 8.03e9 / 4 = 44.165e9 B = 41.13 GiB > 40 GiB.
    dp4 = evaluate(SizingInput(arch="llama3-8b", zero_stage=2), A100, gpus=4).plans[0]
    assert dp4.memory.model_states == gib(2 * 8.03e9 + 14 * 8.03e9 / 4)
    assert not dp4.fits
    # So the search splits the model: TP 4 on the 4 GPUs, DP 1, where ZeRO does nothing.
    plan = size(SizingInput(arch="llama3-8b", zero_stage=2), [A100]).cheapest
    assert (plan.gpus, plan.tp, plan.pp, plan.dp) == (4, 4, 1, 1)
    assert plan.zero is None and plan.zero_label == "—"
    assert plan.zero_requested == 2
    assert "Megatron-LM / NeMo" in plan.frameworks
    assert not any("ZeRO" in name for name in plan.frameworks)
    # Ψ/t = 2.0075e9 → 16 × 2.0075e9 = 32.12e9 B = 29.91 GiB (DP 1: every stage alike).
    assert plan.memory.model_states == gib(16 * 8.03e9 / 4)
    assert plan.memory.gather_buffer == 0
    # 32·2·4096·4096/4 + 4096·4096·34/4 + 4·4096·128256/4 = 936,378,368 B = 0.872 GiB.
    assert plan.memory.activations == gib(936_378_368)
    # 2 + 0.1 × (29.914 + 0.872) = 5.079 GiB; total 35.87 of 40 GiB = 89.7 %: no warning.
    assert plan.memory.headroom == pytest.approx(2 + 0.1 * (29.9140 + 0.8721), abs=1e-3)
    assert plan.memory.total == pytest.approx(35.865, abs=1e-3)
    assert plan.gpu_memory_gib == 40
    assert plan.memory_share == pytest.approx(0.8966, abs=1e-4)
    assert not plan.memory_warning
    result = size(SizingInput(arch="llama3-8b", zero_stage=2), [A100])
    assert any("ZeRO-2 was asked for" in note.text for note in result.notes)
    assert "ZeRO-2" not in result.parallelism


def test_zero3_gather_buffer_is_its_own_line_7_5b_on_64_gpus():
    # The paper's example: Ψ = 7.5e9 over N_d = 64: 16Ψ/N_d = 1.875 GB, exactly.
    plan = evaluate(SizingInput(D("7.5"), zero_stage=3), H100, gpus=64).plans[0]
    assert plan.memory.model_states * GIB == pytest.approx(1.875e9)
    # Estimated shape: L = round((7.5e9 / (12·128²))^(1/3)) = 34 layers;
    # buffer 2 × 2 × 7.5e9 / 34 = 0.882e9 B; the old single line showed 2.76 GB.
    assert plan.memory.gather_buffer * GIB == pytest.approx(4 * 7.5e9 / 34)
    assert (plan.memory.model_states + plan.memory.gather_buffer) * GIB / 1e9 == pytest.approx(
        2.757, abs=1e-3
    )
    assert plan.memory.as_dict()["gather_buffer"] == round(4 * 7.5e9 / 34 / GIB, 2)


def test_llama3_70b_zero3_on_h100():
    # Ψ = 70.55e9, L = 80, h = 8192, V = 128,256.
    r = size(SizingInput(arch="llama3-70b", zero_stage=3), [H100])
    plan = r.cheapest
    # 8 GPUs cannot hold 16 × 70.55e9 / 8 = 141 GB each; 16 GPUs, TP 8 inside each node.
    assert (plan.gpus, plan.tp, plan.dp) == (16, 8, 2)
    # 16 × (70.55e9 / 8) / 2 = 70.55e9 B = 65.70 GiB
    assert plan.memory.model_states == gib(16 * 70.55e9 / 8 / 2)
    # 2 × 2 × (70.55e9 / 8) / 80 = 0.441e9 B = 0.41 GiB
    assert plan.memory.gather_buffer == gib(4 * 70.55e9 / 8 / 80)
    # 80·2·4096·8192/8 + 4096·8192·34/8 + 4·4096·128256/8 = 1,076,363,264 B = 1.00 GiB
    assert plan.memory.activations == gib(1_076_363_264)
    # 65.705 + 0.411 + 1.002 + (2 + 6.712) = 75.83 of 80 GiB = 94.8 %: over 90 %, flagged.
    assert plan.memory.total == pytest.approx(75.830, abs=1e-3)
    assert plan.memory_share == pytest.approx(0.9479, abs=1e-4)
    assert plan.memory_warning
    assert any("over 90%" in note.text for note in r.memory_lines)
    assert plan.zero == 3 and plan.frameworks

    # 24 GPUs, TP 1: the case of the issue. Compute per micro-batch:
    # 6 × 70.55e9 × 4096 / 316e12 = 5.487 s. ZeRO-3 moves 3 × 2 × 70.55e9 × 23/24 =
    # 405.7 GB per GPU every micro-batch; a ring crosses each node boundary once per chunk,
    # so the node's 8 NICs carry it: 0.92 × 8 × 50 GB/s = 368 GB/s → 1.10 s, hidden behind
    # the compute: not network-bound.
    wide = evaluate(SizingInput(arch="llama3-70b", zero_stage=3), H100, gpus=24).plans[0]
    assert wide.memory.model_states == gib(16 * 70.55e9 / 24)  # 43.80 GiB
    assert wide.memory.gather_buffer == gib(4 * 70.55e9 / 80)  # 3.29 GiB
    assert wide.step.compute == pytest.approx(6 * 70.55e9 * 4096 / 316e12)
    assert wide.step.dp_bytes == pytest.approx(3 * 2 * 70.55e9 * 23 / 24)
    assert wide.step.dp_bandwidth == pytest.approx(368)
    assert wide.step.data_parallel == pytest.approx(3 * 2 * 70.55e9 * 23 / 24 / 368e9)
    assert not wide.network_bound


def test_zero3_over_a_slow_fabric_is_network_bound():
    # Same model on 4-GPU A100 nodes with 2 × 200 Gb/s HDR, s = 2048, TP 4, DP 16:
    # compute 6 × 70.55e9 × 2048 / 4 / 98.4e12 = 2.203 s; ZeRO-3 moves
    # 3 × 2 × (70.55e9 / 4) × 15/16 = 99.2 GB per GPU; the 4 TP ranks' DP rings share the
    # node's 0.92 × 400/8 = 46 GB/s, 11.5 GB/s each → 8.63 s: network-bound.
    inp = SizingInput(arch="llama3-70b", zero_stage=3, seq_len=2048)
    plan = evaluate(inp, A100, gpus=64, tp=4).plans[0]
    assert plan.step.compute == pytest.approx(6 * 70.55e9 * 2048 / 4 / 98.4e12)
    assert plan.step.dp_bandwidth == pytest.approx(11.5)
    assert plan.step.data_parallel == pytest.approx(3 * 2 * 70.55e9 / 4 * 15 / 16 / 11.5e9)
    assert plan.network_bound
    notes = " ".join(n.text for n in evaluate(inp, A100, gpus=64, tp=4).compute_lines)
    assert "Network-bound" in notes
    assert "re-gathers the weights every micro-batch" in notes


def test_qwen2_72b_inference_32k_by_8_shares_the_sequences_between_replicas():
    # Ψ = 72.71e9, L = 80, 8 KV heads × 128, FFN 29,568; 8 sequences of 32,768 tokens.
    inp = SizingInput(arch="qwen2-72b", mode="infer", context=32768, concurrency=8)
    plan = size(inp, [H100]).cheapest
    assert (plan.gpus, plan.tp, plan.dp) == (8, 4, 2)
    assert plan.sequences_per_replica == 4  # 8 sequences over 2 replicas
    # weights 72.71e9 × 2 / 4 = 36.355e9 B = 33.86 GiB
    assert plan.memory.model_states == gib(72.71e9 * 2 / 4)
    # KV: 2 × 80 × (8/4) × 128 × 2 B × 32,768 × 4 = 10,737,418,240 B = 10.0 GiB
    assert plan.memory.kv_cache == gib(2 * 80 * 2 * 128 * 2 * 32768 * 4)
    # prefill chunk 8,192 × (4 × 8192 + 2 × 29568) × 2 / 4 = 376,438,784 B
    assert plan.memory.activations == gib(376_438_784)
    # decode step reads 33.858 + 10.0 GiB at 3.35 TB/s = 14.06 ms; both replicas step at
    # once and serve the 8 sequences: 8 / 0.01406 = 569 tokens/s (each replica given all
    # 8 sequences, as before, read 20 GiB of KV and counted 2 × 8: 927, 1.6× too high).
    decode = (72.71e9 * 2 / 4 + 2 * 80 * 2 * 128 * 2 * 32768 * 4) / 3.35e12
    assert plan.tokens_per_s == pytest.approx(8 / decode)
    assert plan.frameworks == ("vLLM", "SGLang")


def test_mixtral_8x7b_zero3_splits_experts_by_expert_parallel():
    # 46.70e9 total, 12.88e9 active, 8 experts top-2: one expert (46.70 − 12.88)/6 =
    # 5.637e9, all experts 45.093e9, dense 1.607e9. L = 32, h = 4096, V = 32,000.
    plan = size(SizingInput(arch="mixtral-8x7b", zero_stage=3), [H100]).cheapest
    assert (plan.gpus, plan.tp, plan.dp, plan.ep) == (16, 8, 2, 2)
    experts = (46.70e9 - 12.88e9) / 6 * 8
    dense = 46.70e9 - experts
    # dense over TP 8 and ZeRO-3 DP 2; experts over TP 8 × EP 2, expert DP 2/2 = 1:
    # 16 × dense/8/2 + 16 × experts/16 = 46.70e9 B = 43.49 GiB
    assert plan.memory.model_states == gib(16 * dense / 8 / 2 + 16 * experts / 16)
    # only the dense part is gathered (nothing to gather over expert DP 1):
    # 2 × 2 × dense/8 / 32 = 25.1e6 B
    assert plan.memory.gather_buffer == gib(4 * dense / 8 / 32)
    # activations with k = 2: 32·2·4096²/8 + 4096²·53/8 + 4·4096·32000/8 = 310,902,784 B
    assert plan.memory.activations == gib(310_902_784)


def test_175b_dense_zero3_on_h100():
    # Estimated shape: L = round((175e9 / 196,608)^(1/3)) = 96, h = 12,288.
    r = size(SizingInput(D("175"), zero_stage=3), [H100])
    plan = r.cheapest
    # 32 GPUs: 16 × 175e9 / 32 = 87.5e9 B = 81.5 GiB > 80 GiB; 40 GPUs with TP 4, DP 10.
    assert (plan.gpus, plan.tp, plan.dp) == (40, 4, 10)
    assert plan.memory.model_states == gib(16 * 175e9 / 4 / 10)  # 65.19 GiB
    assert plan.memory.gather_buffer == gib(4 * 175e9 / 4 / 96)  # 1.70 GiB
    # 96·2·4096·12288/4 + 4096·12288·34/4 + 4·4096·128256/4 = 3,369,074,688 B = 3.14 GiB
    assert plan.memory.activations == gib(3_369_074_688)
    assert plan.memory_share == pytest.approx(0.9879, abs=1e-4)  # 79.03 of 80 GiB
    assert plan.memory_warning


def test_deepseek_v3_fp8_inference_reads_only_the_active_experts():
    # 671e9 total, 37e9 active, 256 routed experts top-8: experts (671 − 37)/248 × 256 =
    # 654.45e9, dense 16.55e9. MLA caches 512 + 64 values per token and layer, 61 layers.
    inp = SizingInput(arch="deepseek-v3", mode="infer", precision="fp8")
    plan = size(inp, [H100]).cheapest
    assert (plan.gpus, plan.tp, plan.pp) == (16, 8, 2)
    assert plan.memory.model_states == gib(671e9 / 16)  # fp8: 1 byte, 39.06 GiB
    # KV kept in bf16 (the engines' default) for 8,192 tokens: ⌈61/2⌉ × 576 × 2 × 8192
    assert plan.memory.kv_cache == gib(31 * 576 * 2 * 8192)
    # batch 1: a decode step reads the dense part and 8 of 256 experts:
    # (16.55e9 + 654.45e9 × 8/256) × 1 B / 16 = 2.3125e9 B per GPU, two stages in turn:
    # 2 × (2.3125e9 + 0.2926e9) / 3.35e12 = 1.555 ms → 643 tokens/s (all 671e9: 40).
    experts = (671e9 - 37e9) / 248 * 256
    read = (671e9 - experts + experts * 8 / 256) / 16
    assert plan.weights_read_gib == gib(read)
    decode = 2 * (read + 31 * 576 * 2 * 8192) / 3.35e12
    assert plan.tokens_per_s == pytest.approx(1 / decode)
    everything = 2 * (671e9 / 16 + 31 * 576 * 2 * 8192) / 3.35e12
    assert plan.tokens_per_s / (1 / everything) > 10
    # fp8 KV is its own choice: half the cache.
    fp8_kv = size(SizingInput(arch="deepseek-v3", mode="infer", precision="fp8",
                              kv_precision="fp8"), [H100]).cheapest  # fmt: skip
    assert fp8_kv.memory.kv_cache == pytest.approx(plan.memory.kv_cache / 2)


def test_kv_cache_precision_is_validated():
    with pytest.raises(sizing.SizingError) as excinfo:
        size(SizingInput(arch="llama3-8b", mode="infer", kv_precision="int2"), [H100])
    assert excinfo.value.field == "kv_precision"
