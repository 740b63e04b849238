"""The sizing wizard's calculator (billing/sizing.py): pure, no database.

Node types use the demo inventory's figures (inventory/management/commands/seed_demo.py)
and the seeds' list prices.
"""

import ast
import dataclasses
from decimal import Decimal
from pathlib import Path

import pytest

from billing import i18n, sizing
from billing.i18n import get_translator, set_translator
from billing.sizing import NodeOption, SizingError, SizingInput, size

D = Decimal

H100 = NodeOption(
    code="h100-8x-nvlink",
    name="H100 8-GPU NVLink",
    gpu_model="H100 80G SXM",
    gpus_per_node=8,
    gpu_memory_gb=80,
    bf16_tflops=D("790"),
    intra_node="nvswitch",
    nic_count=8,
    nic_speed_gbps=400,
    fabric="ib_ndr",
    monthly_price_per_node=D("100000"),
)
A100 = NodeOption(
    code="a100-40g-4x",
    name="A100 40G 4-GPU",
    gpu_model="A100 40G SXM",
    gpus_per_node=4,
    gpu_memory_gb=40,
    bf16_tflops=D("246"),
    intra_node="nvlink",
    nic_count=2,
    nic_speed_gbps=200,
    fabric="ib_hdr",
    monthly_price_per_node=D("11200"),  # ¥2,800 per GPU × 4
)
RTX3090 = NodeOption(
    code="e5-baremetal-3090x4",
    name="Bare-metal E5 + 4× RTX 3090",
    gpu_model="RTX 3090 24G",
    gpus_per_node=4,
    gpu_memory_gb=24,
    bf16_tflops=D("76"),
    intra_node="pcie",
    nic_count=1,
    nic_speed_gbps=10,
    fabric="ethernet",
    monthly_price_per_node=D("10999"),  # ¥3,999 + 4 × ¥1,750
)
E5 = NodeOption(
    code="e5-baremetal",
    name="Bare-metal E5",
    gpu_model="",
    gpus_per_node=0,
    gpu_memory_gb=0,
    bf16_tflops=D("0"),
    intra_node="pcie",
    nic_count=1,
    nic_speed_gbps=10,
    fabric="ethernet",
    monthly_price_per_node=D("3999"),
)
DEMO = [H100, A100, RTX3090, E5]


@pytest.fixture(autouse=True)
def english():
    """Assert on the English source text, whatever translator the Django layer installed."""
    previous = get_translator()
    set_translator(None)
    try:
        yield
    finally:
        set_translator(previous)


def unpriced(option):
    return dataclasses.replace(option, monthly_price_per_node=None)


def sources(result):
    return {n.source for n in result.notes}


# --- Sizes from the seeds ------------------------------------------------------------------


def test_7b_bf16_adamw_fits_one_h100_node_data_parallel_no_fabric():
    r = size(SizingInput(params_billion=D("7"), precision="bf16", optimizer="adamw"), DEMO)

    assert r.band == "<30B"
    assert r.memory_needed_gb == D("49")
    assert r.formula == "7 B × 2 bytes × 3.5 = 49 GB (no ZeRO)"
    assert r.memory_range_gb is None
    # Plain data parallel keeps a whole copy per GPU: only the 80 GB H100 holds 49 GB.
    assert r.recommended == H100
    assert r.gpus_for_memory == 1
    assert r.gpus_for_compute is None
    assert (r.gpu_count, r.node_count) == (8, 1)
    assert r.monthly_total == D("100000")
    assert "Data parallel" in r.parallelism
    assert r.fabric.startswith("Single node, NVLink/NVSwitch only")
    assert "no inter-node fabric" in r.fabric
    assert r.topology.startswith("Single node")
    assert any("Rounded up from 1 to 8 GPUs = 1 node" in n.text for n in r.notes)
    assert any("90%" in n.text and n.source == "estimate" for n in r.notes)


