"""The pure driver layer: the simulated node (timings, time scale, failure injection,
determinism), fabric key allocation, and the interface's shared pieces. No database."""

import pytest

from provisioning.drivers.base import (
    BmcTarget,
    BmcTimeout,
    CredentialsUnavailable,
    DriverError,
    HardwareDriver,
    ImageProfileSpec,
    TransientDriverError,
    UnsupportedOperation,
    resolve_secret,
)
from provisioning.drivers.fabric import (
    FabricKey,
    FabricPoolExhausted,
    KeyKind,
    SimulatedFabricManager,
    key_kind_for,
)
from provisioning.drivers.simulated import (
    OPERATIONS,
    SimulatedDriver,
    SimulatedFailure,
    SimulatedTimings,
)

UBUNTU = ImageProfileSpec(name="ubuntu-22.04-cuda-12.4", image_url="http://images/ubuntu.iso")
KEYS = ["ssh-ed25519 AAAAC3Nza... alice@example.com"]


def provision(driver: SimulatedDriver) -> None:
    """The per-node sequence a provisioning run drives."""
    driver.power_on()
    driver.wait_power_state("on")
    driver.install_image(UBUNTU)
    driver.inject_access(ssh_public_keys=KEYS, username="ubuntu")
    driver.boot_os()


class SleepRecorder:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


# --- timings and time scale ---------------------------------------------------------------


def test_default_timings_are_realistic():
    t = SimulatedTimings()
    assert t.seconds("power_on") == 180  # POST of a GPU server
    assert t.seconds("power_off") == 20
    assert t.seconds("install_image") == 15 * 60
    assert t.seconds("inject_access") == 60
    assert t.seconds("boot_os") == 3 * 60
    assert t.seconds("secure_erase") == 20 * 60
    assert t.seconds("bios_reset") == 2 * 60
    assert set(OPERATIONS) <= {f for f in vars(t)}
    with pytest.raises(ValueError, match="unknown operation"):
        t.seconds("format_c")


def test_simulated_seconds_sum_the_steps_and_nothing_sleeps_at_scale_zero():
    sleep = SleepRecorder()
    node = SimulatedDriver(hostname="node-01", sleep=sleep)
    provision(node)
    assert [s.operation for s in node.steps] == [
        "power_on",
        "install_image",
        "inject_access",
        "boot_os",
    ]
    assert node.simulated_seconds == 180 + 900 + 60 + 180
    assert node.last_step.operation == "boot_os"
    assert sleep.calls == []
    assert node.ping_os() is True


def test_time_scale_shrinks_real_sleeps_but_not_simulated_seconds():
    sleep = SleepRecorder()
    node = SimulatedDriver(hostname="node-01", time_scale=0.001, sleep=sleep)
    node.power_on()
    node.install_image(UBUNTU)
    assert sleep.calls == pytest.approx([0.18, 0.9])  # a 15-minute install sleeps 0.9 s
    assert node.simulated_seconds == 1080


def test_time_scale_really_sleeps():
    import time

    node = SimulatedDriver(hostname="node-01", time_scale=0.0001)
    started = time.monotonic()
    node.install_image(UBUNTU)  # 900 s × 0.0001 = 90 ms
    # A real sleep never ends early (how much later it ends depends on the machine's load:
    # the scaled length itself is pinned with a recorder above).
    assert time.monotonic() - started >= 0.09


def test_custom_and_scaled_timings():
    fast = SimulatedTimings(install_image=60).scaled(0.5)
    assert fast.install_image == 30
    assert fast.power_on == 90
    node = SimulatedDriver(hostname="n", timings=fast)
    node.install_image(UBUNTU)
    assert node.simulated_seconds == 30
    with pytest.raises(ValueError):
        SimulatedDriver(hostname="n", time_scale=-1)


# --- state ----------------------------------------------------------------------------------


