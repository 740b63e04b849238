"""The sizing calculator (inventory/sizing/, pure), the wizard page and the size_model
command.

Node types use the demo inventory's figures (portal/management/commands/seed_demo.py):
GPU memory, measured GEMM reference (VALIDATION.md), host RAM, NICs, list prices.
"""

import ast
import dataclasses
import io
import json
import re
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import override
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from billing.pricing import selectors as billing_selectors
from core import i18n_hook
from core.i18n_hook import get_translator, set_translator
from inventory import gpus, sizing
from inventory.models import GPUModel
from inventory.sizing import NodeOption, SizingError, SizingInput, evaluate, size

D = Decimal

H100 = NodeOption(
    code="h100-8x-nvlink",
    name="H100 8-GPU NVLink",
    gpu_model="H100 80G SXM",
    gpus_per_node=8,
    gpu_memory_gib=80,
    bf16_tflops=D("790"),
    intra_node="nvswitch",
    nic_count=8,
    nic_speed_gbps=400,
    fabric="ib_ndr",
    monthly_price_per_node=D("100000"),
    host_ram_gb=2048,
    memory_bandwidth_tbs=D("3.35"),
)
A100 = NodeOption(
    code="a100-40g-4x",
    name="A100 40G 4-GPU",
    gpu_model="A100 40G SXM",
    gpus_per_node=4,
    gpu_memory_gib=40,
    bf16_tflops=D("246"),
    intra_node="nvlink",
    nic_count=2,
    nic_speed_gbps=200,
    fabric="ib_hdr",
    monthly_price_per_node=D("11200"),  # ¥2,800 per GPU × 4
    host_ram_gb=512,
    memory_bandwidth_tbs=D("1.555"),
)
RTX3090 = NodeOption(
    code="e5-baremetal+3090",
    name="Bare-metal E5 + 4× RTX 3090",
    gpu_model="RTX 3090 24G",
    gpus_per_node=4,
    gpu_memory_gib=24,
    bf16_tflops=D("76"),
    intra_node="pcie",
    nic_count=1,
    nic_speed_gbps=10,
    fabric="ethernet",
    monthly_price_per_node=D("10999"),  # ¥3,999 + 4 × ¥1,750
    host_ram_gb=256,
    memory_bandwidth_tbs=D("0.936"),
)
V100S = NodeOption(
    code="e5-baremetal+v100s",
    name="Bare-metal E5 + 4× V100S",
    gpu_model="V100S 32G PCIe",
    gpus_per_node=4,
    gpu_memory_gib=32,
    bf16_tflops=D("89"),
    intra_node="pcie",
    nic_count=1,
    nic_speed_gbps=10,
    fabric="ethernet",
    monthly_price_per_node=D("9999"),  # ¥3,999 + 4 × ¥1,500
    host_ram_gb=256,
    memory_bandwidth_tbs=D("1.134"),
)
E5 = NodeOption(
    code="e5-baremetal",
    name="Bare-metal E5",
    gpu_model="",
    gpus_per_node=0,
    gpu_memory_gib=0,
    bf16_tflops=D("0"),
    intra_node="pcie",
    nic_count=1,
    nic_speed_gbps=10,
    fabric="ethernet",
    monthly_price_per_node=D("3999"),
    host_ram_gb=256,
)
DEMO = [H100, A100, RTX3090, V100S, E5]
LLAMA70 = sizing.ARCHITECTURES["llama3-70b"]


@pytest.fixture(autouse=True)
def sizing_source_text():
    """Assert on the English source text, whatever translator the Django layer installed."""
    previous = get_translator()
    set_translator(None)
    try:
        yield
    finally:
        set_translator(previous)


# --- Model states: the ZeRO paper ---------------------------------------------------------