def test_70b_bf16_zero3_formula_and_nvlink_node_with_200g():
    r = size(SizingInput(D("70"), "bf16", "adamw", zero_stage=3), DEMO)

    assert r.band == "30-70B"
    assert r.bytes_per_param == 2
    assert r.memory_factor == D("3.5")
    assert r.memory_total_gb == D("490")
    assert r.zero_divisor == D("4")
    assert r.memory_needed_gb == D("122.5")
    assert r.memory_range_gb == (D("61.25"), D("122.5"))
    assert r.formula.startswith("70 B × 2 bytes × 3.5 = 490 GB; ZeRO-3 ÷ 4 = 122.5 GB")
    assert "÷ 8 = 61.25 GB" in r.formula
    assert r.recommended is not None
    assert r.recommended.intra_node in ("nvlink", "nvswitch")
    assert r.recommended.nic_count * r.recommended.nic_speed_gbps >= 200
    # The cheapest qualifying node: one A100 4-GPU node holds 122.5 GB (4 × 36 GB usable).
    assert r.recommended == A100
    assert (r.gpus_for_memory, r.gpu_count, r.node_count) == (4, 4, 1)
    assert "Tensor parallel" in r.parallelism
    assert any("ZeRO-3" in n.text and n.source == "seeds" for n in r.notes)
    # PCIe-only nodes cannot do tensor parallel at 30B+.
    rtx = next(p for p in r.options_considered if p.option == RTX3090)
    assert not rtx.qualifies
    assert any("NVLink" in problem for problem in rtx.problems)


def test_70b_across_nodes_needs_200g_between_nodes():
    cheap_slow = dataclasses.replace(
        H100,
        code="h100-8x-roce100",
        name="H100 8-GPU, 1× 100G",
        nic_count=1,
        nic_speed_gbps=100,
        fabric="roce_v2",
        monthly_price_per_node=D("50000"),
    )
    inp = SizingInput(D("70"), zero_stage=3, target_tokens_billion=D("100"), target_days=D("30"))
    r = size(inp, [cheap_slow, H100, A100])

    assert r.band == "30-70B"
    assert r.node_count > 1
    assert r.recommended == H100
    assert r.recommended.nic_count * r.recommended.nic_speed_gbps >= 200
    slow = next(p for p in r.options_considered if p.option == cheap_slow)
    assert any("200 Gb/s" in problem for problem in slow.problems)
    # 165 A100 GPUs would be 64 or more, which needs InfiniBand NDR, not HDR.
    a100 = next(p for p in r.options_considered if p.option == A100)
    assert a100.gpu_count >= 64
    assert any("NDR" in problem for problem in a100.problems)
    assert "data parallel across nodes" in r.parallelism


def test_80b_is_between_the_seed_bands_and_recommends_400g():
    r = size(SizingInput(D("80"), zero_stage=3), [H100])

    assert r.band == "70-100B"
    assert "Between the seeds'" in r.parallelism
    assert "400 Gb/s" in r.parallelism
    assert any(n.source == "estimate" and "70–100B" in n.text for n in r.notes)


def test_175b_is_multi_node_ib_ndr_and_h100():
    r = size(SizingInput(D("175"), zero_stage=3), DEMO)

    assert r.band == ">=100B"
    assert r.recommended == H100
    assert r.node_count >= 2  # the seeds: multi-node at 100B+
    assert r.gpu_count == 16
    assert "InfiniBand NDR 400G" in r.fabric
    assert "CLOS" not in r.topology  # 16 GPUs: leaf-spine
    assert "Leaf-spine" in r.topology
    assert "3D parallel" in r.parallelism
    assert "pipeline" in r.parallelism
    assert "ZeRO" in r.parallelism
    assert "expert parallel" in r.parallelism
    assert "topology-aware" in r.parallelism
    assert "automatic recovery" in r.parallelism
    assert any("multi-node" in n.text and n.source == "seeds" for n in r.notes)
    a100 = next(p for p in r.options_considered if p.option == A100)
    assert any("400 Gb/s InfiniBand NDR" in problem for problem in a100.problems)


