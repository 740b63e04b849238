"""The hardware-driver interface that provisioning talks to, its data and its errors.

Pure Python: no Django, no sushy. A driver controls one node (one BMC system). The
Redfish driver (``redfish.py``) talks to a real BMC through sushy; the simulated driver
(``simulated.py``) plays the same operations with realistic durations for demos, ``make
run`` and benchmarks.

Errors carry a human-readable message that never contains credentials. Callers retry
``TransientDriverError`` only (5xx answers, connections reset mid-request); every other
``DriverError`` is a fact about the node or its configuration that a retry won't change.
"""

from __future__ import annotations

import abc
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

PowerState = Literal["on", "off", "powering_on", "powering_off"]
"""What ``power_state()`` answers. The two transitional states appear only while a BMC
reports them; ``wait_power_state`` waits for "on" or "off"."""

BootDevice = Literal["pxe", "cd", "hdd"]
BOOT_DEVICES: tuple[BootDevice, ...] = ("pxe", "cd", "hdd")
STABLE_POWER_STATES: tuple[str, ...] = ("on", "off")


# --- errors -------------------------------------------------------------------------------


class DriverError(Exception):
    """Base of every driver error. ``message`` is for people (logs, the admin, the run's
    event log); it never contains a password."""

    retryable: bool = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class BmcUnreachable(DriverError):
    """No connection to the BMC (refused, no route, connect timeout, TLS failure)."""


class BmcAuthFailed(DriverError):
    """The BMC refused the credentials (HTTP 401/403)."""


class BmcTimeout(DriverError):
    """A power state was not reached within its timeout."""

    def __init__(
        self,
        *,
        state: str,
        timeout_s: float,
        last_state: str | None = None,
        where: str = "",
    ) -> None:
        self.state = state
        self.timeout_s = timeout_s
        self.last_state = last_state
        place = f" on {where}" if where else ""
        last = f" (last reported: {last_state})" if last_state else ""
        super().__init__(f"power state {state!r} not reached{place} within {timeout_s:g} s{last}")


class SystemNotFound(DriverError):
    """The BMC answers but has no system with the configured id."""


class TransientDriverError(DriverError):
    """A 5xx answer or a connection reset mid-request: the caller retries these."""

    retryable = True


class UnsupportedOperation(DriverError):
    """The BMC (or this driver without its in-band channel) cannot do this operation."""


class CredentialsUnavailable(DriverError):
    """A credential reference (``env:NAME``, ``file:/path``) could not be resolved."""


# --- data ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class HardwareInventory:
    """What the BMC reports about a system. ``None`` where the BMC doesn't say."""

    manufacturer: str | None = None
    model: str | None = None
    serial: str | None = None
    system_uuid: str | None = None
    cpu_model: str | None = None
    cpu_count: int | None = None
    memory_gib: float | None = None
    gpus: tuple[str, ...] = ()
    """GPU models, one entry per GPU, where the BMC lists GPUs as processors."""
    nic_macs: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImageProfileSpec:
    """The OS image to install: a name for people and the installer image's URL."""

    name: str
    image_url: str
    sha256: str | None = None


def resolve_secret(reference: str, *, environ: Mapping[str, str] | None = None) -> str:
    """Resolve a stored credential reference to the secret it names.

    ``env:NAME`` reads the environment variable NAME; ``file:/path`` reads a file (a
    mounted secret) without its trailing newline. The database stores the reference,
    never the secret. The error message names the reference, never a value.
    """
    scheme, sep, rest = reference.partition(":")
    if not sep or not rest:
        raise CredentialsUnavailable(
            "credential reference must look like 'env:NAME' or 'file:/path'"
        )
    if scheme == "env":
        env = os.environ if environ is None else environ
        value = env.get(rest)
        if not value:
            raise CredentialsUnavailable(
                f"credential reference env:{rest}: the environment variable {rest} is not set"
            )
        return value
    if scheme == "file":
        try:
            value = Path(rest).read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            raise CredentialsUnavailable(
                f"credential reference file:{rest}: cannot read the file ({exc.strerror})"
            ) from None
        if not value:
            raise CredentialsUnavailable(f"credential reference file:{rest}: the file is empty")
        return value
    raise CredentialsUnavailable(
        f"unknown credential reference scheme {scheme!r}: use 'env:NAME' or 'file:/path'"
    )


