"""The hand-over from a provisioning run to validation: real agent runs, fail closed."""

from provisioning.validation.interface import (
    AgentFailed,
    NodeTarget,
    local_runner,
    validate_nodes,
)


def test_two_simulated_nodes_pass_on_real_cpu_measurements():
    outcome = validate_nodes(
        [NodeTarget(1, "sim-01", "cpu"), NodeTarget(2, "sim-02", "cpu")],
        profile="quick",
        runner=local_runner(sizes=["gemm=256", "allreduce=1M"]),
    )
    assert outcome.cluster_accepted, outcome.cluster_reasons
    assert [n.accepted for n in outcome.nodes] == [True, True]
    report = outcome.nodes[0].report
    assert report["host"]["device"] == "cpu"
    assert {c["name"] for c in report["checks"] if c["status"] == "completed"} >= {
        "gemm",
        "allreduce",
    }
    assert outcome.cluster.results  # the cluster rules were applied to a real measurement


def test_a_node_whose_agent_gives_no_report_is_rejected_with_the_reason():
    def broken(target, profile):
        if target.hostname == "sim-02":
            raise AgentFailed("the agent ran past 120 s")
        return local_runner(sizes=["gemm=256", "allreduce=1M"])(target, profile)

    outcome = validate_nodes(
        [NodeTarget(1, "sim-01", "cpu"), NodeTarget(2, "sim-02", "cpu")],
        profile="quick",
        runner=broken,
    )
    assert not outcome.cluster_accepted
    assert [(n.hostname, n.accepted) for n in outcome.nodes] == [
        ("sim-01", True),
        ("sim-02", False),
    ]
    assert outcome.rejected[0].reasons == ["the agent ran past 120 s"]


def test_a_cpu_report_judged_against_a_gpu_model_fails_closed():
    outcome = validate_nodes(
        [NodeTarget(1, "h100-01", "H100")],
        profile="quick",
        runner=local_runner(sizes=["gemm=256", "allreduce=1M"]),
    )
    assert not outcome.cluster_accepted
    assert not outcome.nodes[0].accepted and outcome.nodes[0].reasons


def _measure_in_daemon(queue):
    from provisioning.validation.interface import local_cluster_measurement

    try:
        queue.put(("ok", local_cluster_measurement().metrics))
    except Exception as exc:  # reported to the test
        queue.put(("error", repr(exc)))


def test_the_cluster_check_runs_inside_a_daemonic_worker_process():
    """Celery's prefork children are daemonic and may not start processes themselves: the
    cluster all-reduce must still run there (the embedded default's worker)."""
    import multiprocessing

    queue = multiprocessing.Queue()
    child = multiprocessing.Process(target=_measure_in_daemon, args=(queue,), daemon=True)
    child.start()
    status, value = queue.get(timeout=120)
    child.join(10)
    assert status == "ok", value
    assert value["cluster_allreduce_ring_busbw_gbps"] > 0
    assert value["allreduce_throughput_scaling"] > 0
