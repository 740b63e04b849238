"""A simulated node for demos, ``make run`` and benchmarks.

Each operation takes a simulated duration from ``SimulatedTimings`` (realistic
defaults: a 15-minute OS install, a 3-minute POST), sleeps that duration times
``time_scale`` (0.001 turns a 15-minute install into 0.9 s; 0 never sleeps) and records
it in ``steps``, so a benchmark can sum simulated hardware time with
``simulated_seconds``.

Failures are injected two ways: ``failure_rate`` (a probability per operation call, one
float for all or a mapping per operation) drawn from a seeded ``random.Random`` so runs
repeat exactly, and ``fail`` ({"node-03": {"install_image"}}, or {"node-03": {"*"}}) to
make a hostname always fail an operation. A failing operation still takes its simulated
time (an install fails at the end) and raises ``SimulatedFailure``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, fields, replace

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from provisioning.drivers.base import (
    BmcTimeout,
    DriverError,
    HardwareDriver,
    HardwareInventory,
    ImageProfileSpec,
    PowerState,
    check_boot_device,
)

OPERATIONS: tuple[str, ...] = (
    "power_on",
    "power_off",
    "reset",
    "set_one_time_boot",
    "insert_virtual_media",
    "eject_virtual_media",
    "inventory",
    "secure_erase",
    "bios_reset",
    "install_image",
    "inject_access",
    "boot_os",
    "ping_os",
)
ALL_OPERATIONS = "*"


@dataclass(frozen=True)
class SimulatedTimings:
    """Simulated seconds per operation; the defaults are what real servers take."""

    power_on: float = 180.0  # POST of a GPU server, power-on to boot loader
    power_off: float = 20.0
    reset: float = 200.0  # power off + POST
    set_one_time_boot: float = 1.0
    insert_virtual_media: float = 5.0
    eject_virtual_media: float = 2.0
    inventory: float = 2.0
    secure_erase: float = 1200.0  # boot the cleaning image, NVMe format, power off
    bios_reset: float = 120.0
    install_image: float = 900.0
    inject_access: float = 60.0
    boot_os: float = 180.0
    ping_os: float = 0.5

    def seconds(self, operation: str) -> float:
        """The simulated duration of ``operation``."""
        if operation not in OPERATIONS:
            raise ValueError(f"unknown operation {operation!r}")
        return float(getattr(self, operation))

    def scaled(self, factor: float) -> SimulatedTimings:
        """Every duration multiplied by ``factor`` (a faster or slower fleet)."""
        return replace(self, **{f.name: getattr(self, f.name) * factor for f in fields(self)})


@dataclass(frozen=True)
class SimulatedStep:
    operation: str
    simulated_s: float
    failed: bool = False


class SimulatedFailure(DriverError):
    """An injected failure (``failure_rate`` or ``fail``)."""

    def __init__(self, *, hostname: str, operation: str, reason: str) -> None:
        self.hostname = hostname
        self.operation = operation
        super().__init__(f"simulated failure of {operation} on {hostname} ({reason})")


class SimulatedDriver(HardwareDriver):
    """One simulated node; its state (power, boot override, media, OS) lives in memory."""

    def __init__(
        self,
        *,
        hostname: str,
        timings: SimulatedTimings | None = None,
        time_scale: float = 0.0,
        failure_rate: float | Mapping[str, float] = 0.0,
        fail: Mapping[str, Collection[str]] | None = None,
        seed: int | str = 0,
        rng: random.Random | None = None,
        inventory: HardwareInventory | None = None,
        power: PowerState = "off",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if time_scale < 0:
            raise ValueError("time_scale must be >= 0")
        rates = (
            dict.fromkeys(OPERATIONS, float(failure_rate))
            if isinstance(failure_rate, int | float)
            else {op: float(failure_rate.get(op, 0.0)) for op in OPERATIONS}
        )
        unknown = set(failure_rate) - set(OPERATIONS) if isinstance(failure_rate, Mapping) else ()
        if unknown:
            raise ValueError(f"unknown operations in failure_rate: {sorted(unknown)}")
        if any(not 0.0 <= r <= 1.0 for r in rates.values()):
            raise ValueError("failure rates are probabilities between 0 and 1")
        forced = set((fail or {}).get(hostname, ()))
        if forced - {*OPERATIONS, ALL_OPERATIONS}:
            raise ValueError(
                f"unknown operations in fail[{hostname!r}]: "
                f"{sorted(forced - {*OPERATIONS, ALL_OPERATIONS})}"
            )
        self.hostname = hostname
        self.timings = timings or SimulatedTimings()
        self.time_scale = time_scale
        self.failure_rates = rates
        self.forced_failures = frozenset(forced)
        # One stream per hostname by default: nodes of a run don't fail in lockstep, and
        # the same seed replays the same failures.
        self.rng = rng if rng is not None else random.Random(f"{seed}:{hostname}")
        self._sleep_real = sleep
        self._inventory = inventory or HardwareInventory(
            manufacturer="Simulated",
            model="SimNode",
            serial=f"SIM-{hostname}",
        )
        # state
        self.power: PowerState = power
        self.boot_override: str | None = None
        self.media_url: str | None = None
        self.installed_image: str | None = None
        self.authorized_keys: dict[str, tuple[str, ...]] = {}
        self._host_keys: list[str] = []
        self.os_running = False
        # what it took
        self.steps: list[SimulatedStep] = []

    # -- bookkeeping -----------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.hostname

    @property
    def simulated_seconds(self) -> float:
        """Total simulated hardware time of every operation so far."""
        return sum(s.simulated_s for s in self.steps)

    @property
    def last_step(self) -> SimulatedStep | None:
        return self.steps[-1] if self.steps else None

    def _spend(self, operation: str, simulated_s: float | None = None) -> None:
        """Take the operation's time, then fail it if injected."""
        seconds = self.timings.seconds(operation) if simulated_s is None else simulated_s
        rate = self.failure_rates[operation]
        drawn = self.rng.random() if rate > 0 else 1.0
        reason = None
        if operation in self.forced_failures or ALL_OPERATIONS in self.forced_failures:
            reason = "always fails on this node"
        elif drawn < rate:
            reason = f"failure rate {rate:g}"
        if self.time_scale > 0 and seconds > 0:
            self._sleep_real(seconds * self.time_scale)
        self.steps.append(SimulatedStep(operation, seconds, failed=reason is not None))
        if reason is not None:
            raise SimulatedFailure(hostname=self.hostname, operation=operation, reason=reason)

    # -- power -----------------------------------------------------------------------------

    def power_state(self) -> PowerState:
        return self.power

    def power_on(self) -> None:
        if self.power == "on":
            self._spend("power_on", 0.0)
            return
        self._spend("power_on")
        self.power = "on"
        self.os_running = False

    def power_off(self) -> None:
        if self.power == "off":
            self._spend("power_off", 0.0)
            return
        self._spend("power_off")
        self.power = "off"
        self.os_running = False

    def reset(self) -> None:
        self._spend("reset")
        self.power = "on"
        self.os_running = False

    def wait_power_state(
        self, state: str, *, timeout_s: float = 300.0, poll_s: float = 2.0
    ) -> None:
        """Simulated power changes complete within their operation, so the state is
        either there now or never: then the timeout passes (simulated) and it raises."""
        if state not in ("on", "off"):
            raise ValueError(f"state must be 'on' or 'off', not {state!r}")
        if self.power == state:
            return
        if self.time_scale > 0:
            self._sleep_real(timeout_s * self.time_scale)
        self.steps.append(SimulatedStep("wait_power_state", timeout_s, failed=True))
        raise BmcTimeout(state=state, timeout_s=timeout_s, last_state=self.power, where=self.name)

    # -- boot and media --------------------------------------------------------------------

    def set_one_time_boot(self, device: str) -> None:
        check_boot_device(device)
        self._spend("set_one_time_boot")
        self.boot_override = device

    def insert_virtual_media(self, image_url: str) -> None:
        self._spend("insert_virtual_media")
        self.media_url = image_url

    def eject_virtual_media(self) -> None:
        self._spend("eject_virtual_media")
        self.media_url = None

    def inventory(self) -> HardwareInventory:
        self._spend("inventory")
        return self._inventory

    # -- cleaning --------------------------------------------------------------------------

    def secure_erase(self) -> None:
        """Boot the cleaning image, wipe the disks, power off: the disks end empty."""
        self._spend("secure_erase")
        self.installed_image = None
        self.authorized_keys = {}
        self.os_running = False
        self.power = "off"
        self.boot_override = None
        self.media_url = None

    def bios_reset(self) -> None:
        self._spend("bios_reset")
        self.boot_override = None

    # -- operating system ------------------------------------------------------------------

    def install_image(self, profile: ImageProfileSpec) -> None:
        self._spend("install_image")
        self.installed_image = profile.name
        self.authorized_keys = {}
        self._host_keys = _new_host_keys()  # a fresh OS makes fresh host keys
        self.os_running = False
        self.power = "on"  # the installer ran on a powered node

    def host_keys(self) -> list[str]:
        """Real Ed25519 and ECDSA P-256 public keys, made when the OS was installed (or
        first asked for, when the state was rebuilt from a run's recorded steps)."""
        if self.installed_image is None:
            return []
        if not self._host_keys:
            self._host_keys = _new_host_keys()
        return list(self._host_keys)

    def inject_access(self, *, ssh_public_keys: Sequence[str], username: str = "root") -> None:
        if self.installed_image is None:
            raise DriverError(f"cannot inject access on {self.hostname}: no OS is installed")
        self._spend("inject_access")
        self.authorized_keys[username] = tuple(ssh_public_keys)

    def boot_os(self) -> None:
        if self.installed_image is None:
            raise DriverError(f"cannot boot the OS on {self.hostname}: no OS is installed")
        self._spend("boot_os")
        self.power = "on"
        self.os_running = True
        self.boot_override = None

    def ping_os(self) -> bool:
        """True when the installed OS is running; an injected failure reads as no answer."""
        try:
            self._spend("ping_os")
        except SimulatedFailure:
            return False
        return self.power == "on" and self.os_running


def _new_host_keys() -> list[str]:
    """One Ed25519 and one ECDSA P-256 host key, as an installed OS's sshd makes them."""
    keys: list[ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey] = [
        ed25519.Ed25519PrivateKey.generate(),
        ec.generate_private_key(ec.SECP256R1()),
    ]
    return [
        k.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
        for k in keys
    ]
