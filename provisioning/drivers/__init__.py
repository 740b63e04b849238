"""Hardware drivers for provisioning: the interface and errors (``base``), the Redfish
driver on sushy (``redfish``, imported on its own so only it loads sushy), the simulated
driver (``simulated``) and fabric isolation (``fabric``). No Django in here."""

from provisioning.drivers.base import (
    BmcAuthFailed,
    BmcTarget,
    BmcTimeout,
    BmcUnreachable,
    CredentialsUnavailable,
    DriverError,
    HardwareDriver,
    HardwareInventory,
    ImageProfileSpec,
    InBandChannel,
    SystemNotFound,
    TransientDriverError,
    UnsupportedOperation,
    resolve_secret,
)
from provisioning.drivers.fabric import (
    FabricKey,
    FabricManager,
    FabricPoolExhausted,
    SimulatedFabricManager,
)
from provisioning.drivers.simulated import SimulatedDriver, SimulatedFailure, SimulatedTimings

__all__ = [
    "BmcAuthFailed",
    "BmcTarget",
    "BmcTimeout",
    "BmcUnreachable",
    "CredentialsUnavailable",
    "DriverError",
    "FabricKey",
    "FabricManager",
    "FabricPoolExhausted",
    "HardwareDriver",
    "HardwareInventory",
    "ImageProfileSpec",
    "InBandChannel",
    "SimulatedDriver",
    "SimulatedFabricManager",
    "SimulatedFailure",
    "SimulatedTimings",
    "SystemNotFound",
    "TransientDriverError",
    "UnsupportedOperation",
    "resolve_secret",
]