def test_power_state_and_wait():
    node = SimulatedDriver(hostname="node-01")
    assert node.power_state() == "off"
    node.power_off()  # already off: no time
    assert node.simulated_seconds == 0
    node.power_on()
    node.wait_power_state("on", timeout_s=30)
    assert node.power_state() == "on"
    node.reset()
    assert node.power_state() == "on"
    node.power_off()
    node.wait_power_state("off")
    with pytest.raises(BmcTimeout) as caught:
        node.wait_power_state("on", timeout_s=30)
    assert "'on'" in caught.value.message and "30 s" in caught.value.message
    assert "node-01" in caught.value.message
    assert node.steps[-1].operation == "wait_power_state" and node.steps[-1].failed
    with pytest.raises(ValueError):
        node.wait_power_state("sideways")


def test_os_rules_boot_media_and_cleaning():
    node = SimulatedDriver(hostname="node-01")
    with pytest.raises(DriverError, match="no OS is installed"):
        node.boot_os()
    with pytest.raises(DriverError, match="no OS is installed"):
        node.inject_access(ssh_public_keys=KEYS)
    node.set_one_time_boot("cd")
    assert node.boot_override == "cd"
    with pytest.raises(UnsupportedOperation, match="floppy"):
        node.set_one_time_boot("floppy")
    node.insert_virtual_media("http://images/ubuntu.iso")
    assert node.media_url == "http://images/ubuntu.iso"
    node.eject_virtual_media()
    assert node.media_url is None
    provision(node)
    assert node.installed_image == UBUNTU.name
    assert node.authorized_keys == {"ubuntu": tuple(KEYS)}
    assert node.ping_os() is True
    node.power_off()
    assert node.ping_os() is False
    node.secure_erase()
    node.bios_reset()
    assert node.installed_image is None and node.authorized_keys == {}
    assert node.power_state() == "off"
    inv = node.inventory()
    assert inv.serial == "SIM-node-01"


# --- failure injection ----------------------------------------------------------------------


def test_a_hostname_always_fails_a_given_operation():
    fail = {"node-03": {"install_image"}}
    healthy = SimulatedDriver(hostname="node-01", fail=fail)
    broken = SimulatedDriver(hostname="node-03", fail=fail)
    provision(healthy)
    broken.power_on()
    for _ in range(3):
        with pytest.raises(SimulatedFailure) as caught:
            broken.install_image(UBUNTU)
        assert caught.value.hostname == "node-03"
        assert caught.value.operation == "install_image"
        assert "install_image" in str(caught.value) and "node-03" in str(caught.value)
    assert isinstance(caught.value, DriverError)
    assert not isinstance(caught.value, TransientDriverError)
    # a failed install still took its time, and left no OS behind
    assert broken.steps[-1].failed and broken.steps[-1].simulated_s == 900
    assert broken.installed_image is None
    assert broken.simulated_seconds == 180 + 3 * 900


def test_star_fails_every_operation_and_ping_reads_as_no_answer():
    node = SimulatedDriver(hostname="node-07", fail={"node-07": {"*"}})
    with pytest.raises(SimulatedFailure):
        node.power_on()
    assert node.ping_os() is False


def test_unknown_operation_names_are_rejected():
    with pytest.raises(ValueError, match="instal_image"):
        SimulatedDriver(hostname="n", fail={"n": {"instal_image"}})
    with pytest.raises(ValueError, match="unknown operations"):
        SimulatedDriver(hostname="n", failure_rate={"reboot": 0.5})
    with pytest.raises(ValueError, match="probabilities"):
        SimulatedDriver(hostname="n", failure_rate=1.5)


def outcomes(node: SimulatedDriver, n: int = 200) -> list[bool]:
    result = []
    for _ in range(n):
        try:
            node.set_one_time_boot("pxe")
        except SimulatedFailure:
            result.append(False)
        else:
            result.append(True)
    return result


def test_failure_rate_is_seeded_and_deterministic():
    first = outcomes(SimulatedDriver(hostname="node-01", failure_rate=0.2, seed=42))
    again = outcomes(SimulatedDriver(hostname="node-01", failure_rate=0.2, seed=42))
    other_seed = outcomes(SimulatedDriver(hostname="node-01", failure_rate=0.2, seed=43))
    other_node = outcomes(SimulatedDriver(hostname="node-02", failure_rate=0.2, seed=42))
    assert first == again
    assert first != other_seed
    assert first != other_node  # nodes of one run don't fail in lockstep
    failures = first.count(False)
    assert 20 <= failures <= 60  # about 20 % of 200


