"""Acceptance rules: thresholds, fail-closed behaviour, median flag, cluster verdict."""

from decimal import Decimal

import pytest

from provisioning.validation.default_rules import DEFAULT_RULES
from provisioning.validation.evaluation import evaluate_cluster, evaluate_node
from provisioning.validation.rules import (
    BASELINE,
    GIB,
    CheckOutcome,
    Measurement,
    NodeVerdict,
    Rule,
    busbw_from_algbw,
    metric_key,
    normalize_gpu_model,
    scaling_efficiency,
)

AR16 = metric_key("allreduce_busbw_gbps", 16 * GIB)
GEMM_RULE = Rule(
    metric="gemm_tflops_bf16",
    gpu_model="H100",
    baseline=Decimal(790),
    min_variance=-0.10,
    max_below_median=0.05,
    check="gemm",
    source="test",
)
ALL_CHECKS = [
    "gpu_inventory",
    "gemm",
    "memory_bandwidth",
    "nvbandwidth",
    "allreduce",
    "dcgm_diag",
    "nvlink",
    "xid",
    "ecc",
    "ecc_remap",
    "ib_write_bw",
]


def good_h100(node: str = "n1", **overrides) -> Measurement:
    metrics = {
        "gpu_count": 8,
        "gemm_tflops_bf16": [780.0] * 8,
        "hbm_bandwidth_gbps": [3000.0] * 8,
        "h2d_bandwidth_gbps": [55.0] * 8,
        "d2h_bandwidth_gbps": [55.0] * 8,
        "p2p_bandwidth_gbps": [370.0] * 8,
        AR16: 480.0,
        "allreduce_wrong_count": 0,
        "ib_write_bw_gbps": [392.3] * 8,
        "nvlink_inactive_links": 0,
        "nvlink_all_inactive_gpus": 0,
        "nvlink_links_total": 144,
        "xid_critical_count": 0,
        "remapped_rows_pending": 0,
        "remapped_rows_failure": 0,
        "remapped_rows_uncorrectable": [0] * 8,
        "ecc_sram_uncorrectable": [0] * 8,
        "ecc_sram_correctable": [0] * 8,
        "ecc_dram_errors": [0] * 8,
        "ecc_off_gpus": 0,
        "ib_nic_count": 8,
        "dcgm_fail_count": 0,
        "dcgm_skip_count": 0,
        "gpu_model_mismatch_count": 0,
        "gpu_memory_mib": [81559] * 8,
        "mig_enabled_gpus": 0,
        "gemm_rel_error": [0.002] * 8,
        "throttled_gpus": 0,
    }
    metrics.update(overrides)
    return Measurement(
        node=node,
        gpu_model="NVIDIA H100 80GB HBM3",
        fabric="ndr400",
        metrics=metrics,
        checks=[CheckOutcome(name=c, status="completed", return_code=0) for c in ALL_CHECKS],
        expected={"gpu_count": 8, "nics_per_node": 8},
    )


def codes(verdict: NodeVerdict) -> list[str]:
    return [r.code for r in verdict.reasons]


def test_good_h100_node_is_accepted_with_default_rules():
    v = evaluate_node(good_h100())
    assert v.accepted is True, v.reason_texts
    assert v.reasons == []
    metrics = {r.rule.key for r in v.results}
    assert {"gemm_tflops_bf16", "hbm_bandwidth_gbps", AR16, "gpu_count", "dcgm_skip_count"} <= (
        metrics
    )
    assert all(r.status == "pass" for r in v.results)


def test_exactly_at_threshold_passes_and_just_below_fails():
    at = 711  # 790 × (1 − 0.10)
    v = evaluate_node(good_h100(gemm_tflops_bf16=[at] * 8), [GEMM_RULE])
    assert v.accepted is True, v.reason_texts
    assert v.results[0].variance == pytest.approx(-0.10)
    v = evaluate_node(good_h100(gemm_tflops_bf16=[at] * 7 + [710.99]), [GEMM_RULE])
    assert v.accepted is False
    assert codes(v) == ["below_threshold"]
    assert v.reasons[0].params["gpu"] == 7
    assert v.results[0].flagged_gpus == [7]
    assert "710.99" in v.reasons[0].text and "711" in v.reasons[0].text


def test_float_threshold_at_boundary_is_exact():
    rule = Rule(metric="x", gpu_model="H100", baseline=0.3, min_variance=-0.1, source="t")
    # 0.3 × 0.9 = 0.27 exactly in decimal, though not in binary floating point.
    assert evaluate_node(good_h100(x=0.27), [rule]).accepted is True
    assert evaluate_node(good_h100(x=0.26999), [rule]).accepted is False