@pytest.mark.parametrize(("stage", "printed"), [(0, "120"), (1, "31.4"), (2, "16.6"), (3, "1.9")])
def test_zero_paper_worked_example(stage, printed):
    # Rajbhandari et al. 2019, Fig. 1: Ψ = 7.5B, N_d = 64, K = 12 (mixed-precision Adam).
    gb = sizing.model_states_gb(7.5e9, dp=64, stage=stage)
    places = len(printed.partition(".")[2])
    assert f"{gb:.{places}f}" == printed


@pytest.mark.parametrize(
    ("precision", "optimizer", "total"),
    [
        ("bf16", "adamw", 16),  # 2 + 2 + (4 master + 4 + 4)
        ("fp32", "adamw", 16),  # 4 + 4 + (4 + 4)
        ("bf16", "sgd", 12),  # 2 + 2 + (4 master + 4 momentum)
        ("bf16", "adafactor", 8),  # 2 + 2 + 4 master; factored second moment ≈ 0
        ("bf16", "adam8bit", 10),  # 2 + 2 + 4 master + 1 + 1
        ("fp8", "adamw", 16),  # bf16 weights and fp32 master copies kept
    ],
)
def test_bytes_of_model_states_per_optimizer(precision, optimizer, total):
    assert sum(sizing.state_bytes(precision, optimizer)) == total


def test_7b_without_zero_never_claims_one_80gb_gpu():
    # The old answer: 7B ZeRO-0 "fits one 80 GB H100". Model states alone are 112 GB
    # (104.3 GiB).
    plan = evaluate(SizingInput(D("7")), H100, gpus=1).plans[0]
    assert plan.memory.model_states == pytest.approx(112e9 / 2**30)
    assert not plan.fits
    r = size(SizingInput(D("7")), [H100])
    assert r.cheapest is not None
    assert r.cheapest.tp * r.cheapest.pp >= 2  # split by model parallelism to fit
    assert r.cheapest.memory.total <= 80


def test_70b_zero3_is_not_one_a100_node():
    # The old answer: 70B ZeRO-3 on one 4 × A100 40G node (160 GB < 1,129 GB of states).
    r = size(SizingInput(arch="llama3-70b", zero_stage=3), [A100])
    assert r.cheapest is not None
    assert r.cheapest.nodes > 1
    assert r.cheapest.gpus * 40 > 16 * LLAMA70.params_total / 1e9
    one_node = evaluate(SizingInput(arch="llama3-70b", zero_stage=3), A100, gpus=4, tp=4)
    assert one_node.plans[0].fits is False


def test_175b_zero3_needs_the_seeds_32_to_64_h100_not_16():
    r = size(SizingInput(D("175"), zero_stage=3), [H100])
    assert 32 <= r.cheapest.gpus <= 64
    assert "InfiniBand NDR 400G" in r.fabric


# --- Activations and the property tests ---------------------------------------------------


def test_checkpointing_cuts_activations():
    inp = SizingInput(arch="llama3-70b", zero_stage=3, seq_len=8192)
    shape = sizing.shape_of(sizing.validate(inp))
    full = sizing.memory_per_gpu(dataclasses.replace(inp, checkpointing=False), shape,
                                 tp=8, pp=1, dp=8)  # fmt: skip
    ckpt = sizing.memory_per_gpu(inp, shape, tp=8, pp=1, dp=8)
    assert ckpt.activations < full.activations / 10
    # Korthikanti et al.: s·b·h·34/t per layer with FlashAttention (no 5as/h term).
    per_layer = sizing.activation_bytes_per_layer(
        seq=8192, batch=1, hidden=8192, heads=64, tp=8, flash=True
    )
    assert per_layer == 8192 * 8192 * 34 / 8
    scores = sizing.activation_bytes_per_layer(
        seq=8192, batch=1, hidden=8192, heads=64, tp=8, flash=False
    )
    assert scores == 8192 * 8192 * (34 + 5 * 64 * 8192 / 8192) / 8


ARCH_CODES = st.sampled_from([*sizing.ARCHITECTURES, ""])
SIZES = st.decimals(min_value=D("0.5"), max_value=D("500"), places=1)