def test_failure_rate_edges_and_per_operation_rates():
    assert all(outcomes(SimulatedDriver(hostname="n", failure_rate=0.0)))
    assert not any(outcomes(SimulatedDriver(hostname="n", failure_rate=1.0), n=5))
    node = SimulatedDriver(hostname="n", failure_rate={"install_image": 1.0})
    node.power_on()
    node.set_one_time_boot("cd")
    with pytest.raises(SimulatedFailure, match="failure rate 1"):
        node.install_image(UBUNTU)


# --- fabric ---------------------------------------------------------------------------------


def test_infiniband_gets_a_partition_key_and_ethernet_a_vlan():
    fm = SimulatedFabricManager()
    ib = fm.allocate(order_ref="ORD-1", fabric_kind="ib_ndr400", node_hostnames=["a", "b"])
    hdr = fm.allocate(order_ref="ORD-2", fabric_kind="ib_hdr200", node_hostnames=["c"])
    roce = fm.allocate(order_ref="ORD-3", fabric_kind="roce_v2", node_hostnames=["d"])
    eth = fm.allocate(order_ref="ORD-4", fabric_kind="ethernet", node_hostnames=["e"])
    assert ib == FabricKey(KeyKind.PKEY, 0x0001)
    assert hdr == FabricKey(KeyKind.PKEY, 0x0002)
    assert roce == FabricKey(KeyKind.VLAN, 2)
    assert eth == FabricKey(KeyKind.VLAN, 3)
    assert str(ib) == "pkey 0x0001" and ib.full_membership_pkey == 0x8001
    assert str(roce) == "vlan 2"
    assert fm.allocations[ib].node_hostnames == ("a", "b")
    # safe to run twice
    again = fm.allocate(order_ref="ORD-1", fabric_kind="ib_ndr400", node_hostnames=["a", "b"])
    assert again == ib


def test_keys_in_use_are_skipped_and_released_keys_reused():
    in_use = [FabricKey(KeyKind.PKEY, 1), FabricKey(KeyKind.PKEY, 2), FabricKey(KeyKind.VLAN, 2)]
    fm = SimulatedFabricManager(in_use=in_use)
    key = fm.allocate(order_ref="ORD-9", fabric_kind="ib_ndr400", node_hostnames=["a"])
    assert key.value == 3
    assert fm.allocate(order_ref="ORD-9", fabric_kind="roce_v2", node_hostnames=["a"]).value == 3
    fm.release(FabricKey(KeyKind.PKEY, 1))
    assert fm.allocate(order_ref="ORD-10", fabric_kind="ib_hdr200", node_hostnames=["b"]).value == 1
    fm.release(FabricKey(KeyKind.PKEY, 0x7FFE))  # not held: nothing happens
    assert FabricKey(KeyKind.PKEY, 3) in fm.in_use


def test_exhausted_pool_says_so():
    fm = SimulatedFabricManager(pkey_range=(1, 2), vlan_range=(100, 100))
    fm.allocate(order_ref="A", fabric_kind="ib_ndr400", node_hostnames=["a"])
    fm.allocate(order_ref="B", fabric_kind="ib_ndr400", node_hostnames=["b"])
    with pytest.raises(FabricPoolExhausted) as caught:
        fm.allocate(order_ref="C", fabric_kind="ib_ndr400", node_hostnames=["c"])
    assert "partition key" in caught.value.message
    assert "order C" in caught.value.message
    assert "0x0001–0x0002" in caught.value.message
    fm.allocate(order_ref="D", fabric_kind="ethernet", node_hostnames=["d"])
    with pytest.raises(FabricPoolExhausted, match="VLAN id"):
        fm.allocate(order_ref="E", fabric_kind="roce_v2", node_hostnames=["e"])
    fm.release(FabricKey(KeyKind.PKEY, 2))
    assert fm.allocate(order_ref="C", fabric_kind="ib_ndr400", node_hostnames=["c"]).value == 2


