"""A node driven through its BMC's Redfish API, with OpenStack's ``sushy``.

This is the only module in the project that imports sushy. Everything sushy raises is
translated into the driver errors of ``base.py``:

- no connection (refused, no route, connect timeout, TLS) → ``BmcUnreachable``;
  a connection reset or a read timeout mid-request → ``TransientDriverError``;
- HTTP 401/403 → ``BmcAuthFailed``; 404 on the system → ``SystemNotFound``;
- HTTP 501, a missing action or resource link → ``UnsupportedOperation``;
- any other 5xx → ``TransientDriverError`` (sushy has already retried GETs);
- anything else → ``DriverError`` with the BMC's own message.

Messages name the BMC's URL (without any userinfo), the system and the operation; they
never contain the password.

What Redfish can and cannot do out of band:

- power, one-time boot override and virtual media are plain Redfish;
- ``install_image`` boots the installer image by virtual media: it returns once the
  node is running the installer; the unattended install completes in-band;
- ``secure_erase`` does the out-of-band half of cleaning the way Ironic does it: insert
  the cleaning image (``cleaning_image_url``), boot it once from virtual CD, let it wipe
  the disks in-band, power off, eject. The wipe itself and its report come from the
  cleaning image; given an ``in_band`` channel the driver waits for that report
  (``wait_erase_complete``), otherwise it waits ``erase_wait_s`` and cannot confirm it;
- ``inject_access`` and ``ping_os`` need the node's OS: without an ``in_band`` channel
  they raise ``UnsupportedOperation``.
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections.abc import Iterator, Sequence
from typing import Any

import sushy
from requests import exceptions as req_exc
from sushy import auth as sushy_auth
from sushy import exceptions as sushy_exc

from provisioning.drivers.base import (
    BmcAuthFailed,
    BmcTarget,
    BmcUnreachable,
    DriverError,
    HardwareDriver,
    HardwareInventory,
    ImageProfileSpec,
    InBandChannel,
    PowerState,
    SystemNotFound,
    TransientDriverError,
    UnsupportedOperation,
    check_boot_device,
)

_BOOT_SOURCES = {
    "pxe": sushy.BootSource.PXE,
    "cd": sushy.BootSource.CD,
    "hdd": sushy.BootSource.HDD,
}
_POWER_STATES: dict[Any, PowerState] = {
    sushy.PowerState.ON: "on",
    sushy.PowerState.OFF: "off",
    sushy.PowerState.POWERING_ON: "powering_on",
    sushy.PowerState.POWERING_OFF: "powering_off",
}
_CD_MEDIA = {sushy.VirtualMediaType.CD, sushy.VirtualMediaType.DVD}


class _NoAuth(sushy_auth.AuthBase):
    """For BMCs without authentication (the emulator's default): send no header."""

    def _do_authenticate(self) -> None:
        return None

    def can_refresh_session(self) -> bool:
        return False


def display_url(url: str) -> str:
    """The URL without userinfo, for messages."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


class RedfishDriver(HardwareDriver):
    """One ComputerSystem on one BMC. Connects on first use and keeps the connection."""

    def __init__(
        self,
        target: BmcTarget,
        *,
        cleaning_image_url: str | None = None,
        in_band: InBandChannel | None = None,
        connect_timeout_s: float = 5.0,
        read_timeout_s: int = 30,
        retries: int = 3,
        retry_delay_s: float = 1.0,
        power_timeout_s: float = 300.0,
        poll_s: float = 2.0,
        erase_wait_s: float = 0.0,
        erase_timeout_s: float = 4 * 3600.0,
    ) -> None:
        if retries < 1:
            raise ValueError("retries counts attempts: at least 1")
        self.target = target
        self.cleaning_image_url = cleaning_image_url
        self.in_band = in_band
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s
        self.retries = retries
        # sushy reads 0 as "use the default" (2-3 s): keep a tiny positive delay instead.
        self.retry_delay_s = max(retry_delay_s, 0.01)
        self.power_timeout_s = power_timeout_s
        self.poll_s = poll_s
        self.erase_wait_s = erase_wait_s
        self.erase_timeout_s = erase_timeout_s
        base = target.url.rstrip("/")
        base = base.removesuffix("/redfish/v1")
        self._base_url = base
        self._url = display_url(base)
        sid = target.system_id
        self._system_path = sid if sid.startswith("/") else f"/redfish/v1/Systems/{sid}"
        self._root: sushy.Sushy | None = None
        self._system_obj: Any = None

    def __repr__(self) -> str:
        return f"RedfishDriver({self.target!r})"

    @property
    def name(self) -> str:
        return f"system {self.target.system_id} at {self._url}"

    # -- errors ----------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        password = self.target.password
        if password:
            text = text.replace(password, "***")
        return text

    @staticmethod
    def _connection_reason(exc: BaseException) -> tuple[bool, str]:
        """(transient?, short reason) for a sushy ConnectionError."""
        cause = exc.__cause__ or exc.__context__
        text = str(cause or exc)
        if isinstance(cause, req_exc.SSLError):
            return False, "TLS handshake or certificate failed"
        if isinstance(cause, req_exc.ConnectTimeout):
            return False, "connection timed out"
        if isinstance(cause, req_exc.ReadTimeout):
            return True, "the BMC did not answer in time"
        if isinstance(cause, req_exc.ChunkedEncodingError):
            return True, "the connection broke mid-answer"
        lowered = text.lower()
        if "connection refused" in lowered:
            return False, "connection refused"
        if "name or service not known" in lowered or "nameresolution" in lowered:
            return False, "host name does not resolve"
        if "no route to host" in lowered or "network is unreachable" in lowered:
            return False, "no route to host"
        if "reset by peer" in lowered or "connection aborted" in lowered:
            return True, "connection reset"
        if "remotedisconnected" in lowered:
            return True, "the BMC closed the connection"
        return False, type(cause or exc).__name__

    @contextlib.contextmanager
    def _calls(self, action: str, *, finding_system: bool = False) -> Iterator[None]:
        """Translate sushy's exceptions raised while doing ``action``."""
        where = f"BMC {self._url}"
        try:
            yield
        except DriverError:
            raise
        except sushy_exc.ConnectionError as exc:
            transient, reason = self._connection_reason(exc)
            if transient:
                raise TransientDriverError(f"{where}: {reason} while {action}") from exc
            raise BmcUnreachable(f"cannot reach {where}: {reason} (while {action})") from exc
        except sushy_exc.AccessError as exc:
            user = self.target.username or "(none)"
            raise BmcAuthFailed(
                f"{where} refused the credentials of user {user!r} "
                f"(HTTP {exc.status_code}) while {action}"
            ) from exc
        except sushy_exc.ResourceNotFoundError as exc:
            if finding_system:
                raise SystemNotFound(
                    f"{where} has no system {self.target.system_id!r} (HTTP 404); "
                    "check the node's BMC system id"
                ) from exc
            raise UnsupportedOperation(
                f"{where} has no resource for {action} on system "
                f"{self.target.system_id!r} (HTTP 404)"
            ) from exc
        except sushy_exc.HTTPError as exc:
            detail = self._scrub(exc.detail or "no detail")
            code = exc.status_code
            if code == 501:
                raise UnsupportedOperation(
                    f"{where} does not implement {action} (HTTP 501): {detail}"
                ) from exc
            if code is not None and code >= 500:
                raise TransientDriverError(
                    f"{where} answered HTTP {code} while {action}: {detail}"
                ) from exc
            raise DriverError(f"{where} rejected {action} (HTTP {code}): {detail}") from exc
        except (sushy_exc.MissingActionError, sushy_exc.MissingAttributeError) as exc:
            raise UnsupportedOperation(
                f"{where} does not offer {action} for system {self.target.system_id!r}"
            ) from exc
        except sushy_exc.InvalidParameterValueError as exc:
            raise UnsupportedOperation(
                f"{where} does not accept {action}: {self._scrub(exc.message or '')}"
            ) from exc
        except sushy_exc.SushyError as exc:
            raise DriverError(
                f"{where}: {action} failed: {self._scrub(str(exc.message or exc))}"
            ) from exc

    # -- connection ------------------------------------------------------------------------

    def _connect(self) -> sushy.Sushy:
        if self._root is None:
            t = self.target
            auth: sushy_auth.AuthBase = (
                sushy_auth.SessionOrBasicAuth(username=t.username, password=t.password)
                if t.username
                else _NoAuth()
            )
            with self._calls("connecting"):
                self._root = sushy.Sushy(
                    self._base_url,
                    auth=auth,
                    verify=t.verify_tls,
                    server_side_retries=self.retries,
                    server_side_retries_delay=self.retry_delay_s,
                    read_timeout=self.read_timeout_s,
                    connect_timeout=self.connect_timeout_s,
                )
        return self._root

    def _system(self, *, refresh: bool = False) -> Any:
        if self._system_obj is None:
            root = self._connect()
            with self._calls("looking up the system", finding_system=True):
                self._system_obj = root.get_system(self._system_path)
        elif refresh:
            with self._calls("reading the system", finding_system=True):
                self._system_obj.refresh(force=True)
        return self._system_obj

    # -- power -----------------------------------------------------------------------------

    def power_state(self) -> PowerState:
        system = self._system(refresh=True)
        state = _POWER_STATES.get(system.power_state)
        if state is None:
            raise DriverError(f"{self.name} reports an unusable power state {system.power_state!r}")
        return state

    def _reset_system(self, reset_type: Any, action: str) -> None:
        system = self._system()
        with self._calls(action):
            system.reset_system(reset_type)

    def power_on(self) -> None:
        if self.power_state() == "on":
            return
        self._reset_system(sushy.ResetType.ON, "powering on")

    def power_off(self) -> None:
        if self.power_state() == "off":
            return
        self._reset_system(sushy.ResetType.FORCE_OFF, "powering off")

    def reset(self) -> None:
        """Force a restart; a node that is off is powered on instead."""
        if self.power_state() == "off":
            self._reset_system(sushy.ResetType.ON, "powering on")
        else:
            self._reset_system(sushy.ResetType.FORCE_RESTART, "restarting")

    def _power_up_and_wait(self) -> None:
        """Boot the node now (restart if running) and wait until it reads "on"."""
        self.reset()
        self.wait_power_state("on", timeout_s=self.power_timeout_s, poll_s=self.poll_s)

    def _power_down_and_wait(self) -> None:
        self.power_off()
        self.wait_power_state("off", timeout_s=self.power_timeout_s, poll_s=self.poll_s)

    # -- boot and media --------------------------------------------------------------------

    def set_one_time_boot(self, device: str) -> None:
        """Ask for a one-time override to ``device``; the BMC must then report that
        target. Its frequency is taken as reported: some BMCs (and the emulator) read
        "Once" back as "Continuous"."""
        source = _BOOT_SOURCES[check_boot_device(device)]
        system = self._system()
        action = f"setting the one-time boot device to {device}"
        with self._calls(action):
            system.set_system_boot_options(
                target=source, enabled=sushy.BootSourceOverrideEnabled.ONCE
            )
        target, _enabled = self.boot_override()
        if target != device:
            raise DriverError(f"{self.name} reports boot target {target!r} after {action}")

    def boot_override(self) -> tuple[str | None, str | None]:
        """(target, frequency) as the BMC reports them now, e.g. ("pxe", "once")."""
        system = self._system(refresh=True)
        boot = system.boot
        target = boot.target.value.lower() if boot and boot.target else None
        enabled = boot.enabled.value.lower() if boot and boot.enabled else None
        return target, enabled

    def _cd_device(self) -> Any:
        """The virtual CD/DVD device: the system's own VirtualMedia collection, else its
        managers' (newer BMCs put it on the system, older ones on the manager)."""
        system = self._system()
        collections: list[Any] = []
        with self._calls("finding the virtual media devices"):
            if system.json.get("VirtualMedia"):
                collections.append(system.virtual_media)
            else:
                collections.extend(m.virtual_media for m in system.managers)
            for collection in collections:
                for device in collection.get_members():
                    if _CD_MEDIA & set(device.media_types or ()):
                        return device
        raise UnsupportedOperation(
            f"{self.name} has no virtual CD/DVD device to insert an image into"
        )

    def virtual_media_image(self) -> str | None:
        """The image URL in the virtual CD now, or None."""
        device = self._cd_device()
        with self._calls("reading the virtual media"):
            device.refresh(force=True)
        return device.image if device.inserted and device.image else None

    def insert_virtual_media(self, image_url: str) -> None:
        device = self._cd_device()
        with self._calls(f"inserting virtual media {image_url}"):
            if device.inserted and device.image == image_url:
                return
            if device.inserted:
                device.eject_media()
            device.insert_media(image_url, inserted=True, write_protected=True)

    def eject_virtual_media(self) -> None:
        device = self._cd_device()
        with self._calls("ejecting virtual media"):
            if device.inserted:
                device.eject_media()

    # -- facts -----------------------------------------------------------------------------

    def inventory(self) -> HardwareInventory:
        system = self._system(refresh=True)
        summary = system.json.get("ProcessorSummary") or {}
        memory = system.json.get("MemorySummary") or {}
        cpu_model = summary.get("Model")
        cpu_count = summary.get("Count")
        gpus: list[str] = []
        cpu_models: list[str] = []
        with self._calls("reading the processors"), self._not_reported():
            for proc in system.processors.get_members():
                if proc.processor_type == sushy.ProcessorType.GPU:
                    gpus.append(proc.model or proc.manufacturer or "GPU")
                elif proc.processor_type in (None, sushy.ProcessorType.CPU):
                    cpu_models.append(proc.model or "")
        macs: list[str] = []
        with self._calls("reading the network interfaces"), self._not_reported():
            for nic in system.ethernet_interfaces.get_members():
                if nic.mac_address:
                    macs.append(nic.mac_address.lower())
        memory_gib = memory.get("TotalSystemMemoryGiB")
        return HardwareInventory(
            manufacturer=system.manufacturer,
            model=system.model,
            serial=system.serial_number,
            system_uuid=system.uuid,
            cpu_model=cpu_model or next((m for m in cpu_models if m), None),
            cpu_count=cpu_count if cpu_count is not None else (len(cpu_models) or None),
            memory_gib=float(memory_gib) if memory_gib is not None else None,
            gpus=tuple(gpus),
            nic_macs=tuple(sorted(macs)),
        )

    @staticmethod
    @contextlib.contextmanager
    def _not_reported() -> Iterator[None]:
        """A sub-resource the BMC doesn't link or doesn't implement is "not reported"."""
        try:
            yield
        except sushy_exc.MissingAttributeError:
            return
        except sushy_exc.HTTPError as exc:
            if exc.status_code in (404, 501):
                return
            raise

    # -- cleaning --------------------------------------------------------------------------

    def secure_erase(self) -> None:
        """The out-of-band half of Redfish cleaning (see the module's docstring): boot the
        cleaning image once from virtual CD, wait for the in-band wipe, power off, eject."""
        if not self.cleaning_image_url:
            raise UnsupportedOperation(
                f"secure erase on {self.name} needs a cleaning image: "
                "configure cleaning_image_url (the ramdisk that wipes the disks in-band)"
            )
        self._power_down_and_wait()
        self.insert_virtual_media(self.cleaning_image_url)
        try:
            self.set_one_time_boot("cd")
            self._power_up_and_wait()
            if self.in_band is not None:
                self.in_band.wait_erase_complete(timeout_s=self.erase_timeout_s)
            elif self.erase_wait_s > 0:
                self._sleep(self.erase_wait_s)
            self._power_down_and_wait()
        except DriverError:
            with contextlib.suppress(DriverError):
                self.eject_virtual_media()
            raise
        self.eject_virtual_media()

    def bios_reset(self) -> None:
        """Ask the BMC to reset BIOS settings to defaults (applied at the next boot)."""
        system = self._system()
        with self._calls("resetting the BIOS to defaults"):
            system.bios.reset_bios()

    # -- operating system ------------------------------------------------------------------

    def install_image(self, profile: ImageProfileSpec) -> None:
        """Boot the installer image of ``profile`` by virtual media. Returns once the node
        runs the installer; the unattended install itself completes in-band."""
        self.insert_virtual_media(profile.image_url)
        self.set_one_time_boot("cd")
        self._power_up_and_wait()

    def boot_os(self) -> None:
        """Eject any media and boot the installed OS from disk."""
        self.eject_virtual_media()
        self.set_one_time_boot("hdd")
        self._power_up_and_wait()

    def _require_in_band(self, what: str) -> InBandChannel:
        if self.in_band is None:
            raise UnsupportedOperation(
                f"{what} on {self.name} needs in-band access to the node's OS, which "
                "Redfish does not give: configure an in-band channel (e.g. SSH through "
                "the provisioning network) for this driver"
            )
        return self.in_band

    def inject_access(self, *, ssh_public_keys: Sequence[str], username: str = "root") -> None:
        self._require_in_band("injecting SSH keys").inject_access(
            ssh_public_keys=ssh_public_keys, username=username
        )

    def ping_os(self) -> bool:
        return self._require_in_band("pinging the OS").ping()