@settings(max_examples=60, deadline=None)
@given(arch=ARCH_CODES, params=SIZES, dp=st.integers(1, 512), grow=st.integers(1, 512),
       tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4]))  # fmt: skip
def test_zero3_memory_per_gpu_never_grows_with_dp(arch, params, dp, grow, tp, pp):
    inp = sizing.validate(SizingInput(params, zero_stage=3, arch=arch))
    shape = sizing.shape_of(inp)
    small = sizing.memory_per_gpu(inp, shape, tp=tp, pp=pp, dp=dp, ep=1)
    large = sizing.memory_per_gpu(inp, shape, tp=tp, pp=pp, dp=dp + grow, ep=1)
    assert large.total <= small.total + 1e-9


@settings(max_examples=60, deadline=None)
@given(arch=ARCH_CODES, params=SIZES, stage=st.sampled_from([0, 1, 2, 3]),
       seq=st.integers(1, 32768), more_seq=st.integers(0, 32768),
       batch=st.integers(1, 16),
       more_batch=st.integers(0, 16), ckpt=st.booleans(),
       tp=st.sampled_from([1, 2, 8]))  # fmt: skip
def test_memory_never_shrinks_with_longer_sequences_or_bigger_micro_batches(
    arch, params, stage, seq, more_seq, batch, more_batch, ckpt, tp
):
    base = SizingInput(params, zero_stage=stage, arch=arch, seq_len=seq, micro_batch=batch,
                       checkpointing=ckpt)  # fmt: skip
    inp = sizing.validate(base)
    shape = sizing.shape_of(inp)
    bigger = sizing.validate(dataclasses.replace(base, seq_len=seq + more_seq,
                                                 micro_batch=batch + more_batch))  # fmt: skip
    before = sizing.memory_per_gpu(inp, shape, tp=tp, pp=1, dp=8)
    after = sizing.memory_per_gpu(bigger, shape, tp=tp, pp=1, dp=8)
    assert after.activations >= before.activations
    assert after.total >= before.total


INPUTS = st.builds(
    SizingInput,
    params_billion=SIZES,
    precision=st.sampled_from(["bf16", "fp16", "fp8", "fp32"]),
    optimizer=st.sampled_from(sizing.OPTIMIZERS),
    zero_stage=st.sampled_from([0, 1, 2, 3]),
    arch=ARCH_CODES,
    seq_len=st.sampled_from([512, 2048, 4096, 8192]),
    micro_batch=st.integers(1, 4),
    checkpointing=st.booleans(),
)
INFER_INPUTS = st.builds(
    SizingInput,
    params_billion=SIZES,
    precision=st.sampled_from(sizing.INFER_PRECISIONS),
    mode=st.just("infer"),
    arch=ARCH_CODES,
    context=st.sampled_from([2048, 8192, 32768, 131072]),
    concurrency=st.integers(1, 64),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inp=st.one_of(INPUTS, INFER_INPUTS))
def test_no_offered_plan_exceeds_its_gpu_memory_and_none_runs_bf16_on_v100s(inp):
    r = size(inp, DEMO)
    for plan in r.plans:
        assert plan.fits
        assert plan.memory.total <= float(plan.option.gpu_memory_gib)
        assert plan.memory.total == pytest.approx(
            plan.memory.model_states + plan.memory.gather_buffer + plan.memory.activations
            + plan.memory.kv_cache + plan.memory.headroom
        )  # fmt: skip
        if inp.precision in ("bf16", "fp8", "int8", "int4"):
            assert plan.option != V100S
        if inp.precision == "fp8":
            assert plan.option.gpu_model.startswith("H100")


