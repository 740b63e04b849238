"""Health rules as data (pure: no Django): a PromQL condition over the exporters' series,
how long it must hold, the action it calls for and where the rule comes from.

Each expression keeps the ``node`` label (set by the portal's service discovery) and, for
GPU rules, ``gpu``; its value is the evidence shown to the customer. ``{sel}`` is the
label selector of the nodes evaluated, ``{w}`` the rule's window (``window_scrapes``
scrape intervals; a rule with ``window_scrapes = 0`` acts on one sample, as a GPU that
fell off the bus is decisive), ``{step}`` the scrape interval.

Transient noise acts on nothing by construction: one correctable ECC error is under every
threshold, a scrape gap is one ``up == 0`` sample inside a window that must be all zeros,
a short utilisation dip is not a health signal at all (low utilisation is watched apart,
over ``PORTAL_LOW_UTIL_MINUTES``).

Sources:
- NVIDIA, "XID Errors" (https://docs.nvidia.com/deploy/xid-errors/), the catalogue's
  table of causes and the "Resolution/Action" bucket per XID; and NVIDIA, "GPU Memory
  Error Management" (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/) for row
  remapping (a failed remap: the GPU needs service).
- NVIDIA DCGM, "Field identifiers" (dcgm_fields.h) for the counters and the clock event
  reason bits (``DCGM_CLOCKS_EVENT_REASON_HW_SLOWDOWN`` 0x8, ``SW_THERMAL`` 0x20,
  ``HW_THERMAL`` 0x40).
- Linux ``Documentation/ABI/stable/sysfs-class-infiniband`` for ``link_downed`` and the
  port state (4 = ACTIVE); node_exporter's infiniband collector exports them.
- Prometheus' ``up`` series for a target that stops answering.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.i18n_hook import gettext_noop
from provisioning.telemetry import exposition as m

Action = Literal["notify", "revalidate", "replace"]


@dataclass(frozen=True)
class HealthRule:
    code: str
    title: str  # gettext_noop'd: translate where shown
    expr: str
    metric: str
    action: Action
    window_scrapes: int
    source: str

    def query(self, *, selector: str, scrape_s: float) -> str:
        scrape = max(int(scrape_s), 1)
        return self.expr.format(
            sel=selector,
            w=f"{scrape * max(self.window_scrapes, 1)}s",
            step=f"{scrape}s",
            r=f"{scrape * 4}s",
        )


S = "{{{sel}}}"  # where the node selector goes (a format template: braces doubled)


XID_CATALOGUE = "NVIDIA XID Errors catalogue, https://docs.nvidia.com/deploy/xid-errors/"

#: NVIDIA's XID classes: (XID, title, action, the catalogue's cause and resolution).
XID_CLASSES: tuple[tuple[int, str, Action, str], ...] = (
    (48, gettext_noop("XID 48: double-bit ECC error"), "revalidate",
     "double bit ECC error; reset the GPU, service it if it recurs"),
    (63, gettext_noop("XID 63: ECC page retirement or row remap recorded"), "notify",
     "row-remapping event recorded; the remap applies at the next GPU reset"),
    (64, gettext_noop("XID 64: ECC page retirement or row remap failed"), "replace",
     "recording the remap failed; the GPU needs service"),
    (74, gettext_noop("XID 74: NVLink error"), "revalidate",
     "NVLink error; reset the GPU, check the links (the quick profile reads them)"),
    (79, gettext_noop("XID 79: GPU has fallen off the bus"), "replace",
     "the GPU is no longer reachable; drain the node, service the GPU"),
    (94, gettext_noop("XID 94: contained ECC error"), "notify",
     "contained uncorrectable error; only the affected application must restart"),
    (95, gettext_noop("XID 95: uncontained ECC error"), "revalidate",
     "uncontained uncorrectable error; every application on the GPU is affected, reset it"),
    (119, gettext_noop("XID 119: GSP RPC timeout"), "revalidate",
     "the GPU System Processor stopped answering; reset the GPU, service it if it recurs"),
    (120, gettext_noop("XID 120: GSP error"), "revalidate",
     "the GPU System Processor reported an error; reset the GPU"),
)  # fmt: skip

#: The other rules: (code, title, action, metric, expression, window in scrapes, source).
#: In the expression ``{m}`` is the metric with the node selector; other series name
#: their selector with ``S``.
SERIES_RULES: tuple[tuple[str, str, Action, str, str, int, str], ...] = (
    ("ecc_uncorrectable", gettext_noop("Uncorrectable ECC errors"), "replace",
     m.ECC_DBE, "increase({m}[15m]) > 0", 0,
     "NVIDIA GPU Memory Error Management: volatile double-bit (uncorrectable) errors mean "
     "defective memory; dcgm field DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
    ("ecc_correctable_storm", gettext_noop("Many correctable ECC errors"), "notify",
     m.ECC_SBE, "increase({m}[1h]) > 100", 0,
     "NVIDIA GPU Memory Error Management: single-bit errors are corrected; a storm of "
     "them foretells a remap. One correctable error is noise."),
    ("row_remap_failure", gettext_noop("Row remapping failed"), "replace",
     m.ROW_REMAP_FAILURE, "{m} > 0", 0,
     "NVIDIA GPU Memory Error Management, row remapping: a failed remap means the GPU "
     "needs service (RMA); DCGM_FI_DEV_ROW_REMAP_FAILURE"),
    ("gpu_missing", gettext_noop("A GPU is missing"), "replace",
     m.POWER, "(count by (node) ({m} offset {w}) - count by (node) ({m})) > 0", 4,
     "dcgm-exporter stops listing a GPU that left the bus (see XID 79); the node answers "
     "with fewer GPUs than it had"),
    ("nvlink_down", gettext_noop("NVLink carries no traffic while the GPU computes"),
     "revalidate", m.NVLINK_BANDWIDTH,
     "min_over_time(((rate({m}[{r}]) == bool 0) * on (node, gpu) ("
     + m.SM_ACTIVE + S + " > bool 0.5))[{w}:{step}]) == 1", 8,
     "DCGM NVLink counters (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL): a busy NVLink GPU whose "
     "links carry nothing has a link down; XID 74 is its kernel twin"),
    ("ib_port_down", gettext_noop("An InfiniBand port is down"), "replace",
     m.IB_STATE, "max_over_time({m}[{w}]) < 4", 8,
     "sysfs-class-infiniband: port state 4 is ACTIVE; a rail port down for the whole "
     "window cuts the node off its rail (node_infiniband_state_id)"),
    ("ib_link_flapping", gettext_noop("An InfiniBand link is flapping"), "revalidate",
     m.IB_LINK_DOWNED, "increase({m}[30m]) >= 3", 0,
     "sysfs-class-infiniband link_downed: the link failed to recover and went down; "
     "three times in 30 minutes is a bad cable or port, once is noise"),
    ("hw_slowdown", gettext_noop("Hardware slowdown (clocks held down)"), "revalidate",
     m.CLOCK_EVENTS, "min_over_time((floor({m} / 8) % 2)[{w}:{step}]) == 1", 20,
     "DCGM clock event reasons: HW_SLOWDOWN (0x8) held for the whole window (power brake, "
     "failing fan or PSU); a moment of it is noise"),
    ("thermal_throttle", gettext_noop("Thermal throttling"), "notify",
     m.CLOCK_EVENTS, "min_over_time((floor({m} / 64) % 2)[{w}:{step}]) == 1", 20,
     "DCGM clock event reasons: HW_THERMAL (0x40) held for the whole window; cooling, not "
     "the GPU, is the first suspect"),
    ("node_silent", gettext_noop("The node stopped answering"), "replace",
     "up", "max_over_time({m}[{w}]) == 0", 8,
     "Prometheus up: every scrape of the window failed (one missed scrape is noise; eight "
     "in a row, two minutes at 15 s, is a node down)"),
)  # fmt: skip


def _xid(code: int, title: str, action: Action, why: str) -> HealthRule:
    return HealthRule(
        code=f"xid_{code}",
        title=title,
        expr=m.XID + S + f" == {code}",
        metric=m.XID,
        action=action,
        window_scrapes=0,
        source=f"{XID_CATALOGUE}: XID {code}, {why}",
    )


def _series(
    code: str, title: str, action: Action, metric: str, expr: str, window: int, source: str
) -> HealthRule:
    return HealthRule(
        code=code,
        title=title,
        expr=expr.replace("{m}", metric + S),
        metric=metric,
        action=action,
        window_scrapes=window,
        source=source,
    )


RULES: tuple[HealthRule, ...] = tuple(_xid(*row) for row in XID_CLASSES) + tuple(
    _series(*row) for row in SERIES_RULES
)

RULES_BY_CODE: dict[str, HealthRule] = {r.code: r for r in RULES}