def test_min_value_boundary_for_allreduce_at_16gib():
    rules = [
        r for r in DEFAULT_RULES if r.metric == "allreduce_busbw_gbps" and r.gpu_model == "H100"
    ]
    assert len(rules) == 1 and rules[0].message_size_bytes == 16 * GIB
    assert evaluate_node(good_h100(**{AR16: 460.0}), rules).accepted is True
    v = evaluate_node(good_h100(**{AR16: 459.99}), rules)
    assert v.accepted is False and codes(v) == ["below_threshold"]
    # A figure measured at another message size does not count.
    m = good_h100()
    del m.metrics[AR16]
    m.metrics["allreduce_busbw_gbps@1048576"] = 500.0
    v = evaluate_node(m, rules)
    assert v.accepted is False and codes(v) == ["missing_metric"]


def test_missing_metric_fails():
    m = good_h100()
    del m.metrics["hbm_bandwidth_gbps"]
    v = evaluate_node(m)
    assert v.accepted is False
    assert codes(v) == ["missing_metric"]
    assert v.reasons[0].params == {"metric": "hbm_bandwidth_gbps"}
    assert v.reasons[0].text == "hbm_bandwidth_gbps: not measured"


def test_empty_per_gpu_list_counts_as_missing():
    v = evaluate_node(good_h100(gemm_tflops_bf16=[]), [GEMM_RULE])
    assert v.accepted is False and codes(v) == ["missing_metric"]


def test_skipped_required_check_fails():
    m = good_h100()
    m.checks = [c for c in m.checks if c.name != "dcgm_diag"] + [
        CheckOutcome(name="dcgm_diag", status="skipped", reason="dcgmi not found on PATH")
    ]
    v = evaluate_node(m)
    assert v.accepted is False
    assert codes(v) == ["check_skipped"]  # said once, though two rules need the check
    assert "dcgmi not found on PATH" in v.reasons[0].text
    failing = [r.rule.metric for r in v.results if r.status == "fail"]
    assert failing == ["dcgm_fail_count", "dcgm_skip_count"]


def test_skipped_check_no_required_rule_needs_is_a_note():
    m = good_h100()
    m.checks.append(CheckOutcome(name="extra_probe", status="skipped", reason="not here"))
    v = evaluate_node(m)
    assert v.accepted is True
    assert [n.code for n in v.notes] == ["check_skipped"]


def test_nonzero_return_code_fails_even_when_metric_is_fine():
    m = good_h100()
    m.checks = [
        CheckOutcome(name=c.name, status="completed", return_code=3 if c.name == "nvlink" else 0)
        for c in m.checks
    ]
    v = evaluate_node(m)
    assert v.accepted is False
    assert codes(v) == ["nonzero_return_code"]
    assert v.reasons[0].params == {"check": "nvlink", "return_code": 3}


def test_failed_check_and_parse_error_fail():
    m = good_h100()
    m.checks.append(CheckOutcome(name="gemm", status="failed", reason="CUDA out of memory"))
    v = evaluate_node(m)
    assert v.accepted is False and "check_failed" in codes(v)
    m = good_h100()
    m.checks = [
        CheckOutcome(
            name=c.name,
            status=c.status,
            return_code=0,
            parse_error="missing '# Avg bus bandwidth' line" if c.name == "allreduce" else None,
        )
        for c in m.checks
    ]
    v = evaluate_node(m)
    assert v.accepted is False
    assert codes(v) == ["parse_error"]


def test_dcgm_skip_is_not_pass():
    v = evaluate_node(good_h100(dcgm_skip_count=1))
    assert v.accepted is False
    assert codes(v) == ["not_equal"]
    assert v.reasons[0].params["metric"] == "dcgm_skip_count"


def test_gpu_more_than_5_percent_below_median_is_flagged():
    # All above 90 % of the reference, but GPU 3 is 6 % below the median of 780.
    values = [780.0] * 8
    values[3] = 733.2
    v = evaluate_node(good_h100(gemm_tflops_bf16=values), [GEMM_RULE])
    assert v.accepted is False
    assert codes(v) == ["below_node_median"]
    assert v.results[0].flagged_gpus == [3]
    assert v.reasons[0].params["gpu"] == 3 and v.reasons[0].params["median"] == 780.0
    values[3] = 741.0  # exactly 5 % below: passes
    assert evaluate_node(good_h100(gemm_tflops_bf16=values), [GEMM_RULE]).accepted is True


def test_gpu_count_equals_node_type_and_missing_expectation_fails():
    v = evaluate_node(good_h100(gpu_count=7))
    assert v.accepted is False and codes(v) == ["not_equal"]
    m = good_h100()
    m.expected = {}  # neither the GPU count nor the fabric NICs to compare with
    v = evaluate_node(m)
    assert v.accepted is False and codes(v) == ["missing_baseline", "missing_baseline"]
    assert {r.params["metric"] for r in v.reasons} == {"gpu_count", "ib_nic_count"}