def test_v100s_is_never_offered_for_bf16_but_is_for_fp16():
    bf16 = size(SizingInput(D("1"), zero_stage=3), [V100S])
    assert bf16.plans == []
    assert "no bf16" in bf16.reason_if_none
    assert "Ampere" in bf16.reason_if_none
    fp16 = size(SizingInput(D("1"), precision="fp16", zero_stage=3), [V100S])
    assert fp16.cheapest is not None and fp16.cheapest.option == V100S
    # 13B on one 32 GB V100S node: 52 GB per card of model states does not fit.
    r = evaluate(SizingInput(D("13"), precision="fp16", zero_stage=3), V100S, gpus=4)
    assert not r.plans[0].fits
    assert r.plans[0].memory.model_states > 32


def test_fp8_only_on_hopper():
    r = size(SizingInput(D("7"), precision="fp8", zero_stage=3), [A100, H100])
    assert {p.option for p in r.plans} == {H100}
    a100 = next(o for o in r.outcomes if o.option == A100)
    assert "fp8 needs Hopper" in a100.problems[0]


# --- Inference ------------------------------------------------------------------------------


def test_llama3_70b_bf16_weights_and_gqa_kv_cache():
    inp = SizingInput(arch="llama3-70b", mode="infer", context=8192, concurrency=1)
    one = evaluate(inp, H100, gpus=8, tp=8).plans[0]
    # ≈ 141 GB (131.4 GiB) of weights
    assert one.memory.model_states * 8 == pytest.approx(141.1e9 / 2**30, abs=0.1)
    gqa = 2 * 80 * 8 * 128 * 2 * 8192  # 8 KV heads
    assert sizing.kv_cache_bytes(layers=80, kv_heads=8, head_dim=128, bytes_per_value=2,
                                 context=8192, concurrency=1) == gqa  # fmt: skip
    assert one.memory.kv_cache == pytest.approx(gqa / 8 / 2**30)  # 8 KV heads over TP 8
    assert gqa / 1e9 == pytest.approx(2.68, abs=0.01)  # not 21.5 GB as with 64 heads
    r = size(inp, [H100])
    assert "8 KV heads, not 64 attention heads" in " ".join(n.text for n in r.memory_lines)


def test_inference_picks_the_smallest_tensor_parallel_that_fits():
    r = size(SizingInput(arch="llama3-70b", mode="infer", context=8192), [H100])
    # 2 × 80 GiB hold 131.4 GiB of weights + KV, but at over 90% of the memory: flagged.
    assert (r.cheapest.tp, r.cheapest.pp) == (2, 1)
    assert r.cheapest.memory_warning and 0.9 < r.cheapest.memory_share <= 1
    long = size(SizingInput(arch="llama3-70b", mode="infer", context=32768, concurrency=16), [H100])
    # 16 × 32k of KV cache (160 GiB) needs the whole node: two TP-4 replicas share the
    # 16 sequences, 8 each.
    assert (long.cheapest.gpus, long.cheapest.tp, long.cheapest.dp) == (8, 4, 2)
    assert long.cheapest.sequences_per_replica == 8
    assert long.cheapest.tokens_per_s > 0
    assert any("Throughput estimate" in n.text for n in long.compute_lines)


def test_int4_weights_are_a_quarter_of_bf16():
    bf16 = evaluate(SizingInput(arch="llama3-8b", mode="infer"), RTX3090, gpus=1).plans[0]
    int4 = evaluate(
        SizingInput(arch="llama3-8b", mode="infer", precision="int4"), RTX3090, gpus=1
    ).plans[0]
    assert int4.memory.model_states < bf16.memory.model_states / 3.5


# --- MoE, offload, compute ----------------------------------------------------------------