@dataclass(frozen=True)
class BmcTarget:
    """Where a node's BMC is and how to log in. ``repr`` never shows the password."""

    url: str
    system_id: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    verify_tls: bool | str = True

    def __repr__(self) -> str:
        shown = "'***'" if self.password else "None"
        return (
            f"BmcTarget(url={self.url!r}, system_id={self.system_id!r}, "
            f"username={self.username!r}, password={shown}, verify_tls={self.verify_tls!r})"
        )

    __str__ = __repr__

    @classmethod
    def from_reference(
        cls,
        *,
        url: str,
        system_id: str,
        username: str | None,
        password_ref: str | None,
        verify_tls: bool | str = True,
        environ: Mapping[str, str] | None = None,
    ) -> BmcTarget:
        """Build a target whose password comes from a reference (see ``resolve_secret``)."""
        password = resolve_secret(password_ref, environ=environ) if password_ref else None
        return cls(
            url=url,
            system_id=system_id,
            username=username,
            password=password,
            verify_tls=verify_tls,
        )


@runtime_checkable
class InBandChannel(Protocol):
    """Work that needs the node's own OS (or the installer/cleaning ramdisk): SSH key
    injection, liveness, the wipe report. The Redfish driver delegates to one if given."""

    def inject_access(self, *, ssh_public_keys: Sequence[str], username: str) -> None: ...

    def ping(self) -> bool: ...

    def wait_erase_complete(self, *, timeout_s: float) -> None: ...


# --- the interface ------------------------------------------------------------------------


class HardwareDriver(abc.ABC):
    """One node's hardware, whatever drives it.

    Operations ask for a state and return; ``wait_power_state`` waits for the BMC to get
    there. Every method raises only ``DriverError`` subclasses.
    """

    _sleep: Callable[[float], None] = staticmethod(time.sleep)
    _monotonic: Callable[[], float] = staticmethod(time.monotonic)

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """A label for messages: the node's hostname or BMC system."""

    # power
    @abc.abstractmethod
    def power_state(self) -> PowerState: ...

    @abc.abstractmethod
    def power_on(self) -> None: ...

    @abc.abstractmethod
    def power_off(self) -> None: ...

    @abc.abstractmethod
    def reset(self) -> None: ...

    def wait_power_state(
        self, state: str, *, timeout_s: float = 300.0, poll_s: float = 2.0
    ) -> None:
        """Poll ``power_state()`` until it reads ``state`` ("on"/"off"), or raise
        ``BmcTimeout`` saying which state and how long. A transient error while polling
        is tolerated until the deadline."""
        if state not in STABLE_POWER_STATES:
            raise ValueError(f"state must be 'on' or 'off', not {state!r}")
        deadline = self._monotonic() + timeout_s
        last: str | None = None
        while True:
            try:
                last = self.power_state()
            except TransientDriverError:
                last = last or "unknown (BMC answered with a transient error)"
            if last == state:
                return
            remaining = deadline - self._monotonic()
            if remaining <= 0:
                raise BmcTimeout(state=state, timeout_s=timeout_s, last_state=last, where=self.name)
            self._sleep(max(0.0, min(poll_s, remaining)))

    # boot and media
    @abc.abstractmethod
    def set_one_time_boot(self, device: str) -> None:
        """Boot once from "pxe", "cd" or "hdd" on the next power-on or reset."""

    @abc.abstractmethod
    def insert_virtual_media(self, image_url: str) -> None: ...

    @abc.abstractmethod
    def eject_virtual_media(self) -> None: ...

    # facts
    @abc.abstractmethod
    def inventory(self) -> HardwareInventory: ...

    # cleaning
    @abc.abstractmethod
    def secure_erase(self) -> None: ...

    @abc.abstractmethod
    def bios_reset(self) -> None: ...

    # operating system
    @abc.abstractmethod
    def install_image(self, profile: ImageProfileSpec) -> None: ...

    @abc.abstractmethod
    def inject_access(self, *, ssh_public_keys: Sequence[str], username: str = "root") -> None:
        """Install the customer's SSH public keys for ``username`` on the installed OS."""

    @abc.abstractmethod
    def boot_os(self) -> None:
        """Boot the installed OS from disk."""

    @abc.abstractmethod
    def ping_os(self) -> bool:
        """True when the installed OS answers."""

    def host_keys(self) -> list[str]:
        """The installed OS's SSH host public keys as OpenSSH lines ("ssh-ed25519 AAAA…"),
        where the driver can read them; empty otherwise (operations' known_hosts file,
        checked against the BMC console when a node is racked, is then the source)."""
        return []


def check_boot_device(device: str) -> BootDevice:
    """The device if it is one of "pxe", "cd", "hdd"; otherwise ``UnsupportedOperation``."""
    if device not in BOOT_DEVICES:
        raise UnsupportedOperation(
            f"boot device {device!r} is not supported: use one of {', '.join(BOOT_DEVICES)}"
        )
    return device