def test_175b_with_a_token_target_needs_ndr_in_a_3_tier_clos():
    inp = SizingInput(D("175"), zero_stage=3, target_tokens_billion=D("300"), target_days=D("30"))
    r = size(inp, DEMO)

    assert r.band == ">=100B"
    assert r.recommended == H100
    # 6 × 175e9 × 300e9 = 3.15e23 FLOPs; 790 TFLOPS × 0.4 × 30 days per GPU -> 385 GPUs.
    assert r.gpus_for_compute == 385
    assert (r.gpu_count, r.node_count) == (392, 49)
    assert r.gpu_count >= 64
    assert r.fabric.startswith("InfiniBand NDR 400G required")
    assert "3-tier CLOS" in r.topology
    assert "as few leaf switches" in r.topology
    assert r.monthly_total == D("4900000")


# --- Compute target ------------------------------------------------------------------------


def test_compute_target_increases_gpus_and_rounds_to_whole_nodes():
    plain = size(SizingInput(D("7")), [H100])
    inp = SizingInput(D("7"), target_tokens_billion=D("1000"), target_days=D("30"))
    r = size(inp, [H100])

    assert plain.gpu_count == 8
    # 6 × 7e9 × 1e12 = 4.2e22 FLOPs; 316 TFLOPS sustained × 2,592,000 s -> 51.3 -> 52 GPUs.
    assert r.compute_flops == D("4.2E22")
    assert r.gpus_for_memory == 1
    assert r.gpus_for_compute == 52
    assert (r.gpu_count, r.node_count) == (56, 7)
    assert r.gpu_count > plain.gpu_count
    assert r.gpu_count % H100.gpus_per_node == 0
    assert any(
        "Rounded up from 52 to 56 GPUs = 7 nodes" in n.text and n.source == "estimate"
        for n in r.notes
    )
    assert r.compute_formula is not None
    assert "4.2 × 10^22 FLOPs" in r.compute_formula
    assert "0.4 MFU" in r.compute_formula
    assert "52 GPUs" in r.compute_formula
    assert any("40% MFU" in n.text and n.source == "estimate" for n in r.notes)
    # 56 GPUs: more than 32, fewer than 64.
    assert r.fabric.startswith("InfiniBand recommended")
    assert "Leaf-spine" in r.topology


def test_a_small_compute_target_stays_within_the_memory_plan():
    inp = SizingInput(D("1"), target_tokens_billion=D("1"), target_days=D("1"))
    r = size(inp, [H100])

    assert r.gpus_for_compute == 1
    assert (r.gpu_count, r.node_count) == (8, 1)


# --- Choosing a node type ------------------------------------------------------------------


def test_cheapest_qualifying_option_wins_for_a_small_model():
    r = size(SizingInput(D("7"), zero_stage=3), [H100, A100])

    assert r.recommended == A100
    assert r.monthly_total == D("11200")
    assert r.node_count == 1


def test_cheapest_wins_even_on_pcie_under_30b():
    r = size(SizingInput(D("7"), zero_stage=3), DEMO)

    assert r.recommended == RTX3090
    assert r.monthly_total == D("10999")
    assert r.fabric.startswith("Single node, PCIe only")


def test_cheapest_qualifying_for_34b_is_the_a100_node():
    r = size(SizingInput(D("34"), zero_stage=3), DEMO)

    assert r.band == "30-70B"
    assert r.recommended == A100  # RTX 3090 is cheaper but PCIe only


def test_total_price_counts_every_node():
    # 70B ZeRO-2: 245 GB. H100: 4 GPUs, 1 node, ¥100,000; A100: 7 GPUs, 2 nodes, ¥22,400.
    r = size(SizingInput(D("70"), zero_stage=2), [H100, A100])

    assert r.memory_needed_gb == D("245")
    assert r.recommended == A100
    assert r.node_count == 2
    assert r.monthly_total == D("22400")


def test_without_prices_the_fewest_nodes_win():
    r = size(SizingInput(D("70"), zero_stage=2), [unpriced(A100), unpriced(H100)])

    assert r.recommended == unpriced(H100)
    assert r.node_count == 1
    assert r.monthly_total is None


def test_priced_options_rank_before_unpriced_ones():
    r = size(SizingInput(D("70"), zero_stage=2), [unpriced(H100), A100])

    assert r.recommended == A100