def test_moe_counts_total_params_for_memory_and_active_for_compute():
    inp = SizingInput(arch="mixtral-8x7b", zero_stage=3, target_tokens_billion=D("100"),
                      target_days=D("30"))  # fmt: skip
    r = size(inp, [H100])
    plan = r.cheapest
    assert plan.ep > 1
    flops = 6 * 12.88e9 * 100e9
    compute_days = flops / (plan.gpus * 790e12 * 0.4 * 86400)
    assert plan.step.compute == pytest.approx(6 * 12.88e9 * 4096 / plan.tp / (790e12 * 0.4))
    # Days = steps × (compute + what it cannot hide): never less than the compute alone.
    steps = 100e9 / (plan.dp * 4096)
    assert plan.train_days == pytest.approx(steps * plan.step.total / 86400)
    assert plan.train_days >= compute_days
    assert any("46.7 B parameters in memory" in n.text for n in r.memory_lines)


def test_cpu_offload_checks_the_node_types_host_ram():
    inp = SizingInput(D("13"), zero_stage=3, offload="cpu")
    r = size(inp, [A100])
    plan = r.cheapest
    # grads + states, 14 bytes × 13e9 over DP, in GiB
    assert plan.memory.host_per_gpu == pytest.approx(14 * 13e9 / plan.dp / 2**30)
    assert plan.host_needed_gb <= A100.host_ram_gb
    small = dataclasses.replace(A100, host_ram_gb=64)
    tight = evaluate(inp, small, gpus=4).plans[0]
    assert not tight.fits
    assert any("host RAM" in p for p in tight.problems)


def test_training_time_uses_measured_gemm_and_assumed_mfu():
    inp = SizingInput(D("7"), zero_stage=3, target_tokens_billion=D("1000"),
                      target_days=D("30"), mfu=D("0.5"))  # fmt: skip
    r = size(inp, [H100])
    # 6 × 7e9 × 1e12 = 4.2e22; 790 TFLOPS × 0.5 × 30 days → 41.01 GPUs → 48 (6 nodes).
    # With the communication (ZeRO-3 over 48 GPUs: 3 × 2 × 7e9 × 47/48 = 41.1 GB per GPU
    # per step at 0.92 × 8 × 50 = 368 GB/s, 0.11 s, hidden behind 0.44 s of compute) the
    # 6 nodes still make it: 25.6 days.
    assert r.cheapest.gpus == 48
    assert r.cheapest.train_days <= 30
    assert not r.cheapest.network_bound
    assert any("MFU, assumed" in n.text for n in r.compute_lines)


def test_cheapest_and_fastest_differ_and_both_show():
    inp = SizingInput(D("7"), zero_stage=3, target_tokens_billion=D("10"), target_days=D("30"))
    r = size(inp, [H100, A100])
    assert r.cheapest.option == A100
    assert r.fastest.option == H100
    assert r.fastest_differs


def test_nothing_fits_says_what_would():
    # 10B on one 4 × RTX 3090 node (PCIe, 10 Gb/s: no multi-node): 160 GB of states.
    r = size(SizingInput(D("10"), zero_stage=0), [RTX3090])
    assert r.plans == []
    assert r.cheapest is None
    assert r.reason_if_none.startswith("No node type qualifies")
    assert r.what_would_fit.startswith("With ZeRO-3 with CPU offload it would fit: 4 × RTX 3090")
    assert size(SizingInput(D("7")), []).reason_if_none.startswith("No node types")


def test_shortfall_text():
    text = sizing.shortfall_text(gpus_needed=48, gpu="H100", free_gpus=32, full_from="2027-02-01")
    assert text.startswith("Needs 48 × H100: only 32 are free")
    assert "2027-02-01" in text


def test_one_layout_is_evaluated_with_fits():
    inp = SizingInput(arch="llama3-70b", zero_stage=3)
    good = evaluate(inp, H100, gpus=32, tp=8).plans[0]
    bad = evaluate(inp, H100, gpus=8, tp=8).plans[0]
    assert good.fits and not bad.fits
    assert (good.tp, good.pp, good.dp, good.nodes) == (8, 1, 4, 4)


# --- The seeds' rule of thumb stays beside the estimate -----------------------------------