def test_fabric_input_is_checked():
    assert key_kind_for("ib_ndr400") == KeyKind.PKEY
    assert key_kind_for("roce_v2") == KeyKind.VLAN
    with pytest.raises(ValueError, match="unknown fabric kind 'omnipath'"):
        key_kind_for("omnipath")
    fm = SimulatedFabricManager()
    with pytest.raises(ValueError, match="at least one node"):
        fm.allocate(order_ref="A", fabric_kind="ethernet", node_hostnames=[])
    bad = [(KeyKind.PKEY, 0), (KeyKind.PKEY, 0x7FFF), (KeyKind.VLAN, 1), (KeyKind.VLAN, 4095)]
    for kind, value in bad:
        with pytest.raises(ValueError):
            FabricKey(kind, value)
    FabricKey(KeyKind.PKEY, 0x7FFE)
    FabricKey(KeyKind.VLAN, 4094)
    with pytest.raises(ValueError):
        SimulatedFabricManager(vlan_range=(1, 10))


# --- the interface's shared pieces ----------------------------------------------------------


def test_bmc_target_hides_the_password():
    target = BmcTarget(url="https://bmc", system_id="1", username="admin", password="s3cret!")
    assert "s3cret!" not in repr(target)
    assert "s3cret!" not in str(target)
    assert "'***'" in repr(target)
    assert target.password == "s3cret!"


def test_credentials_resolve_from_references(tmp_path):
    env = {"BMC_PASSWORD_RACK1": "hunter2"}
    assert resolve_secret("env:BMC_PASSWORD_RACK1", environ=env) == "hunter2"
    secret_file = tmp_path / "bmc"
    secret_file.write_text("from-file\n")
    assert resolve_secret(f"file:{secret_file}") == "from-file"
    target = BmcTarget.from_reference(
        url="https://bmc", system_id="1", username="admin",
        password_ref="env:BMC_PASSWORD_RACK1", environ=env,
    )  # fmt: skip
    assert target.password == "hunter2"
    with pytest.raises(CredentialsUnavailable, match="BMC_MISSING is not set"):
        resolve_secret("env:BMC_MISSING", environ=env)
    with pytest.raises(CredentialsUnavailable, match="cannot read"):
        resolve_secret(f"file:{tmp_path / 'nope'}")
    with pytest.raises(CredentialsUnavailable, match="unknown credential reference scheme"):
        resolve_secret("vault:secret/bmc")
    with pytest.raises(CredentialsUnavailable):
        resolve_secret("hunter2")


class ScriptedPower(HardwareDriver):
    """The base class's polling, against a scripted sequence of readings and a fake clock."""

    def __init__(self, readings: list[object]) -> None:
        self.readings = readings
        self.now = 0.0
        self._monotonic = lambda: self.now
        self._sleep = self.advance

    def advance(self, seconds: float) -> None:
        self.now += seconds

    @property
    def name(self) -> str:
        return "scripted"

    def power_state(self):
        reading = self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]
        if isinstance(reading, Exception):
            raise reading
        return reading


for _method in ScriptedPower.__abstractmethods__ - {"name", "power_state"}:
    setattr(ScriptedPower, _method, lambda self, *a, **k: None)
ScriptedPower.__abstractmethods__ = frozenset()


def test_wait_power_state_polls_until_the_state_or_times_out():
    driver = ScriptedPower(["off", TransientDriverError("HTTP 503"), "powering_on", "on"])
    driver.wait_power_state("on", timeout_s=30, poll_s=2)
    assert driver.now == 6  # three polls missed
    stuck = ScriptedPower(["powering_off"])
    with pytest.raises(BmcTimeout) as caught:
        stuck.wait_power_state("off", timeout_s=10, poll_s=3)
    assert stuck.now == 10
    assert caught.value.state == "off" and caught.value.timeout_s == 10
    assert str(caught.value) == (
        "power state 'off' not reached on scripted within 10 s (last reported: powering_off)"
    )