def test_price_ties_go_to_fewer_nodes_then_code():
    half = dataclasses.replace(
        H100, code="a-h100-4x", name="H100 4-GPU", gpus_per_node=4,
        monthly_price_per_node=D("50000"),
    )  # fmt: skip
    # 6 GPUs for compute: one 8-GPU node or two 4-GPU nodes, ¥100,000 either way.
    inp = SizingInput(D("7"), target_tokens_billion=D("100"), target_days=D("30"))
    r = size(inp, [half, H100])
    assert r.gpus_for_compute == 6
    assert r.recommended == H100

    twin = dataclasses.replace(H100, code="a-h100-8x-twin")
    r = size(SizingInput(D("7")), [H100, twin])
    assert r.recommended == twin


def test_node_types_without_gpus_are_skipped():
    r = size(SizingInput(D("1")), [E5, H100])

    assert r.recommended == H100
    e5 = next(p for p in r.options_considered if p.option == E5)
    assert not e5.qualifies
    assert e5.problems == ("it has no GPUs",)


# --- No qualifying option ------------------------------------------------------------------


def test_no_qualifying_option_gives_none_and_a_reason():
    r = size(SizingInput(D("70"), zero_stage=3), [RTX3090, E5])

    assert r.recommended is None
    assert "No node type qualifies" in r.reason_if_none
    assert "NVLink" in r.reason_if_none
    assert "no GPUs" in r.reason_if_none
    assert (r.gpu_count, r.node_count, r.gpus_for_memory) == (0, 0, 0)
    assert r.monthly_total is None
    assert r.memory_needed_gb == D("122.5")  # the memory figures are still there
    assert r.band == "30-70B"
    assert r.parallelism


def test_no_options_at_all():
    r = size(SizingInput(D("7")), [])

    assert r.recommended is None
    assert "No node types" in r.reason_if_none


def test_175b_needs_ndr_nodes():
    r = size(SizingInput(D("175"), zero_stage=3), [A100])

    assert r.recommended is None
    assert "400 Gb/s InfiniBand NDR" in r.reason_if_none


def test_plain_data_parallel_needs_the_model_on_every_gpu():
    r = size(SizingInput(D("13")), [H100, A100])

    assert r.recommended is None
    assert "ZeRO" in r.reason_if_none
    assert size(SizingInput(D("13"), zero_stage=3), [H100, A100]).recommended == A100


# --- Estimates are labelled ----------------------------------------------------------------


def test_sgd_and_adafactor_use_a_smaller_labelled_factor():
    sgd = size(SizingInput(D("7"), optimizer="sgd"), [H100])
    ada = size(SizingInput(D("7"), optimizer="adafactor"), [H100])
    adam = size(SizingInput(D("7"), optimizer="adamw"), [H100])

    assert sgd.memory_factor < D("3.5")
    assert ada.memory_factor < D("3.5")
    assert sgd.formula == "7 B × 2 bytes × 2.5 = 35 GB (no ZeRO)"
    assert any("sgd" in n.text and n.source == "estimate" for n in sgd.notes)
    assert any("adafactor" in n.text and n.source == "estimate" for n in ada.notes)
    assert any("3.5" in n.text and n.source == "seeds" for n in adam.notes)


@pytest.mark.parametrize(("stage", "needed"), [(0, "490"), (1, "326.67"), (2, "245"), (3, "122.5")])
def test_zero_stages(stage, needed):
    r = size(SizingInput(D("70"), zero_stage=stage), [H100])

    assert r.memory_needed_gb == D(needed)
    if stage in (1, 2):
        assert f"ZeRO-{stage} ÷" in r.formula
        assert any(f"ZeRO-{stage}" in n.text and n.source == "estimate" for n in r.notes)


@pytest.mark.parametrize(
    ("precision", "formula"),
    [
        ("fp32", "7 B × 4 bytes × 3.5 = 98 GB"),
        ("fp16", "7 B × 2 bytes × 3.5 = 49 GB"),
        ("fp8", "7 B × 1 byte × 3.5 = 24.5 GB"),
    ],
)
def test_bytes_per_parameter(precision, formula):
    r = size(SizingInput(D("7"), precision=precision, zero_stage=3), [H100])

    assert r.formula.startswith(formula)