def test_rule_of_thumb_is_shown_with_where_it_differs():
    r = size(SizingInput(D("175"), zero_stage=3), [H100])
    assert r.rule.formula.startswith("175 B × 2 bytes × 3.5 = 1,225 GB; ZeRO-3 ÷ 4 = 306.25 GB")
    assert "÷ 8 = 153.13 GB at best" in r.rule.formula
    assert "2,800 GB" in r.rule_comparison  # 16 bytes × 175B of model states
    assert "without shrinking the total" in r.rule_comparison


def test_seed_examples_put_both_figures_side_by_side():
    examples = sizing.seed_examples([H100, A100])
    assert [e.seeds_claim for e in examples][:2] == ["8 × H100 80G", "at least 32–64 × H100 80G"]
    llama = examples[0]
    assert llama.plan.gpus > 8
    assert "× H100 80G SXM" in llama.real
    assert llama.rule_formula.startswith("70.55 B × 2 bytes × 3.5")
    a13 = examples[2]
    assert a13.plan.gpus > 4  # 208 GB of states do not fit 160 GB


@pytest.mark.parametrize(
    ("params", "band"),
    [("29.9", "<30B"), ("30", "30-70B"), ("70", "30-70B"), ("70.1", "70-100B"),
     ("99.9", "70-100B"), ("100", ">=100B")],
)  # fmt: skip
def test_band_edges(params, band):
    assert sizing.size_band(D(params)) == band


# --- Impossible input -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"params_billion": D("0")}, "params_billion"),
        ({"params_billion": D("-7")}, "params_billion"),
        ({"params_billion": D("20000.1")}, "params_billion"),
        ({"params_billion": D("NaN")}, "params_billion"),
        ({"params_billion": "seven"}, "params_billion"),
        ({"params_billion": None}, "params_billion"),
        ({"precision": "int4"}, "precision"),  # training
        ({"precision": "BF16"}, "precision"),
        ({"optimizer": "lion"}, "optimizer"),
        ({"zero_stage": 4}, "zero_stage"),
        ({"zero_stage": True}, "zero_stage"),
        ({"mode": "serve"}, "mode"),
        ({"arch": "gpt-5"}, "arch"),
        ({"offload": "cpu"}, "offload"),  # needs ZeRO 1–3
        ({"seq_len": 0}, "seq_len"),
        ({"micro_batch": 1.5}, "micro_batch"),
        ({"mfu": D("0")}, "mfu"),
        ({"mfu": D("1.5")}, "mfu"),
        ({"target_tokens_billion": D("0"), "target_days": D("30")}, "target_tokens_billion"),
        ({"target_tokens_billion": D("100"), "target_days": D("3651")}, "target_days"),
        ({"target_tokens_billion": D("100")}, "target_days"),
        ({"target_days": D("30")}, "target_tokens_billion"),
    ],
)
def test_impossible_input_raises_sizing_error_naming_the_field(changes, field):
    inp = dataclasses.replace(SizingInput(D("7")), **changes)
    with pytest.raises(SizingError) as excinfo:
        size(inp, DEMO)
    assert excinfo.value.field == field
    assert excinfo.value.message


def _imports(path):
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    return imported


def test_package_is_pure():
    stdlib = {"__future__", "collections.abc", "dataclasses", "decimal", "typing", "math"}
    package = Path(sizing.__file__).parent
    own = {f"inventory.sizing.{path.stem}" for path in package.glob("*.py")}
    for path in package.glob("*.py"):
        assert _imports(path) <= stdlib | own | {"core.i18n_hook", "inventory.gpus"}, path
    assert _imports(gpus.__file__) <= stdlib
    assert _imports(i18n_hook.__file__) <= {"__future__", "collections.abc"}


def test_user_facing_text_goes_through_the_translation_hook():
    set_translator(lambda s: "[" + s + "]")
    try:
        with pytest.raises(SizingError) as excinfo:
            size(SizingInput(D("0")), DEMO)
        r = size(SizingInput(D("7"), zero_stage=3), [H100])
    finally:
        set_translator(None)
    assert excinfo.value.message == "[Model size must be more than 0 billion parameters.]"
    assert r.rule_comparison.startswith("[[Where they differ")
    assert all(n.text.startswith("[") for n in r.memory_lines)
    assert "[Single node, NVLink/NVSwitch only" in r.fabric