def test_cpu_measurement_cannot_accept_a_gpu_node():
    m = good_h100()
    m.device = "cpu"
    m.metrics = {
        "gemm_gflops_cpu": 50.0,
        "memcopy_bandwidth_gbps_cpu": 10.0,
        "allreduce_busbw_gbps_cpu": 2.0,
    }
    v = evaluate_node(m)
    assert v.accepted is False
    assert "device_mismatch" in codes(v)


def cpu_node(**metrics) -> Measurement:
    base = {
        "gemm_gflops_cpu": 50.0,
        "memcopy_bandwidth_gbps_cpu": 10.0,
        "allreduce_busbw_gbps_cpu": 2.0,
    }
    base.update(metrics)
    checks = [
        CheckOutcome(name=n, status="completed", return_code=0)
        for n in ("gemm", "memory_bandwidth", "allreduce")
    ]
    checks += [
        CheckOutcome(name=n, status="skipped", reason="no NVIDIA GPU")
        for n in ("gpu_inventory", "dcgm_diag", "nvlink", "xid", "ecc_remap")
    ]
    return Measurement(node="ci", gpu_model="cpu", device="cpu", metrics=base, checks=checks)


def test_cpu_profile_accepts_a_real_cpu_run_and_fails_closed():
    v = evaluate_node(cpu_node())
    assert v.accepted is True, v.reason_texts
    assert sorted(r.rule.metric for r in v.results) == [
        "allreduce_busbw_gbps_cpu",
        "gemm_gflops_cpu",
        "memcopy_bandwidth_gbps_cpu",
    ]
    assert len(v.notes) == 5  # GPU checks skipped: noted, not failed
    m = cpu_node()
    del m.metrics["allreduce_busbw_gbps_cpu"]
    v = evaluate_node(m)
    assert v.accepted is False and codes(v) == ["missing_metric"]
    v = evaluate_node(cpu_node(gemm_gflops_cpu=0.0))
    assert v.accepted is False and codes(v) == ["below_threshold"]


def test_unknown_gpu_model_has_no_rules_and_fails():
    m = good_h100()
    m.gpu_model = "NVIDIA B200"
    v = evaluate_node(m)
    assert v.accepted is False and codes(v) == ["no_rules"]


def test_optional_rule_missing_is_noted_but_present_and_low_fails():
    optional = Rule(
        metric="gemm_tflops_fp8", gpu_model="H100", min_value=1000, required=False, source="t"
    )
    v = evaluate_node(good_h100(), [*DEFAULT_RULES, optional])
    assert v.accepted is True
    assert "missing_metric" in [n.code for n in v.notes]
    low = good_h100(gemm_tflops_fp8=[900.0] * 8)
    assert evaluate_node(low, [*DEFAULT_RULES, optional]).accepted is False
    assert evaluate_node(good_h100(ecc_sram_uncorrectable=[0, 2] + [0] * 6)).accepted is False


def test_fabric_selects_ib_rule():
    assert evaluate_node(good_h100(ib_write_bw_gbps=[380.0] * 8)).accepted is True
    v = evaluate_node(good_h100(ib_write_bw_gbps=[379.9] + [392.0] * 7))
    assert v.accepted is False and v.reasons[0].params["metric"] == "ib_write_bw_gbps"
    m = good_h100(ib_write_bw_gbps=[190.0] * 8)
    m.fabric = "hdr200"
    assert evaluate_node(m).accepted is True


def test_reasons_serialise_for_the_django_layer():
    v = evaluate_node(good_h100(gpu_count=7))
    d = v.as_dict()
    assert d["accepted"] is False
    assert d["reasons"][0]["code"] == "not_equal"
    assert d["reasons"][0]["params"]["measured"] == 7
    assert isinstance(d["reasons"][0]["text"], str)
    assert any(r["metric"] == "gpu_count" and r["status"] == "fail" for r in d["results"])


def test_default_rules_carry_sources_and_guesses():
    assert all(r.source for r in DEFAULT_RULES)
    hbm = [r for r in DEFAULT_RULES if r.metric == "hbm_bandwidth_gbps"]
    assert all("GUESS" in r.source for r in hbm)
    models = {r.gpu_model for r in DEFAULT_RULES if r.metric.startswith("gemm_tflops")}
    assert models == {"H100", "H200", "A100-40G", "A100-80G", "V100S", "RTX3090"}
    v100s = [r for r in DEFAULT_RULES if r.gpu_model == "V100S" and r.metric.startswith("gemm")]
    assert [r.metric for r in v100s] == ["gemm_tflops_fp16"]