def test_every_note_names_its_source():
    inp = SizingInput(
        D("175"), "fp8", "sgd", 2, target_tokens_billion=D("300"), target_days=D("60")
    )
    r = size(inp, DEMO)

    assert r.notes
    assert sources(r) == {"seeds", "estimate"}
    assert all(line.endswith(("(seeds)", "(our estimate)")) for line in r.note_lines)


# --- Impossible input ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"params_billion": D("0")}, "params_billion"),
        ({"params_billion": D("-7")}, "params_billion"),
        ({"params_billion": D("20000.1")}, "params_billion"),
        ({"params_billion": D("NaN")}, "params_billion"),
        ({"params_billion": D("Infinity")}, "params_billion"),
        ({"params_billion": "seven"}, "params_billion"),
        ({"precision": "int4"}, "precision"),
        ({"precision": "BF16"}, "precision"),
        ({"optimizer": "lion"}, "optimizer"),
        ({"zero_stage": 4}, "zero_stage"),
        ({"zero_stage": -1}, "zero_stage"),
        ({"zero_stage": True}, "zero_stage"),
        ({"target_tokens_billion": D("0"), "target_days": D("30")}, "target_tokens_billion"),
        ({"target_tokens_billion": D("-1"), "target_days": D("30")}, "target_tokens_billion"),
        ({"target_tokens_billion": D("100"), "target_days": D("0")}, "target_days"),
        ({"target_tokens_billion": D("100"), "target_days": D("-3")}, "target_days"),
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
    assert isinstance(excinfo.value, ValueError)
    assert str(excinfo.value) == excinfo.value.message
    assert excinfo.value.message


def test_limits_are_inclusive():
    assert size(SizingInput(D("20000"), zero_stage=3), DEMO).band == ">=100B"
    inp = SizingInput(D("7"), target_tokens_billion=D("1"), target_days=D("3650"))
    assert size(inp, [H100]).gpus_for_compute == 1


def test_numbers_given_as_int_or_str_are_accepted():
    r = size(SizingInput(7, target_tokens_billion="1000", target_days=30), [H100])

    assert r.memory_needed_gb == D("49")
    assert r.gpus_for_compute == 52


@pytest.mark.parametrize(
    ("params", "band"),
    [("29.9", "<30B"), ("30", "30-70B"), ("70", "30-70B"), ("70.1", "70-100B"),
     ("99.9", "70-100B"), ("100", ">=100B")],
)  # fmt: skip
def test_band_edges(params, band):
    assert sizing.size_band(D(params)) == band


def _imports(module):
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    return imported


def test_module_is_pure():
    stdlib = {"__future__", "collections.abc", "dataclasses", "decimal", "typing"}
    # The only project import is the translation hook, itself free of Django.
    assert _imports(sizing) <= stdlib | {"billing.i18n"}
    assert _imports(i18n) <= {"__future__", "collections.abc"}


# --- Translation ---------------------------------------------------------------------------


def test_user_facing_text_goes_through_the_translation_hook():
    set_translator(lambda s: "[" + s + "]")
    try:
        with pytest.raises(SizingError) as excinfo:
            size(SizingInput(D("0")), DEMO)
        r = size(SizingInput(D("7")), [H100])
        first_line = r.note_lines[0]  # str(note) translates the source label when called
    finally:
        set_translator(None)

    assert excinfo.value.field == "params_billion"  # field names are not translated
    assert excinfo.value.message == "[Model size must be more than 0 billion parameters.]"
    assert r.parallelism.startswith("[Data parallel (PyTorch DDP")
    assert r.parallelism.endswith("is enough.]")
    assert "[Single node, NVLink/NVSwitch only" in r.fabric
    assert first_line.startswith("[[GPU memory ≈")  # the note, then its source label
    assert first_line.endswith("([seeds])]")
    # Placeholders are filled in after translation, with the module's number formatting.
    assert any(n.text.startswith("[Rounded up from 1 to 8 GPUs = [1 node]") for n in r.notes)
    # Translation happens at call time: with the hook reset, English comes back.
    assert size(SizingInput(D("7")), [H100]).parallelism.startswith("Data parallel")