# --- The page and the command (demo data) ------------------------------------------------


def _wizard(client, site, **params):
    with override("en"):
        url = reverse("wizard")
    query = {
        "site": site.pk,
        "start_date": (timezone.localdate() + timedelta(days=10)).isoformat(),
        "precision": "bf16",
        "optimizer": "adamw",
        "zero_stage": "3",
    }
    query.update(params)
    return client.get(url, query)


def _text(response):
    return re.sub(r"\s+", " ", response.content.decode())


@pytest.mark.django_db
def test_page_shows_the_seeds_examples_with_both_figures(client, demo_sz):
    response = _wizard(client, demo_sz, arch="llama3-70b")
    assert response.status_code == 200
    html = _text(response)
    examples = response.context["examples"]
    assert len(examples) == 3
    for ex in examples:
        row = re.search(
            r"<tr><td>" + re.escape(ex.title) + r"</td>(.*?)</tr>", html.replace("&#x27;", "'")
        )
        assert row, ex.title
        cells = row.group(1)
        assert ex.seeds_claim in cells  # the seeds' figure …
        assert ex.real.split(" (")[0] in cells  # … beside the real estimate
    assert "8 × H100 80G" in html
    # The request itself: rule of thumb beside the real estimate, with where they differ.
    result = response.context["result"]
    assert result.rule.formula in html
    assert "Where they differ" in html
    assert "Real estimate" in html and "Provider's rule of thumb" in html


@pytest.mark.django_db
def test_page_prices_the_cheapest_plan_with_availability(client, demo_sz):
    response = _wizard(client, demo_sz, params_billion="7")
    result = response.context["result"]
    assert result.cheapest is not None
    assert result.cheapest.memory.total <= result.cheapest.gpu_memory_gib
    offers = response.context["offers"]
    assert [o["term"] for o in offers] == ["month", "quarter", "year"]
    assert offers[0]["availability"].requested == result.node_count
    assert "Plans that can run" in response.content.decode()


@pytest.mark.django_db
def test_page_says_what_is_free_when_the_plan_is_too_big(client, demo_sz):
    # 6 × 175e9 × 300e9 over 790 × 0.4 TFLOPS in 20 days: 577 GPUs, 73 H100 nodes;
    # Shenzhen has 80, of which 8 are booked and 1 in maintenance.
    response = _wizard(
        client, demo_sz, params_billion="175", target_tokens_billion="300", target_days="20"
    )
    result = response.context["result"]
    assert result.cheapest.option.code == "h100-8x-nvlink"
    assert result.cheapest.nodes > 71
    offer = response.context["offers"][0]
    assert not offer["availability"].can_place
    assert offer["shortfall"].startswith(f"Needs {result.cheapest.gpus} × H100 80G SXM: only")
    assert offer["shortfall"] in _text(response).replace("&#x27;", "'")


@pytest.mark.django_db
def test_page_inference_mode(client, demo_sz):
    response = _wizard(
        client, demo_sz, mode="infer", arch="llama3-70b", context="32768", concurrency="16"
    )
    result = response.context["result"]
    assert result.input.mode == "infer"
    assert result.cheapest.memory.kv_cache > 0
    assert "tokens/s (estimate)" in response.content.decode()