def test_rule_needs_exactly_one_criterion():
    with pytest.raises(ValueError):
        Rule(metric="x", gpu_model="H100", source="t")
    with pytest.raises(ValueError):
        Rule(metric="x", gpu_model="H100", source="t", min_value=1, equals=1)
    with pytest.raises(ValueError):
        Rule(metric="x", gpu_model="H100", source="t", min_variance=-0.1)
    with pytest.raises(ValueError):
        Rule(metric="x", gpu_model="H100", source="t", equals=BASELINE)


# ---------------------------------------------------------------------------- cluster


def cluster(busbw: float, efficiency: float = 0.95) -> Measurement:
    return Measurement(
        node="cluster",
        gpu_model="H100",
        fabric="ndr400",
        metrics={
            "cluster_allreduce_ring_busbw_gbps": busbw,
            "allreduce_throughput_scaling": efficiency,
        },
        expected={"nics_per_node": 8},
    )


def test_cluster_accepted_and_ring_threshold():
    # 0.9 × 8 NICs × 46 GB/s = 331.2 GB/s
    ok = evaluate_cluster([good_h100("n1"), good_h100("n2")], cluster(331.2))
    assert ok.accepted is True, [r.text for r in ok.reasons]
    low = evaluate_cluster([good_h100("n1"), good_h100("n2")], cluster(331.1))
    assert low.accepted is False
    assert [r.code for r in low.reasons] == ["below_threshold"]


def test_an_all_reduce_ratio_is_not_judged_as_scaling_efficiency():
    # VALIDATION.md: a ratio of two all-reduce bandwidths is not scaling efficiency; no
    # seed rule reads one (the cluster check records allreduce_throughput_scaling).
    assert not [r for r in DEFAULT_RULES if r.metric == "scaling_efficiency"]
    assert evaluate_cluster([good_h100()], cluster(400.0, 0.5)).accepted is True


def test_cluster_rejects_when_a_node_is_rejected():
    v = evaluate_cluster([good_h100("n1"), good_h100("n2", gpu_count=7)], cluster(400.0))
    assert v.accepted is False
    assert v.rejected_nodes == ["n2"]
    assert [r.code for r in v.reasons] == ["node_rejected"]
    assert v.reasons[0].params == {"node": "n2"}


def test_cluster_fails_closed_without_cluster_figures():
    v = evaluate_cluster([good_h100("n1"), good_h100("n2")], None)
    assert v.accepted is False and [r.code for r in v.reasons] == ["missing_cluster_measurement"]
    c = cluster(400.0)
    c.expected = {}
    v = evaluate_cluster([good_h100("n1"), good_h100("n2")], c)
    assert v.accepted is False and [r.code for r in v.reasons] == ["missing_baseline"]
    assert evaluate_cluster([], None).accepted is False


def test_cluster_accepts_precomputed_verdicts():
    verdict = evaluate_node(good_h100("n1"))
    assert evaluate_cluster([verdict], cluster(400.0)).accepted is True


# ---------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    ("collective", "n", "expected"),
    [
        ("all_reduce", 8, 175.0),  # 100 × 2 × 7 / 8
        ("all_reduce_perf", 2, 100.0),
        ("allreduce", 1, 0.0),
        ("reduce_scatter", 8, 87.5),
        ("all_gather", 4, 75.0),
        ("alltoall", 8, 87.5),
        ("broadcast", 8, 100.0),
        ("reduce", 16, 100.0),
    ],
)
def test_busbw_from_algbw(collective, n, expected):
    assert busbw_from_algbw(100.0, n, collective) == pytest.approx(expected)


def test_busbw_matches_nccl_tests_sample_row():
    # 16×H100 sample, 8 GiB row: algbw 180.71 → busbw 338.82 (rounded by the tool)
    assert busbw_from_algbw(180.71, 16, "all_reduce") == pytest.approx(338.83, abs=0.01)


def test_busbw_rejects_bad_input():
    with pytest.raises(ValueError):
        busbw_from_algbw(1.0, 0, "all_reduce")
    with pytest.raises(ValueError):
        busbw_from_algbw(1.0, 8, "gather_scatter")


def test_scaling_efficiency():
    assert scaling_efficiency(100.0, 200.0) == 1.0
    assert scaling_efficiency(100.0, 180.0) == pytest.approx(0.9)
    with pytest.raises(ValueError):
        scaling_efficiency(0.0, 10.0)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA A100-SXM4-40GB", "A100-40G"),
        ("NVIDIA A100-SXM4-80GB", "A100-80G"),
        ("Tesla V100S-PCIE-32GB", "V100S"),
        ("Tesla V100-SXM3-32GB", "V100"),
        ("NVIDIA GeForce RTX 3090", "RTX3090"),
        ("NVIDIA GH200 120GB", "GH200"),
        ("cpu", "cpu"),
    ],
)
def test_normalize_gpu_model(name, key):
    assert normalize_gpu_model(name) == key
