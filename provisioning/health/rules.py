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


RULES: tuple[HealthRule, ...] = (
    _xid(
        48,
        gettext_noop("XID 48: double-bit ECC error"),
        "revalidate",
        "double bit ECC error; reset the GPU, service it if it recurs",
    ),
    _xid(
        63,
        gettext_noop("XID 63: ECC page retirement or row remap recorded"),
        "notify",
        "row-remapping event recorded; the remap applies at the next GPU reset",
    ),
    _xid(
        64,
        gettext_noop("XID 64: ECC page retirement or row remap failed"),
        "replace",
        "recording the remap failed; the GPU needs service",
    ),
    _xid(
        74,
        gettext_noop("XID 74: NVLink error"),
        "revalidate",
        "NVLink error; reset the GPU, check the links (the quick profile reads them)",
    ),
    _xid(
        79,
        gettext_noop("XID 79: GPU has fallen off the bus"),
        "replace",
        "the GPU is no longer reachable; drain the node, service the GPU",
    ),
    _xid(
        94,
        gettext_noop("XID 94: contained ECC error"),
        "notify",
        "contained uncorrectable error; only the affected application must restart",
    ),
    _xid(
        95,
        gettext_noop("XID 95: uncontained ECC error"),
        "revalidate",
        "uncontained uncorrectable error; every application on the GPU is affected, reset it",
    ),
    _xid(
        119,
        gettext_noop("XID 119: GSP RPC timeout"),
        "revalidate",
        "the GPU System Processor stopped answering; reset the GPU, service it if it recurs",
    ),
    _xid(
        120,
        gettext_noop("XID 120: GSP error"),
        "revalidate",
        "the GPU System Processor reported an error; reset the GPU",
    ),
    HealthRule(
        code="ecc_uncorrectable",
        title=gettext_noop("Uncorrectable ECC errors"),
        expr="increase(" + m.ECC_DBE + S + "[15m]) > 0",
        metric=m.ECC_DBE,
        action="replace",
        window_scrapes=0,
        source="NVIDIA GPU Memory Error Management: volatile double-bit (uncorrectable) "
        "errors mean defective memory; dcgm field DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    ),
    HealthRule(
        code="ecc_correctable_storm",
        title=gettext_noop("Many correctable ECC errors"),
        expr="increase(" + m.ECC_SBE + S + "[1h]) > 100",
        metric=m.ECC_SBE,
        action="notify",
        window_scrapes=0,
        source="NVIDIA GPU Memory Error Management: single-bit errors are corrected; a "
        "storm of them foretells a remap. One correctable error is noise.",
    ),
    HealthRule(
        code="row_remap_failure",
        title=gettext_noop("Row remapping failed"),
        expr=m.ROW_REMAP_FAILURE + S + " > 0",
        metric=m.ROW_REMAP_FAILURE,
        action="replace",
        window_scrapes=0,
        source="NVIDIA GPU Memory Error Management, row remapping: a failed remap means "
        "the GPU needs service (RMA); DCGM_FI_DEV_ROW_REMAP_FAILURE",
    ),
    HealthRule(
        code="gpu_missing",
        title=gettext_noop("A GPU is missing"),
        expr="(count by (node) (" + m.POWER + S + " offset {w}) "
        "- count by (node) (" + m.POWER + S + ")) > 0",
        metric=m.POWER,
        action="replace",
        window_scrapes=4,
        source="dcgm-exporter stops listing a GPU that left the bus (see XID 79); the "
        "node answers with fewer GPUs than it had",
    ),
    HealthRule(
        code="nvlink_down",
        title=gettext_noop("NVLink carries no traffic while the GPU computes"),
        expr="min_over_time(((rate(" + m.NVLINK_BANDWIDTH + S + "[{r}]) == bool 0) "
        "* on (node, gpu) (" + m.SM_ACTIVE + S + " > bool 0.5))[{w}:{step}]) == 1",
        metric=m.NVLINK_BANDWIDTH,
        action="revalidate",
        window_scrapes=8,
        source="DCGM NVLink counters (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL): a busy "
        "NVLink GPU whose links carry nothing has a link down; XID 74 is its kernel twin",
    ),
    HealthRule(
        code="ib_port_down",
        title=gettext_noop("An InfiniBand port is down"),
        expr="max_over_time(" + m.IB_STATE + S + "[{w}]) < 4",
        metric=m.IB_STATE,
        action="replace",
        window_scrapes=8,
        source="sysfs-class-infiniband: port state 4 is ACTIVE; a rail port down for the "
        "whole window cuts the node off its rail (node_infiniband_state_id)",
    ),
    HealthRule(
        code="ib_link_flapping",
        title=gettext_noop("An InfiniBand link is flapping"),
        expr="increase(" + m.IB_LINK_DOWNED + S + "[30m]) >= 3",
        metric=m.IB_LINK_DOWNED,
        action="revalidate",
        window_scrapes=0,
        source="sysfs-class-infiniband link_downed: the link failed to recover and went "
        "down; three times in 30 minutes is a bad cable or port, once is noise",
    ),
    HealthRule(
        code="hw_slowdown",
        title=gettext_noop("Hardware slowdown (clocks held down)"),
        expr="min_over_time((floor(" + m.CLOCK_EVENTS + S + " / 8) % 2)[{w}:{step}]) == 1",
        metric=m.CLOCK_EVENTS,
        action="revalidate",
        window_scrapes=20,
        source="DCGM clock event reasons: HW_SLOWDOWN (0x8) held for the whole window "
        "(power brake, failing fan or PSU); a moment of it is noise",
    ),
    HealthRule(
        code="thermal_throttle",
        title=gettext_noop("Thermal throttling"),
        expr="min_over_time((floor(" + m.CLOCK_EVENTS + S + " / 64) % 2)[{w}:{step}]) == 1",
        metric=m.CLOCK_EVENTS,
        action="notify",
        window_scrapes=20,
        source="DCGM clock event reasons: HW_THERMAL (0x40) held for the whole window; "
        "cooling, not the GPU, is the first suspect",
    ),
    HealthRule(
        code="node_silent",
        title=gettext_noop("The node stopped answering"),
        expr="max_over_time(up" + S + "[{w}]) == 0",
        metric="up",
        action="replace",
        window_scrapes=8,
        source="Prometheus up: every scrape of the window failed (one missed scrape is "
        "noise; eight in a row, two minutes at 15 s, is a node down)",
    ),
)

RULES_BY_CODE: dict[str, HealthRule] = {r.code: r for r in RULES}