@pytest.mark.django_db
def test_command_json_search(demo_sz):
    out = io.StringIO()
    call_command(
        "size_model", "--params", "70e9", "--mode", "train", "--precision", "bf16",
        "--optimizer", "adamw", "--zero", "3", "--seq", "4096", "--micro-batch", "1",
        "--json", stdout=out,
    )  # fmt: skip
    data = json.loads(out.getvalue())
    assert data["plans"]
    for plan in data["plans"]:
        assert {"gpus", "node_type", "tp", "pp", "dp", "zero", "fits", "per_gpu_gib",
                "frameworks", "memory_share", "step"} <= set(plan)  # fmt: skip
        assert set(plan["per_gpu_gib"]) == {
            "model_states", "gather_buffer", "activations", "kv_cache", "headroom", "total"
        }  # fmt: skip
        assert plan["fits"] is True
        assert plan["zero"] == (3 if plan["dp"] > 1 else None)
        assert plan["zero_requested"] == 3
        assert plan["per_gpu_gib"]["total"] <= plan["gpu_memory_gib"]
    assert data["rule_of_thumb"]["total_gb"] == 490.0


@pytest.mark.django_db
def test_command_json_inference_arch(demo_sz):
    out = io.StringIO()
    call_command(
        "size_model", "--arch", "llama3-70b", "--mode", "infer", "--context", "32768",
        "--concurrency", "16", "--json", stdout=out,
    )  # fmt: skip
    data = json.loads(out.getvalue())
    assert data["model"]["kv_heads"] == 8
    assert all(p["per_gpu_gib"]["kv_cache"] > 0 for p in data["plans"])


@pytest.mark.django_db
def test_command_json_one_layout(demo_sz):
    def run(*extra):
        out = io.StringIO()
        call_command(
            "size_model", "--arch", "llama3-70b", "--zero", "3", "--node-type",
            "h100-8x-nvlink", "--json", *extra, stdout=out,
        )  # fmt: skip
        return json.loads(out.getvalue())

    bad = run("--gpus", "8", "--tp", "8")
    good = run("--gpus", "32", "--tp", "8", "--pp", "1")
    assert len(bad["plans"]) == 1 and bad["plans"][0]["fits"] is False
    assert bad["plans"][0]["problems"]
    assert good["plans"][0]["fits"] is True
    assert (good["plans"][0]["gpus"], good["plans"][0]["dp"]) == (32, 4)


# --- One source of GPU facts: the GPUModel row staff edit wins over the table -------------


def test_the_node_options_figure_wins_and_the_table_fills_in_what_it_lacks():
    edited = dataclasses.replace(H100, bf16_tflops=D("395"), memory_bandwidth_tbs=D("1.675"))
    blank = dataclasses.replace(H100, bf16_tflops=D("0"), memory_bandwidth_tbs=0)
    assert sizing.reference_tflops(edited) == 395
    assert sizing.reference_tflops(blank) == float(gpus.BY_KEY["H100"].gemm_tflops) == 790
    inp = SizingInput(D("7"), target_tokens_billion=D("100"), target_days=D("30"))
    half, full = evaluate(inp, edited, gpus=8).plans[0], evaluate(inp, blank, gpus=8).plans[0]
    assert half.sustained_tflops == pytest.approx(full.sustained_tflops / 2)
    assert half.train_days == pytest.approx(full.train_days * 2)


@pytest.mark.django_db
def test_an_edited_gpu_model_figure_reaches_the_wizard(client, demo_sz):
    gpu = GPUModel.objects.get(name="H100 80G SXM")
    gpu.reference_tflops = D("395")  # staff measured half the table's 790
    gpu.save()
    options = {o.code: o for o in billing_selectors.sizing_options(site=demo_sz)}
    assert options["h100-8x-nvlink"].bf16_tflops == D("395")

    response = _wizard(
        client, demo_sz, arch="llama3-70b", target_tokens_billion="100", target_days="30"
    )
    result = response.context["result"]
    plan = next(p for p in result.plans if p.option.code == "h100-8x-nvlink")
    assert plan.sustained_tflops == pytest.approx(395 * 0.4)
    assert sizing.plan_json(plan)["compute"]["reference_tflops"] == 395
    if result.cheapest is plan:
        assert "× 395 TFLOPS measured GEMM" in _text(response)
